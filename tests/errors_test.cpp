// Every error class, with the text a user needs: the shapes, the node and its scope, the names
// the session knows, the sizes, the dtypes, the bad index.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <typeinfo>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ShapeErrors, MatmulInnerDimNamesShapesAndScope) {
  Graph g;
  Tensor a = g.input("a", {2, 3, 4});
  Tensor b = g.parameter("w", {5, 6});
  std::string msg;
  {
    auto scope = g.scope("blocks.3.attn.q_proj");
    msg = message_of<ShapeError>([&] { matmul(a, b); });
  }
  EXPECT_THAT(msg, StartsWith("meganeura: "));
  EXPECT_THAT(msg,
              AllOf(HasSubstr("matmul"), HasSubstr("[2,3,4]"), HasSubstr("[5,6]"), HasSubstr("blocks.3.attn.q_proj")));
  // Outside the scope the same mistake no longer quotes it.
  const std::string outside = message_of<ShapeError>([&] { matmul(a, b, {.transpose_b = true}); });
  EXPECT_THAT(outside, Not(HasSubstr("blocks.3")));
  EXPECT_THAT(outside, AllOf(HasSubstr("[2,3,4]"), HasSubstr("[5,6]")));
}

TEST(ShapeErrors, NestedScopesAreQuoted) {
  Graph g;
  Tensor a = g.input("a", {4, 4});
  Tensor b = g.input("b", {3});
  auto outer = g.scope("blocks.3");
  auto inner = g.scope("mlp");
  const std::string msg = message_of<ShapeError>([&] { add(a, b); });
  EXPECT_THAT(msg, AllOf(HasSubstr("blocks.3"), HasSubstr("mlp")));
}

TEST(ShapeErrors, BroadcastMismatchNamesBothShapes) {
  Graph g;
  Tensor a = g.input("a", {2, 3, 5});
  Tensor b = g.input("b", {4, 5});
  const std::string msg = message_of<ShapeError>([&] { mul(a, b); });
  EXPECT_THAT(msg, AllOf(StartsWith("meganeura: "), HasSubstr("mul"), HasSubstr("[2,3,5]"), HasSubstr("[4,5]")));
  EXPECT_THAT(message_of<ShapeError>([&] { where(gt(a, a), a, b); }), HasSubstr("[4,5]"));
  EXPECT_THAT(message_of<ShapeError>([&] { broadcast_to(b, {3, 5}); }), AllOf(HasSubstr("[4,5]"), HasSubstr("[3,5]")));
}

TEST(ShapeErrors, BadAxis) {
  Graph g;
  Tensor x = g.input("x", {3, 4});
  EXPECT_THAT(message_of<ShapeError>([&] { softmax(x, 2); }), AllOf(HasSubstr("axis"), HasSubstr("2")));
  EXPECT_THAT(message_of<ShapeError>([&] { softmax(x, -3); }), HasSubstr("-3"));
  EXPECT_THAT(message_of<ShapeError>([&] { sum(x, {5}); }), HasSubstr("5"));
  EXPECT_THAT(message_of<ShapeError>([&] { argmax(x, 7); }), HasSubstr("7"));
  EXPECT_THAT(message_of<ShapeError>([&] { slice(x, 4, 0, 1); }), HasSubstr("4"));
  EXPECT_THAT(message_of<ShapeError>([&] { concat({x, x}, 3); }), HasSubstr("3"));
  EXPECT_THAT(message_of<ShapeError>([&] { permute(x, {0, 0}); }), HasSubstr("permut"));
  EXPECT_THAT(message_of<ShapeError>([&] { gather(x, g.input("i", {2}, i32), 2); }), HasSubstr("2"));
}

TEST(ShapeErrors, RepeatedReduceAxisNamesTheAxis) {
  Graph g;
  Tensor x = g.input("x", {3, 4});
  // -2 and 0 are the same axis; the message should say which (as permute's does).
  EXPECT_THAT(message_of<ShapeError>([&] { sum(x, {0, -2}); }), AllOf(HasSubstr("axis"), HasSubstr("0")));
}

TEST(ShapeErrors, BadReshapeNamesShapes) {
  Graph g;
  Tensor x = g.input("x", {2, 3, 5});
  EXPECT_THAT(message_of<ShapeError>([&] { reshape(x, {4, 7}); }), AllOf(HasSubstr("[2,3,5]"), HasSubstr("[4,7]")));
  EXPECT_THAT(message_of<ShapeError>([&] { reshape(x, {-1, 7}); }), HasSubstr("[2,3,5]"));
  EXPECT_THAT(message_of<ShapeError>([&] { reshape(x, {-1, -1}); }), HasSubstr("-1"));
}

