// A transformer block written from primitives compiles to the same dispatches as the same block
// written with the fused ops (rms_norm, attention, swiglu), forward and forward + backward, and
// both compute the same values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "meganeura/meganeura.hpp"
#include "test_util.hpp"

namespace {

using namespace meganeura;
using mntest::Rng;

constexpr int64_t kBatch = 2, kSeq = 7, kDim = 32, kHeads = 4, kHeadDim = kDim / kHeads, kHidden = 48;

struct Block {
  Graph g;
  Tensor out, loss;
};

Tensor rms_norm_primitives(Tensor x, Tensor w) { return x * rsqrt(mean(x * x, {-1}, true) + 1e-6f) * w; }

Tensor causal_mask(Graph& g) {
  std::vector<float> m(kSeq * kSeq, 0.0f);
  for (int64_t i = 0; i < kSeq; ++i)
    for (int64_t j = i + 1; j < kSeq; ++j)
      m[static_cast<size_t>(i * kSeq + j)] = -std::numeric_limits<float>::infinity();
  return g.constant(m, {kSeq, kSeq});
}

// [B, S, D] -> [B, H, S, Dh] and back.
Tensor heads(Tensor x) { return permute(reshape(x, {kBatch, kSeq, kHeads, kHeadDim}), {0, 2, 1, 3}); }
Tensor merge(Tensor x) { return reshape(permute(x, {0, 2, 1, 3}), {kBatch, kSeq, kDim}); }

void build(Block& b, bool primitives) {
  Graph& g = b.g;
  Tensor x = g.input("x", {kBatch, kSeq, kDim});
  Tensor n1 = g.parameter("norm1", {kDim}), n2 = g.parameter("norm2", {kDim});
  Tensor wq = g.parameter("wq", {kDim, kDim}), wk = g.parameter("wk", {kDim, kDim}),
         wv = g.parameter("wv", {kDim, kDim});
  Tensor wo = g.parameter("wo", {kDim, kDim});
  Tensor wg = g.parameter("gate", {kHidden, kDim}), wu = g.parameter("up", {kHidden, kDim});
  Tensor wd = g.parameter("down", {kDim, kHidden});
  const MatMulOptions t{.transpose_b = true};  // Hugging Face layout: [out, in]
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));

  Tensor h = primitives ? rms_norm_primitives(x, n1) : rms_norm(x, n1);
  Tensor q = heads(matmul(h, wq, t)), k = heads(matmul(h, wk, t)), v = heads(matmul(h, wv, t));
  Tensor a = primitives ? matmul(softmax(matmul(q, transpose(k, -2, -1)) * scale + causal_mask(g), -1), v)
                        : attention(q, k, v, {.causal = true, .scale = scale});
  Tensor x2 = x + matmul(merge(a), wo, t);
  Tensor h2 = primitives ? rms_norm_primitives(x2, n2) : rms_norm(x2, n2);
  Tensor gate = matmul(h2, wg, t), up = matmul(h2, wu, t);
  Tensor m = primitives ? gate * sigmoid(gate) * up : swiglu(gate, up);
  b.out = x2 + matmul(m, wd, t);
  g.output("y", b.out);
  b.loss = mean(b.out * b.out);
}

void expect_close(const HostTensor& a, const HostTensor& b, const std::string& what) {
  std::vector<float> x = a.to_f32(), y = b.to_f32();
  ASSERT_EQ(x.size(), y.size()) << what;
  double scale = 1e-30;
  for (float v : x) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 2e-5 * scale) << what << " element " << i;
}

TEST(TransformerBlock, PrimitivesCompileToTheFusedDispatchesForward) {
  Block prim, fused;
  build(prim, true);
  build(fused, false);
  Session a = build_inference_session(prim.g), b = build_inference_session(fused.g);
  EXPECT_EQ(a.stats().dispatches, b.stats().dispatches) << a.listing() << "\nvs\n" << b.listing();
  Rng rng;
  mntest::step_both(a, b, prim.g, rng, -0.5, 0.5);
  expect_close(a.read_output("y"), b.read_output("y"), "output y");
  // And the fused ops really are there: no softmax, sigmoid or rsqrt dispatch is left.
  for (const char* gone : {"softmax ", "sigmoid ", "rsqrt "})
    EXPECT_EQ(a.listing().find(gone), std::string::npos) << gone;
}

TEST(TransformerBlock, PrimitivesCompileToTheFusedDispatchesTraining) {
  Block prim, fused;
  build(prim, true);
  build(fused, false);
  TrainConfig cfg;
  cfg.optimizer = SGD{.lr = 0.01f};
  Session a = build_session(prim.g, prim.loss, cfg), b = build_session(fused.g, fused.loss, cfg);
  EXPECT_EQ(a.stats().dispatches, b.stats().dispatches) << a.listing() << "\nvs\n" << b.listing();
  Rng rng;
  mntest::step_both(a, b, prim.g, rng, -0.5, 0.5);
  EXPECT_NEAR(a.read_loss(), b.read_loss(), 1e-5 * std::abs(b.read_loss()));
  for (const char* p : {"wq", "wk", "wv", "wo", "gate", "up", "down", "norm1", "norm2"})
    expect_close(a.read_grad(p), b.read_grad(p), std::string("gradient of ") + p);
}

}  // namespace
