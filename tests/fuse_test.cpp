// Fusion of elementwise chains into generated kernels (src/lower/fuse_elementwise.cpp): which
// chains become one dispatch, which do not, and that the fused session computes what the
// unfused one does (the same math functions: equal values) and what the double reference does.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "meganeura/meganeura.hpp"
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

struct Fused {
  Session fused, plain;
  std::string listing;  // of the fused session
  int generated = 0;    // generated (fused) dispatches per step
};

// Builds the case twice — optimizer and fusion on, and off — runs both on the same inputs, and
// checks every output: against the unfused session exactly (the fused kernel calls the very
// functions the Elementwise kernel does, and rounds each op the same way) and against the
// double reference at the case's tolerance.
Fused run_both(CaseBuilder& b) {
  Fused r{build_inference_session(b.g), build_inference_session(b.g, {.optimize = false})};
  feed(r.fused, b);
  feed(r.plain, b);
  r.fused.step();
  r.plain.step();
  check_outputs(r.fused, b);
  for (const auto& [name, id] : b.g.outputs())
    EXPECT_TRUE(
        compare(from_host(r.plain.read_output(name)), r.fused.read_output(name), 0, "fused vs unfused '" + name + "'"));
  r.listing = r.fused.listing();
  r.generated = count_lines(r.listing, "dispatch generated");
  EXPECT_EQ(count_lines(r.plain.listing(), "dispatch generated"), 0) << "no fusion with the optimizer off";
  return r;
}

// Each test builds its graph in `b`; failures name the seed of its random inputs.
class Fusion : public ::testing::Test {
 protected:
  Rng rng;
  CaseBuilder b{rng};
  ::testing::ScopedTrace seed{__FILE__, __LINE__, seed_note(rng.seed())};
};

TEST_F(Fusion, ChainBecomesOneDispatch) {
  Tensor x = b.input("x", {37, 53}, -3, 3), y = b.input("y", {37, 53});
  b.output("out", exp(-abs(x)) * y + 0.5f);
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 1) << r.listing;
  EXPECT_EQ(r.fused.stats().dispatches, 1u) << r.listing;
  EXPECT_EQ(r.plain.stats().dispatches, 5u);
  EXPECT_NE(r.listing.find("fused[abs,neg,exp,mul,add]"), std::string::npos) << r.listing;
}

// sum/max of |x| that nothing else reads: one reduction mapping abs (no |x| written and read back).
TEST_F(Fusion, ReductionsOfAbsAreOneDispatch) {
  Tensor x = b.input("x", {5, 4100}, -2, 1), y = b.input("y", {7, 33}, -2, 1);
  b.output("s", sum(abs(x), {-1}));
  b.output("m", max(abs(y), {0}));
  Fused r = run_both(b);
  EXPECT_EQ(r.fused.stats().dispatches, 2u) << r.listing;
  EXPECT_EQ(count_lines(r.listing, "dispatch reduce"), 2) << r.listing;
  EXPECT_EQ(r.plain.stats().dispatches, 4u);
}

TEST_F(Fusion, BroadcastBiasIsAnInput) {
  Tensor x = b.input("x", {3, 5, 7}, -3, 3), bias = b.param("bias", {7}), scale = b.input("scale", {5, 1});
  b.output("out", gelu(x * scale + bias) - tanh(bias));  // tanh(bias) is [7]: its own kernel, read broadcast
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 1) << r.listing;
  EXPECT_EQ(r.fused.stats().dispatches, 2u) << r.listing;
}

TEST_F(Fusion, CompareAndWhere) {
  Tensor x = b.input_small_ints("x", {31, 9}, -3, 3), y = b.input_small_ints("y", {31, 9}, -3, 3);
  Tensor mask = gt(x, y);
  b.output("out", where(mask, x * y, exp(x) - cast(le(x, y * 2.0f), f32)) + cast(mask, f32));
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 1) << r.listing;
  EXPECT_EQ(r.fused.stats().dispatches, 1u) << r.listing;
}

TEST_F(Fusion, IntegerDtypes) {
  // Arithmetic is f32; integers go through compares, where and casts.
  Tensor a = b.input_ints("a", {5, 40}, -50, 50), c = b.input_ints("c", {40}, -50, 50);
  Tensor u = b.input_ints("u", {5, 40}, 0, 9, u32), x = b.input("x", {5, 40}, -2, 2);
  b.output("out", cast(where(lt(a, c), a, c), f32) * x);  // i32 min through a compare and a where
  Tensor t = cast(x * 10.0f, i32);                        // truncates toward zero
  b.output("ints", where(ge(t, a), t, a));
  // Non-negative into u32: the reference does not wrap a negative i32 as the kernels do.
  Tensor m = cast(cast(abs(x) * 4.0f, i32), u32);
  b.output("uints", where(lt(u, m), u, m));
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 3) << r.listing;
  EXPECT_EQ(r.fused.stats().dispatches, 3u) << r.listing;
}

