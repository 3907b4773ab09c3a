// Checks of the reference itself against values worked out by hand (or known from PyTorch),
// and of the comparison helper: a reference that is wrong, or a check that cannot fail, would
// make every op test meaningless.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

std::vector<double> run1(Graph& g, Tensor y, const std::map<std::string, HostTensor>& feeds) {
  return evaluate(g, feeds).at(static_cast<size_t>(y.id())).v;
}

TEST(Reference, F16RoundingProbes) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16_bits(1.0f + 0x1p-11f), 0x3c00);      // tie to even: down
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie to even: up
  EXPECT_EQ(f32_to_f16_bits(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16_bits(-1e6f), 0xfc00);
  EXPECT_EQ(f32_to_f16_bits(0x1p-24f), 0x0001);
  EXPECT_EQ(f32_to_f16_bits(0x1p-25f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(f32_to_f16_bits(0x1p-14f - 0x1p-25f), 0x0400);  // rounds up into the smallest normal
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xc000);
  const uint16_t nan = f32_to_f16_bits(NAN);
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  EXPECT_EQ(f16_bits_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_bits_to_f32(0x0001), 0x1p-24f);
  EXPECT_TRUE(std::isinf(f16_bits_to_f32(0x7c00)));
}

TEST(Reference, F16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16_bits(f), h) << std::hex << h;
    // The midpoint to the next half rounds to the even one of the two.
    if ((h & 0x7fff) < 0x7bff) {
      const float next = f16_bits_to_f32(static_cast<uint16_t>(h + 1));
      const float mid = static_cast<float>((static_cast<double>(f) + next) / 2);
      const uint16_t want = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
      ASSERT_EQ(f32_to_f16_bits(mid), want) << std::hex << h;
    }
  }
}

TEST(Reference, Bf16Rounding) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(f32_to_bf16_bits(3.4e38f), 0x7f80);
  EXPECT_EQ(f32_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(bf16_bits_to_f32(0x4049), 3.140625f);
}

TEST(Reference, UnaryKnownValues) {
  Graph g;
  Tensor x = g.input("x", {3});
  std::map<std::string, HostTensor> f{{"x", host_f32({3}, {-1.0f, 0.0f, 1.0f})}};
  auto gl = run1(g, gelu(x), f);
  EXPECT_NEAR(gl[2], 0.8413447460685429, 1e-15);
  EXPECT_NEAR(gl[0], -0.15865525393145707, 1e-15);
  EXPECT_NEAR(run1(g, gelu_tanh(x), f)[2], 0.8411919906082768, 1e-15);
  EXPECT_NEAR(run1(g, silu(x), f)[2], 0.7310585786300049, 1e-15);
  EXPECT_NEAR(run1(g, sigmoid(x), f)[0], 0.2689414213699951, 1e-15);
  EXPECT_EQ(run1(g, pow(x, 3.0f), f)[0], -1.0);
  EXPECT_EQ(run1(g, relu(x), f), (std::vector<double>{0, 0, 1}));
}

