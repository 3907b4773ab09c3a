// nn layers against the double-precision reference: each layer's graph runs on the device and
// through tests/reference.cpp on the same random parameters (odd sizes, batch dims).
#include <gtest/gtest.h>

#include <cmath>

#include "meganeura/meganeura.hpp"
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

// Random values for every parameter the layers created, then the device vs the reference.
void run_layers(CaseBuilder& b) {
  for (const Node& n : b.g.nodes())
    if (n.op == Op::Parameter && !b.feeds.count(n.name))
      b.feeds[n.name] = host_f32(n.shape, b.rng.floats(numel(n.shape), -0.5, 0.5));
  b.scale = 1;  // sums of products of O(1) values: floor the comparison's scale
  Session s = build_inference_session(b.g);
  feed(s, b);
  s.step();
  check_outputs(s, b);
}

TEST(NnLayers, LinearEmbeddingNorms) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  nn::Embedding emb(b.g, "emb", 37, 24);
  nn::LayerNorm ln(b.g, "ln", 24);
  nn::RMSNorm rms(b.g, "rms", 24, 1e-5f);
  nn::Linear fc(b.g, "fc", 24, 13), fc_nobias(b.g, "fc2", 13, 7, false);
  Tensor ids = b.input_ints("ids", {3, 5}, 0, 36);  // inclusive bounds
  b.output("y", fc_nobias(fc(rms(ln(emb(ids))))));
  run_layers(b);
}

TEST(NnLayers, SelfAttentionGroupedQueryWithRotary) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  nn::MultiHeadAttention attn(b.g, "attn", {.hidden = 24, .heads = 6, .kv_heads = 2, .head_dim = 8, .bias = true});
  nn::Rotary rope(b.g, {.head_dim = 8, .theta = 500.0, .max_positions = 16});
  Tensor x = b.input("x", {2, 7, 24});
  Tensor pos = b.input_host("positions", host_i32({7}, {3, 4, 5, 6, 7, 8, 9}));
  b.output("y", attn(x, pos, &rope));
  run_layers(b);
}

TEST(NnLayers, SlidingWindowAndCrossAttention) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  nn::MultiHeadAttention local(b.g, "local", {.hidden = 16, .heads = 4, .kv_heads = 4, .window = 3});
  nn::MultiHeadAttention cross(b.g, "cross", {.hidden = 16, .heads = 2, .kv_heads = 1});
  nn::SwiGLU mlp(b.g, "mlp", 16, 40);
  Tensor x = b.input("x", {2, 9, 16}), memory = b.input("memory", {2, 11, 16});
  b.output("y", mlp(cross.cross(local(x), memory)));
  run_layers(b);
}

TEST(NnLayers, ConvolutionsAndPooling) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  nn::Conv stem(b.g, "stem", 3, 8, {3, 3}, {.stride = {2}, .padding = {1}});
  nn::Conv depthwise(b.g, "dw", 8, 8, {3, 3}, {.padding = {1}, .groups = 8}, false);
  nn::Conv pointwise(b.g, "pw", 8, 5, {1, 1});
  Tensor x = b.input("x", {2, 3, 9, 11});
  Tensor h = max_pool2d(relu(depthwise(stem(x))), {{2, 2}, {1, 1}});
  b.output("y", adaptive_avg_pool2d(pointwise(h), {1, 1}));
  run_layers(b);
}

TEST(NnLayers, ConvInitialisesAsPyTorch) {
  Graph g;
  nn::Conv c(g, "c", 6, 4, {3, 2}, {.groups = 2});
  EXPECT_EQ(c.weight.shape(), (Shape{4, 3, 3, 2}));
  EXPECT_EQ(c.bias.shape(), (Shape{4}));
  EXPECT_EQ(c.weight.node().name, "c.weight");
  EXPECT_FLOAT_EQ(c.weight.node().init.value, 1.0f / std::sqrt(18.0f));  // fan-in 3 · 3 · 2
  EXPECT_FLOAT_EQ(c.bias.node().init.value, 1.0f / std::sqrt(18.0f));
  EXPECT_THROW(nn::Conv(g, "bad", 5, 4, {3}, {.groups = 2}), ShapeError);
}

}  // namespace
}  // namespace mntest