TEST_F(Fusion, RankFourOddSizes) {
  // Members have the root's shape; the inputs z and w broadcast into it from both sides.
  Tensor x = b.input("x", {3, 5, 7, 11}), z = b.input("z", {5, 1, 11}, -2, 2), w = b.input("w", {3, 1, 7, 1}, 1, 2);
  b.output("out", sigmoid(x) * z - x / (abs(x) + w) + pow(x, 3.0f) * w);
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 1) << r.listing;
  EXPECT_EQ(r.fused.stats().dispatches, 1u) << r.listing;
}

TEST_F(Fusion, IntermediateThatIsAnOutputIsKept) {
  Tensor x = b.input("x", {19, 23});
  Tensor h = exp(x) * 0.5f;
  b.output("h", h);
  b.output("out", h * h + sin(x));
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 2) << r.listing;  // [exp, mul] writes h; [mul, sin, add] reads it
  EXPECT_EQ(r.fused.stats().dispatches, 2u) << r.listing;
}

TEST_F(Fusion, SmallerShapesAreNotMembers) {
  // tanh(z) is [5,1,11]: computing it inside the [3,5,7,11] kernel would repeat it 21 times, so it
  // stays a kernel of its own, and the fused kernel reads its result broadcast.
  Tensor x = b.input("x", {3, 5, 7, 11}), z = b.input("z", {5, 1, 11}, -2, 2);
  b.output("out", sigmoid(x) * tanh(z) - x);
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 1) << r.listing;
  EXPECT_EQ(r.fused.stats().dispatches, 2u) << r.listing;
}

TEST_F(Fusion, IntermediateReadElsewhereIsKept) {
  Tensor x = b.input("x", {17, 29});
  Tensor h = cos(x) + x;
  b.output("out", sum(h, {1}) + 1.0f);
  b.output("scaled", h * 3.0f);
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 1) << r.listing;  // [cos, add] feeds the sum and the mul: it is stored
}

TEST_F(Fusion, SharedSubexpression) {
  Tensor x = b.input("x", {41, 13}), y = b.input("y", {13});
  Tensor t = sin(x) + y;
  b.output("out", t * t - t / 2.0f);
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 1) << r.listing;
  EXPECT_EQ(r.fused.stats().dispatches, 1u) << r.listing;
  EXPECT_NE(r.listing.find("fused[sin,add,mul,div,sub]"), std::string::npos) << r.listing;
}

TEST_F(Fusion, ManyInputsSplitIntoGroups) {
  Tensor acc = b.input("x0", {8, 9});
  for (int i = 1; i < 12; ++i) acc = acc * 0.75f + b.input(std::string("x").append(std::to_string(i)), {8, 9});
  b.output("out", acc);
  Fused r = run_both(b);
  EXPECT_GE(r.generated, 2) << r.listing;  // 12 inputs and constants: more than one kernel may read
}

TEST_F(Fusion, ViewsAreReadThrough) {
  Tensor x = b.input("x", {6, 20}), y = b.input("y", {4, 30});
  b.output("out", exp(reshape(x, {4, 30})) * 2.0f + relu(y));  // the reshape is a view: an input
  Fused r = run_both(b);
  EXPECT_EQ(r.generated, 1) << r.listing;
  EXPECT_EQ(r.fused.stats().dispatches, 1u) << r.listing;
}

TEST_F(Fusion, OffWithTheEnvironmentSwitch) {
  Tensor x = b.input("x", {10, 10});
  b.output("out", exp(x) * 2.0f + 1.0f);
  ::setenv("MEGANEURA_FUSE_ELEMENTWISE", "0", 1);
  Session s = build_inference_session(b.g);
  ::unsetenv("MEGANEURA_FUSE_ELEMENTWISE");
  EXPECT_EQ(count_lines(s.listing(), "dispatch generated"), 0) << s.listing();
  feed(s, b);
  s.step();
  check_outputs(s, b);
}

TEST_F(Fusion, TrainingGradientsMatchUnfused) {
  Tensor x = b.input("x", {16, 12}), w = b.param("w", {12}), c = b.param("c", {12});
  Tensor h = x * w + c;
  Tensor loss = mean(silu(h) * tanh(h) - 0.25f * h * h);
  auto grads = [&](bool optimize) {
    TrainConfig cfg;
    cfg.optimizer = SGD{.lr = 0.0f};
    cfg.optimize = optimize;
    Session s = build_session(b.g, loss, cfg);
    feed(s, b);
    s.step();
    std::string listing = s.listing();
    return std::tuple{s.read_grad("w"), s.read_grad("c"), s.read_loss(), count_lines(listing, "dispatch generated")};
  };
  auto [w1, c1, l1, n1] = grads(true);
  auto [w0, c0, l0, n0] = grads(false);
  EXPECT_GE(n1, 1) << "the backward pass has elementwise chains to fuse";
  EXPECT_EQ(n0, 0);
  EXPECT_TRUE(compare(from_host(w0), w1, 1e-5, "d w"));
  EXPECT_TRUE(compare(from_host(c0), c1, 1e-5, "d c"));
  EXPECT_NEAR(l1, l0, 1e-6 * std::abs(l0));
}

}  // namespace
}  // namespace mntest