TEST(ShapeErrors, OtherShapeRules) {
  Graph g;
  Tensor x = g.input("x", {3, 4});
  Tensor lab = g.input("lab", {2}, i32);
  EXPECT_THAT(message_of<ShapeError>([&] { cross_entropy(x, lab); }), AllOf(HasSubstr("[3,4]"), HasSubstr("[2]")));
  EXPECT_THAT(message_of<ShapeError>([&] { mse_loss(x, g.input("t", {4, 3})); }), HasSubstr("[4,3]"));
  EXPECT_THAT(message_of<ShapeError>([&] { layer_norm(x, g.parameter("w", {3})); }), HasSubstr("[3]"));
  EXPECT_THAT(message_of<ShapeError>([&] { concat({x, g.input("y", {2, 5})}, 0); }), HasSubstr("[2,5]"));
  EXPECT_THAT(message_of<ShapeError>([&] { matmul(g.input("v", {4}), x); }), HasSubstr("[4]"));
}

class SessionErrors : public ::testing::Test {
 protected:
  SessionErrors() {
    x = g.input("x", {2, 3});
    ids = g.input("ids", {4}, i32);
    w = g.parameter("w", {3});
    g.output("y", x * w);
    g.output("n", one_hot(ids, 5));
  }
  Graph g;
  Tensor x, ids, w;
};

TEST_F(SessionErrors, UnknownNamesListKnownNames) {
  Session s = build_inference_session(g);
  const std::vector<float> six(6, 1.0f), three(3, 1.0f);
  const std::string in = message_of<NameError>([&] { s.set_input("z", std::span<const float>(six)); });
  EXPECT_THAT(in, AllOf(StartsWith("meganeura: "), HasSubstr("z"), HasSubstr("x"), HasSubstr("ids")));
  const std::string par = message_of<NameError>([&] { s.set_parameter("weight", std::span<const float>(three)); });
  EXPECT_THAT(par, AllOf(HasSubstr("weight"), HasSubstr("w")));
  const std::string out = message_of<NameError>([&] { s.read_output("logits"); });
  EXPECT_THAT(out, AllOf(HasSubstr("logits"), HasSubstr("y"), HasSubstr("n")));
  EXPECT_THAT(message_of<NameError>([&] { s.read_parameter("v"); }), HasSubstr("w"));
}

TEST_F(SessionErrors, WrongElementCount) {
  Session s = build_inference_session(g);
  const std::vector<float> five(5, 1.0f), four(4, 1.0f);
  EXPECT_THAT(message_of<SizeError>([&] { s.set_input("x", std::span<const float>(five)); }),
              AllOf(StartsWith("meganeura: "), HasSubstr("x"), HasSubstr("5"), HasSubstr("6")));
  EXPECT_THAT(message_of<SizeError>([&] { s.set_parameter("w", std::span<const float>(four)); }),
              AllOf(HasSubstr("w"), HasSubstr("4"), HasSubstr("3")));
  EXPECT_THAT(message_of<SizeError>([&] {
                s.set_input("ids", host_i32({3}, {1, 2, 3}));
              }),
              AllOf(HasSubstr("ids"), HasSubstr("3"), HasSubstr("4")));
}

TEST_F(SessionErrors, WrongHostDtype) {
  Session s = build_inference_session(g);
  // f32 data into the i32 input.
  EXPECT_THAT(message_of<DTypeError>([&] {
                s.set_input("ids", host_f32({4}, {0, 1, 2, 3}));
              }),
              AllOf(StartsWith("meganeura: "), HasSubstr("ids"), HasSubstr("i32"), HasSubstr("f32")));
  const std::vector<float> four(4, 1.0f);
  EXPECT_THAT(message_of<DTypeError>([&] { s.set_input("ids", std::span<const float>(four)); }), HasSubstr("i32"));
  EXPECT_THAT(message_of<DTypeError>([&] {
                s.set_input("x", host_i32({2, 3}, {0, 1, 2, 3, 4, 5}));
              }),
              AllOf(HasSubstr("x"), HasSubstr("f32"), HasSubstr("i32")));
}

// data<T>() with the wrong T says which T was asked for, which dtype the tensor holds, and how
// to read it.
TEST(DTypeErrors, HostTensorDataNamesTheTypeAskedForAndTheDtypeHeld) {
  const HostTensor ints = host_i32({2, 2}, {1, 2, 3, 4});
  EXPECT_THAT(message_of<DTypeError>([&] { ints.data<float>(); }),
              AllOf(StartsWith("meganeura: "), HasSubstr("data<float>()"), HasSubstr("holds i32"),
                    HasSubstr("data<int32_t>()"), HasSubstr("[2,2]")));
  const HostTensor floats = host_f32({3}, {1, 2, 3});
  EXPECT_THAT(message_of<DTypeError>([&] { floats.data<uint16_t>(); }),
              AllOf(HasSubstr("data<uint16_t>()"), HasSubstr("holds f32"), HasSubstr("data<float>()")));
  EXPECT_THAT(message_of<DTypeError>([&] { floats.data<uint32_t>(); }), HasSubstr("data<uint32_t>()"));
}

