// A Tensor{} (default-constructed, of no graph) or a tensor of another graph, given to any op
// function or nn layer, is a meganeura::Error naming the op and the argument, never a crash. The
// op table is enumerated: an op added later fails OpTable.EveryOpHasACaller until it has a caller
// here, and Graph::add is tried with Tensor{} in every input position of every op.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "graph/op_table.hpp"
#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using Args = std::vector<Tensor>;

// One public function building an op: the name its errors use, its tensor arguments as the
// message places them ("1 (x)"), those that legitimately take Tensor{}, and the call.
struct Caller {
  std::string function;
  std::vector<std::string> places;
  std::function<Tensor(const Args&)> call;
  std::set<size_t> optional = {};
};

Caller unary_caller(std::string name, Tensor (*f)(Tensor)) {
  return {name, {"1 (x)"}, [f](const Args& a) { return f(a[0]); }};
}
Caller binary_caller(std::string name, Tensor (*f)(Tensor, Tensor)) {
  return {name, {"1 (a)", "2 (b)"}, [f](const Args& a) { return f(a[0], a[1]); }};
}
// The operator forms of an arithmetic op: tensor ∘ tensor, tensor ∘ float, float ∘ tensor.
std::vector<Caller> operator_callers(const char* name, Tensor (*f)(Tensor, Tensor), Tensor (*tf)(Tensor, float),
                                     Tensor (*ft)(float, Tensor)) {
  return {binary_caller(name, f),
          {name, {"1 (a)"}, [tf](const Args& a) { return tf(a[0], 2.0f); }},
          {name, {"2 (b)"}, [ft](const Args& a) { return ft(2.0f, a[0]); }}};
}