TEST(Reference, RowOpsKnownValues) {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Tensor lab = g.input("lab", {2}, i32);
  std::map<std::string, HostTensor> f{{"x", host_f32({2, 3}, {1, 2, 3, 1, 1, 1})}, {"lab", host_i32({2}, {2, -100})}};
  auto sm = run1(g, softmax(x, -1), f);
  EXPECT_NEAR(sm[0], 0.09003057317038046, 1e-15);
  EXPECT_NEAR(sm[2], 0.6652409557748219, 1e-15);
  EXPECT_NEAR(sm[4], 1.0 / 3, 1e-15);
  auto sm0 = run1(g, softmax(x, 0), f);  // columns: softmax(1,1), softmax(2,1), softmax(3,1)
  EXPECT_NEAR(sm0[0], 0.5, 1e-15);
  EXPECT_NEAR(sm0[1], 0.7310585786300049, 1e-15);
  EXPECT_NEAR(run1(g, log_softmax(x, -1), f)[2], -0.40760596444437967, 1e-14);
  EXPECT_NEAR(run1(g, cross_entropy(x, lab), f)[0], 0.40760596444437967, 1e-14);
  auto ln = run1(g, layer_norm(x, {}, {}, 0.0f), f);
  EXPECT_NEAR(ln[0], -std::sqrt(1.5), 1e-12);
  auto rn = run1(g, rms_norm(x, {}, 0.0f), f);
  EXPECT_NEAR(rn[2], 3 / std::sqrt(14.0 / 3), 1e-12);
  EXPECT_EQ(run1(g, argmax(x, 1), f), (std::vector<double>{2, 0}));  // ties: first index
  EXPECT_EQ(run1(g, sum(x, {0}), f), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(run1(g, max(x), f), (std::vector<double>{3}));
  EXPECT_NEAR(run1(g, mean(x, {1}, true), f)[0], 2.0, 1e-15);
}

TEST(Reference, LossesKnownValues) {
  Graph g;
  Tensor p = g.input("p", {4});
  Tensor t = g.input("t", {4});
  std::map<std::string, HostTensor> f{{"p", host_f32({4}, {0.0f, 1.0f, 0.5f, 0.0f})},
                                      {"t", host_f32({4}, {1.0f, 1.0f, 0.0f, 0.0f})}};
  // -log clamped at 100, 0, log 2, 0.
  EXPECT_NEAR(run1(g, binary_cross_entropy(p, t), f)[0], (100 + 0 + std::log(2.0) + 0) / 4, 1e-12);
  // logits 0,1,0.5,0 against targets 1,1,0,0.
  const double e =
      (std::log(2.0) + std::log1p(std::exp(-1.0)) + (0.5 + std::log1p(std::exp(-0.5))) + std::log(2.0)) / 4;
  EXPECT_NEAR(run1(g, binary_cross_entropy_with_logits(p, t), f)[0], e, 1e-12);
  EXPECT_NEAR(run1(g, mse_loss(p, t), f)[0], (1 + 0 + 0.25 + 0) / 4, 1e-15);
}

TEST(Reference, MovementAndIndexKnownValues) {
  Graph g;
  Tensor x = g.input("x", {2, 3});
  Tensor v = g.input("v", {10});
  Tensor idx = g.input("idx", {3}, i32);
  std::map<std::string, HostTensor> f{{"x", host_f32({2, 3}, {0, 1, 2, 3, 4, 5})},
                                      {"v", host_f32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})},
                                      {"idx", host_i32({3}, {-1, 0, 0})}};
  EXPECT_EQ(run1(g, transpose(x), f), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(run1(g, slice(v, 0, -7, -1, 3), f), (std::vector<double>{3, 6}));
  EXPECT_EQ(run1(g, slice(x, 1, 1, 3), f), (std::vector<double>{1, 2, 4, 5}));
  EXPECT_EQ(run1(g, concat({x, x}, 0), f).size(), 12u);
  EXPECT_EQ(run1(g, concat({x, slice(x, 1, 0, 1)}, 1), f), (std::vector<double>{0, 1, 2, 0, 3, 4, 5, 3}));
  EXPECT_EQ(run1(g, gather(x, idx, 0), f), (std::vector<double>{3, 4, 5, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(run1(g, gather(x, idx, 1), f), (std::vector<double>{2, 0, 0, 5, 3, 3}));
  Tensor up = g.input("up", {2, 3});
  f["up"] = host_f32({2, 3}, {1, 1, 1, 1, 1, 1});
  Tensor z = g.input("z", {2, 2});
  f["z"] = host_f32({2, 2}, {0, 0, 0, 0});
  Tensor i2 = g.input("i2", {3}, i32);
  f["i2"] = host_i32({3}, {1, 1, 0});
  EXPECT_EQ(run1(g, scatter_add(z, i2, up, 1), f), (std::vector<double>{1, 2, 1, 2}));
  EXPECT_EQ(run1(g, one_hot(i2, 3), f), (std::vector<double>{0, 1, 0, 0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(run1(g, broadcast_to(slice(x, 0, 0, 1), {3, 3}), f), (std::vector<double>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  Tensor a = g.input("a", {1, 2, 2});
  f["a"] = host_f32({1, 2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(run1(g, matmul(a, x), f), (std::vector<double>{6, 9, 12, 12, 19, 26}));
  EXPECT_EQ(run1(g, matmul(x, x, {.transpose_b = true}), f), (std::vector<double>{5, 14, 14, 50}));
  EXPECT_EQ(run1(g, matmul(x, x, {.transpose_a = true}), f), (std::vector<double>{9, 12, 15, 12, 17, 22, 15, 22, 29}));
}

// The comparison must fail when one element is off by more than the tolerance, and report it.
TEST(Compare, CatchesOneBadElementAndNamesIt) {
  RefTensor ref{{5}, f32, {1, -2, 3, 0.001, 5}};
  std::vector<float> v(ref.v.begin(), ref.v.end());
  EXPECT_TRUE(compare(ref, host_f32({5}, v), 1e-5, "y"));
  const double mean_abs = (1 + 2 + 3 + 0.001 + 5) / 5.0;
  v[3] = static_cast<float>(0.001 + 2e-5 * mean_abs);  // twice the bound of a small element
  auto r = compare(ref, host_f32({5}, v), 1e-5, "y");
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("[3]"), std::string::npos) << r.message();
  v[3] = static_cast<float>(0.001 + 0.5e-5 * mean_abs);  // half the bound passes
  EXPECT_TRUE(compare(ref, host_f32({5}, v), 1e-5, "y"));
  EXPECT_FALSE(compare(ref, host_f32({5, 1}, v), 1e-5, "y"));                            // shape
  EXPECT_FALSE(compare(RefTensor{{2}, i32, {1, 2}}, host_i32({2}, {1, 3}), 1e-5, "i"));  // ints exact
  EXPECT_FALSE(compare(RefTensor{{1}, f32, {NAN}}, host_f32({1}, {0}), 1e-5, "nan"));
  EXPECT_TRUE(compare(RefTensor{{1}, f32, {NAN}}, host_f32({1}, {NAN}), 1e-5, "nan"));
  EXPECT_FALSE(compare(RefTensor{{1}, f32, {1}}, host_i32({1}, {1}), 1e-5, "dtype"));
}

}  // namespace
}  // namespace mntest