// A Trainer whose batch_size is not the graph's batch dimension says so with both numbers and
// the input, when it is made rather than at the first step.
TEST(TrainerErrors, BatchSizeOtherThanTheGraphsIsNamed) {
  Graph g;
  Tensor x = g.input("x", {8, 3});
  Tensor y = g.input("y", {8}, i32);
  Tensor logits = matmul(x, g.parameter("w", {3, 2}));
  g.output("logits", logits);
  Session s = build_session(g, cross_entropy(logits, y), {});
  TrainerOptions options;
  options.batch_size = 16;
  options.progress = false;
  EXPECT_THAT(message_of<SizeError>([&] { Trainer t(s, options); }),
              AllOf(StartsWith("meganeura: "), HasSubstr("batch_size is 16"), HasSubstr("batch dimension is 8"),
                    HasSubstr("input \"x\""), HasSubstr("[8,3]")));
  options.batch_size = 8;
  EXPECT_NO_THROW({ Trainer t(s, options); });
}

TEST(DTypeErrors, OpsRejectIntegerOperands) {
  Graph g;
  Tensor i = g.input("i", {3, 3}, i32);
  Tensor f = g.input("f", {3, 3});
  EXPECT_THAT(message_of<DTypeError>([&] { exp(i); }),
              AllOf(StartsWith("meganeura: "), HasSubstr("exp"), HasSubstr("i32")));
  EXPECT_THAT(message_of<DTypeError>([&] { matmul(i, i); }), AllOf(HasSubstr("matmul"), HasSubstr("i32")));
  EXPECT_THAT(message_of<DTypeError>([&] { matmul(f, i); }), HasSubstr("i32"));
  EXPECT_THAT(message_of<DTypeError>([&] { gather(f, f); }), HasSubstr("f32"));  // float indices
  EXPECT_THAT(message_of<DTypeError>([&] { cross_entropy(f, g.input("l", {3})); }), HasSubstr("f32"));
  EXPECT_THAT(message_of<DTypeError>([&] { softmax(i); }), HasSubstr("i32"));
}

TEST(RuntimeDataErrors, GatherIndexOutOfRangeNamesNodeAndIndex) {
  Graph g;
  Tensor table = g.parameter("table", {67, 5});
  Tensor ids = g.input("ids", {4}, i32);
  Tensor y;
  {
    auto scope = g.scope("model.embed_tokens");
    y = embedding(table, ids);
  }
  g.output("y", y);
  Session s = build_inference_session(g);
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  const auto tv = rng.floats(67 * 5, -1, 1);
  s.set_parameter("table", std::span<const float>(tv));
  s.set_input("ids", host_i32({4}, {1, 70, 2, 3}));
  const std::string msg = message_of<RuntimeDataError>([&] { s.step(); });
  EXPECT_THAT(msg, AllOf(StartsWith("meganeura: "), HasSubstr("70"), HasSubstr("67"), HasSubstr("model.embed_tokens")));
  // Below -dim wraps once and is still out of range.
  s.set_input("ids", host_i32({4}, {0, 0, -68, 0}));
  EXPECT_THAT(message_of<RuntimeDataError>([&] { s.step(); }), HasSubstr("-68"));
  // The session recovers: valid indices run and give the right rows.
  s.set_input("ids", host_i32({4}, {66, -1, 0, 3}));
  ASSERT_NO_THROW(s.step());
  const auto got = decode(s.read_output("y"));
  const int rows[4] = {66, 66, 0, 3};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c) EXPECT_EQ(got[r * 5 + c], tv[rows[r] * 5 + c]) << r << "," << c;
}

TEST(NameErrors, DuplicateNamesAreRejected) {
  Graph g;
  g.input("x", {2});
  EXPECT_THAT(message_of<Error>([&] { g.input("x", {3}); }), AllOf(StartsWith("meganeura: "), HasSubstr("x")));
  g.parameter("w", {2});
  EXPECT_THAT(message_of<Error>([&] { g.parameter("w", {2}); }), HasSubstr("w"));
  EXPECT_THAT(message_of<Error>([&] { g.input("w", {2}); }), HasSubstr("w"));
}

TEST(Errors, EveryErrorIsAMeganeuraError) {
  Graph g;
  Tensor a = g.input("a", {2, 3});
  try {
    matmul(a, a);
    ADD_FAILURE() << "no throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), StartsWith("meganeura: "));
  }
}

}  // namespace
}  // namespace mntest