// Every public function of ops.hpp, by the op it builds.
const std::multimap<Op, Caller>& public_callers() {
  static const std::multimap<Op, Caller> callers = [] {
    std::multimap<Op, Caller> m;
    auto put = [&](Op op, Caller c) { m.emplace(op, std::move(c)); };
    const std::pair<Op, Tensor (*)(Tensor)> unary[] = {{Op::Neg, neg},
                                                       {Op::Abs, abs},
                                                       {Op::Exp, exp},
                                                       {Op::Log, log},
                                                       {Op::Sqrt, sqrt},
                                                       {Op::Rsqrt, rsqrt},
                                                       {Op::Reciprocal, reciprocal},
                                                       {Op::Relu, relu},
                                                       {Op::Gelu, gelu},
                                                       {Op::GeluTanh, gelu_tanh},
                                                       {Op::Silu, silu},
                                                       {Op::Sigmoid, sigmoid},
                                                       {Op::Tanh, tanh},
                                                       {Op::Erf, erf},
                                                       {Op::Sin, sin},
                                                       {Op::Cos, cos}};
    for (auto [op, f] : unary) put(op, unary_caller(std::string(op_name(op)), f));
    put(Op::Neg, {"neg", {"1 (x)"}, [](const Args& a) { return -a[0]; }});
    put(Op::PowScalar, {"pow", {"1 (x)"}, [](const Args& a) { return pow(a[0], 2.0f); }});
    for (Caller c : operator_callers("add", add, operator+, operator+)) m.emplace(Op::Add, c);
    for (Caller c : operator_callers("sub", sub, operator-, operator-)) m.emplace(Op::Sub, c);
    for (Caller c : operator_callers("mul", mul, operator*, operator*)) m.emplace(Op::Mul, c);
    for (Caller c : operator_callers("div", div, operator/, operator/)) m.emplace(Op::Div, c);
    put(Op::Add, binary_caller("add", operator+));
    put(Op::Sub, binary_caller("sub", operator-));
    put(Op::Mul, binary_caller("mul", operator*));
    put(Op::Div, binary_caller("div", operator/));
    const std::pair<Op, Tensor (*)(Tensor, Tensor)> binary[] = {
        {Op::Maximum, maximum}, {Op::Minimum, minimum}, {Op::Equal, eq},   {Op::NotEqual, ne},
        {Op::Less, lt},         {Op::LessEqual, le},    {Op::Greater, gt}, {Op::GreaterEqual, ge}};
    for (auto [op, f] : binary) put(op, binary_caller(std::string(op_name(op)), f));
    put(Op::SwiGlu, {"swiglu", {"1 (g)", "2 (u)"}, [](const Args& a) { return swiglu(a[0], a[1]); }});
    put(Op::Where, {"where", {"1 (cond)", "2 (a)", "3 (b)"}, [](const Args& a) { return where(a[0], a[1], a[2]); }});
    put(Op::Cast, {"cast", {"1 (x)"}, [](const Args& a) { return cast(a[0], i32); }});
    put(Op::MatMul, {"matmul", {"1 (a)", "2 (b)"}, [](const Args& a) { return matmul(a[0], a[1]); }});
    put(Op::Linear, {"linear", {"1 (a)", "2 (b)", "3 (bias)"}, [](const Args& a) { return linear(a[0], a[1], a[2]); }});
    put(Op::Linear, {"linear", {"1 (a)", "2 (b)", "3 (bias)", "4 (residual)"}, [](const Args& a) {
                       return linear(a[0], a[1], a[2], a[3]);
                     }});
    put(Op::MatMulAdd,
        {"matmul_add", {"1 (a)", "2 (b)", "3 (residual)"}, [](const Args& a) { return matmul_add(a[0], a[1], a[2]); }});
    put(Op::Attention,
        {"attention", {"1 (q)", "2 (k)", "3 (v)"}, [](const Args& a) { return attention(a[0], a[1], a[2]); }});
    put(Op::Attention, {"attention", {"1 (q)", "2 (k)", "3 (v)", "4 (position)"}, [](const Args& a) {
                          return attention(a[0], a[1], a[2], a[3]);
                        }});
    put(Op::Sum, {"sum", {"1 (x)"}, [](const Args& a) { return sum(a[0]); }});
    put(Op::Mean, {"mean", {"1 (x)"}, [](const Args& a) { return mean(a[0]); }});
    put(Op::Max, {"max", {"1 (x)"}, [](const Args& a) { return max(a[0]); }});
    put(Op::ArgMax, {"argmax", {"1 (x)"}, [](const Args& a) { return argmax(a[0], -1); }});
    put(Op::Softmax, {"softmax", {"1 (x)"}, [](const Args& a) { return softmax(a[0]); }});
    put(Op::LogSoftmax, {"log_softmax", {"1 (x)"}, [](const Args& a) { return log_softmax(a[0]); }});
    put(Op::RmsNorm, {"rms_norm", {"1 (x)", "2 (weight)"}, [](const Args& a) { return rms_norm(a[0], a[1]); }, {1}});
    put(Op::LayerNorm, {"layer_norm",
                        {"1 (x)", "2 (weight)", "3 (bias)"},
                        [](const Args& a) { return layer_norm(a[0], a[1], a[2]); },
                        {1, 2}});
    put(Op::Rotary,
        {"rotary", {"1 (x)", "2 (cos)", "3 (sin)"}, [](const Args& a) { return rotary(a[0], a[1], a[2]); }});
    put(Op::Reshape, {"reshape", {"1 (x)"}, [](const Args& a) { return reshape(a[0], {4}); }});
    put(Op::Permute, {"permute", {"1 (x)"}, [](const Args& a) { return permute(a[0], {1, 0}); }});
    put(Op::Permute, {"transpose", {"1 (x)"}, [](const Args& a) { return transpose(a[0]); }});
    put(Op::Slice, {"slice", {"1 (x)"}, [](const Args& a) { return slice(a[0], 0, 0, 1); }});
    put(Op::Slice, {"split", {"1 (x)"}, [](const Args& a) { return split(a[0], {1, 1}, 0)[0]; }});
    put(Op::Concat, {"concat", {"1 (xs[0])", "1 (xs[1])", "1 (xs[2])"}, [](const Args& a) { return concat(a, 0); }});
    put(Op::BroadcastTo, {"broadcast_to", {"1 (x)"}, [](const Args& a) { return broadcast_to(a[0], {3, 2, 2}); }});
    put(Op::Gather, {"gather", {"1 (x)", "2 (indices)"}, [](const Args& a) { return gather(a[0], a[1]); }});
    put(Op::Gather, {"embedding", {"1 (table)", "2 (ids)"}, [](const Args& a) { return embedding(a[0], a[1]); }});
    put(Op::ScatterAdd, {"scatter_add", {"1 (base)", "2 (indices)", "3 (updates)"}, [](const Args& a) {
                           return scatter_add(a[0], a[1], a[2]);
                         }});
    put(Op::OneHot, {"one_hot", {"1 (indices)"}, [](const Args& a) { return one_hot(a[0], 3); }});
    put(Op::CacheWrite, {"cache_write", {"1 (state)", "2 (rows)", "3 (position)"}, [](const Args& a) {
                           return cache_write(a[0], a[1], a[2]);
                         }});
    put(Op::Assign, {"assign", {"1 (target)", "2 (value)"}, [](const Args& a) { return assign(a[0], a[1]); }});
    put(Op::CrossEntropy,
        {"cross_entropy", {"1 (logits)", "2 (labels)"}, [](const Args& a) { return cross_entropy(a[0], a[1]); }});
    put(Op::MseLoss,
        {"mse_loss", {"1 (prediction)", "2 (target)"}, [](const Args& a) { return mse_loss(a[0], a[1]); }});
    put(Op::BinaryCrossEntropy, {"binary_cross_entropy", {"1 (probability)", "2 (target)"}, [](const Args& a) {
                                   return binary_cross_entropy(a[0], a[1]);
                                 }});
    put(Op::BinaryCrossEntropyWithLogits, {"binary_cross_entropy_with_logits",
                                           {"1 (logits)", "2 (target)"},
                                           [](const Args& a) { return binary_cross_entropy_with_logits(a[0], a[1]); }});
    return m;
  }();
  return callers;
}

// Ops only autodiff makes (through Graph::add): they have no public function.
bool made_by_autodiff(Op op) {
  static const std::set<Op> ops = {Op::GeluBackward,         Op::GeluTanhBackward,   Op::SiluBackward,
                                   Op::SoftmaxBackward,      Op::LogSoftmaxBackward, Op::RmsNormBackward,
                                   Op::LayerNormBackward,    Op::RmsNormWeightGrad,  Op::LayerNormWeightGrad,
                                   Op::CrossEntropyBackward, Op::SliceBackward,      Op::AttentionBackward};
  return ops.count(op) > 0 || op_kind(op) == OpKind::Train;  // training ops: build_session's update graph
}

// n valid tensors of g (the checks come before any shape rule, so any shape does).
Args valid_args(Graph& g, size_t n) {
  Args a;
  for (size_t i = 0; i < n; ++i) {
    std::string name = "t";  // appended: GCC 12's -O3 misreads "literal" + std::string (-Wrestrict)
    a.push_back(g.input(name += std::to_string(g.size()), {2, 2}));
  }
  return a;
}

// The message `f` throws as a meganeura::Error; a crash would end the test binary, any other
// exception or none is a failure.
template <class F>
std::string error_of(F&& f) {
  return message_of<Error>(std::forward<F>(f));
}

class OpTable : public ::testing::TestWithParam<int> {
 protected:
  Op op() const { return op_at(GetParam()); }
};

TEST_P(OpTable, EveryOpHasACaller) {
  if (op_kind(op()) == OpKind::Leaf) GTEST_SKIP() << "leaves are made by Graph::input, parameter, state, constant";
  const bool has_caller = public_callers().count(op()) > 0;
  EXPECT_TRUE(has_caller || made_by_autodiff(op()))
      << "op " << op_name(op()) << " has no caller in tests/invalid_tensor_test.cpp: add its ops.hpp function to "
      << "public_callers(), or to made_by_autodiff() if only autodiff makes it";
  EXPECT_FALSE(has_caller && made_by_autodiff(op())) << op_name(op()) << " is listed as made only by autodiff";
}

TEST_P(OpTable, GraphAddNamesTheOpAndTheInput) {
  const graph::OpInfo& info = graph::op_info(op());
  Graph g;
  if (info.kind == OpKind::Leaf) {
    EXPECT_THAT(error_of([&] { g.add(op(), {Tensor{}}); }), HasSubstr(std::string(op_name(op()))));
    return;
  }
  for (int p = 0; p < std::min(info.max_inputs, 70); ++p) {  // past 64 inputs every place is checked alike
    Args in = valid_args(g, static_cast<size_t>(std::max(info.min_inputs, p + 1)));
    in[static_cast<size_t>(p)] = Tensor{};
    EXPECT_THAT(error_of([&] { g.add(op(), in); }),
                AllOf(StartsWith("meganeura: "), HasSubstr("(" + std::string(op_name(op())) + ")"),
                      HasSubstr("input " + std::to_string(p + 1) + " is an invalid Tensor")))
        << "input " << p + 1;
  }
}

TEST_P(OpTable, PublicFunctionsNameTheOpAndTheArgument) {
  auto [first, last] = public_callers().equal_range(op());
  for (auto it = first; it != last; ++it) {
    const Caller& c = it->second;
    for (size_t p = 0; p < c.places.size(); ++p) {
      if (c.optional.count(p)) continue;
      Graph g;
      Args args = valid_args(g, c.places.size());
      args[p] = Tensor{};
      EXPECT_THAT(error_of([&] { c.call(args); }),
                  AllOf(StartsWith("meganeura: " + c.function + ": argument " + c.places[p] + " is an invalid Tensor"),
                        HasSubstr("default-constructed")))
          << c.function << ", argument " << p + 1;
    }
  }
}

TEST_P(OpTable, PublicFunctionsRefuseTensorsOfTwoGraphs) {
  auto [first, last] = public_callers().equal_range(op());
  for (auto it = first; it != last; ++it) {
    const Caller& c = it->second;
    for (size_t p = 1; p < c.places.size(); ++p) {
      Graph g, other;
      Args args = valid_args(g, c.places.size());
      args[p] = valid_args(other, 1)[0];
      EXPECT_THAT(error_of([&] { c.call(args); }),
                  AllOf(StartsWith("meganeura: " + c.function + ": arguments " + c.places[0] + " and " + c.places[p]),
                        HasSubstr("different graphs")))
          << c.function << ", argument " << p + 1;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(InvalidTensor, OpTable, ::testing::Range(0, op_count()),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return test_name(std::string(op_name(op_at(i.param))));
                         });

TEST(InvalidTensor, OptionalArgumentsStillTakeTensorNone) {
  Graph g;
  Tensor x = g.input("x", {3, 4}), w = g.parameter("w", {4});
  EXPECT_EQ(rms_norm(x).shape(), (Shape{3, 4}));
  EXPECT_EQ(rms_norm(x, Tensor{}).node().inputs.size(), 1u);
  EXPECT_EQ(layer_norm(x, w, Tensor{}).node().inputs.size(), 2u);
  EXPECT_EQ(layer_norm(x).node().inputs.size(), 1u);
  EXPECT_THAT(error_of([&] { layer_norm(x, Tensor{}, w); }), HasSubstr("bias without a weight"));
}

TEST(InvalidTensor, TensorMethodsAndOutputsThrowInsteadOfCrashing) {
  Graph g;
  const Tensor none;
  EXPECT_FALSE(none.valid());
  EXPECT_THAT(error_of([&] { none.graph(); }), HasSubstr("invalid Tensor"));
  EXPECT_THAT(error_of([&] { none.shape(); }), HasSubstr("invalid Tensor"));
  EXPECT_THAT(error_of([&] { g.output("y", none); }), HasSubstr("output \"y\" is an invalid Tensor"));
}

// Every layer's call, with the message naming the layer and the argument.
TEST(InvalidTensor, LayersNameTheLayerAndTheArgument) {
  Graph g;
  nn::Linear fc(g, "fc1", 8, 4);
  nn::Embedding emb(g, "emb", 10, 8);
  nn::RMSNorm rms(g, "rms", 8);
  nn::LayerNorm ln(g, "ln", 8);
  nn::SwiGLU mlp(g, "mlp", 8, 12);
  nn::Rotary rope(g, {.head_dim = 4, .max_positions = 8});
  nn::MultiHeadAttention attn(g, "attn", {.hidden = 8, .heads = 2, .kv_heads = 1});
  Tensor x = g.input("x", {1, 3, 8}), pos = g.input("pos", {3}, i32);
  const Tensor none;
  const std::vector<std::pair<std::function<void()>, std::string>> calls = {
      {[&] { fc(none); }, "nn::Linear \"fc1\": argument 1 (x)"},
      {[&] { emb(none); }, "nn::Embedding \"emb\": argument 1 (ids)"},
      {[&] { rms(none); }, "nn::RMSNorm \"rms\": argument 1 (x)"},
      {[&] { ln(none); }, "nn::LayerNorm \"ln\": argument 1 (x)"},
      {[&] { mlp(none); }, "nn::SwiGLU \"mlp\": argument 1 (x)"},
      {[&] { rope(none, pos); }, "nn::Rotary: argument 1 (x)"},
      {[&] { rope(x, none); }, "nn::Rotary: argument 2 (positions)"},
      {[&] { attn(none); }, "nn::MultiHeadAttention \"attn\": argument 1 (x)"},
      {[&] { attn(x, none, &rope); }, "nn::MultiHeadAttention \"attn\": argument 2 (positions)"},
      {[&] { attn.cross(none, x); }, "nn::MultiHeadAttention \"attn\": argument 1 (x)"},
      {[&] { attn.cross(x, none); }, "nn::MultiHeadAttention \"attn\": argument 2 (memory)"},
      {[&] { attn.heads_of(none, 2); }, "nn::MultiHeadAttention \"attn\": argument 1 (projected)"},
      {[&] { attn.merge_heads(none); }, "nn::MultiHeadAttention \"attn\": argument 1 (attended)"},
  };
  for (const auto& [call, message] : calls)
    EXPECT_THAT(error_of(call), StartsWith("meganeura: " + message + " is an invalid Tensor")) << message;
  EXPECT_NO_THROW(attn(x));  // positions is optional without a rotary
}

TEST(InvalidTensor, LayersRefuseAnotherGraphAndNoGraph) {
  Graph g, other;
  nn::Linear fc(g, "fc1", 8, 4);
  Tensor x = other.input("x", {2, 8});
  EXPECT_THAT(error_of([&] { fc(x); }), HasSubstr("nn::Linear \"fc1\": called on tensors of another graph"));
  EXPECT_THAT(error_of([&] { nn::Linear{}(x); }), HasSubstr("nn::Linear used before it was constructed"));
  EXPECT_THAT(error_of([&] { nn::RMSNorm{}(x); }), HasSubstr("nn::RMSNorm used before it was constructed"));
  EXPECT_THAT(error_of([&] { nn::Embedding{}(x); }), HasSubstr("nn::Embedding used before it was constructed"));
  EXPECT_THAT(error_of([&] { nn::Rotary{}(x, x); }), HasSubstr("nn::Rotary used before it was constructed"));
}

}  // namespace
}  // namespace mntest
