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

// The vision layers in eval form, against the reference: a transposed conv, batch norm by its
// running statistics (a positive variance), group norm, average pooling, upsampling by a scale.
TEST(NnLayers, VisionLayers) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  nn::ConvTranspose up(b.g, "up", 4, 6, {3, 3}, {.stride = {2}, .padding = {1}, .output_padding = {1}, .groups = 2});
  nn::BatchNorm bn(b.g, "bn", 6);
  bn.training = false;
  nn::GroupNorm gn(b.g, "gn", 3, 6);
  const nn::AvgPool2d pool{{.kernel = {2, 2}}};
  const nn::Upsample twice{.scale_factor = {2}, .mode = UpsampleMode::linear};
  const nn::MaxPool2d max_pool{{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}};
  const nn::AdaptiveAvgPool2d global;
  b.feeds["bn.running_var"] = host_f32({6}, rng.floats(6, 0.5, 2));
  Tensor x = b.input("x", {2, 4, 5, 6});
  Tensor h = twice(pool(gn(relu(bn(up(x))))));  // [2, 6, 10, 12] -> pooled [5, 6] -> [10, 12]
  EXPECT_EQ(h.shape(), (Shape{2, 6, 10, 12}));
  b.output("y", global(max_pool(h)));
  run_layers(b);
}

TEST(NnLayers, BatchNormBuffersAndModes) {
  Graph g;
  nn::BatchNorm bn(g, "features.1", 3);
  EXPECT_EQ(bn.weight.node().name, "features.1.weight");
  EXPECT_EQ(bn.running_mean.node().name, "features.1.running_mean");
  EXPECT_FALSE(bn.running_var.node().trainable);
  EXPECT_EQ(bn.running_var.node().init, Init::constant(1.0f));
  EXPECT_EQ(bn.bias.node().init, Init::constant(0.0f));
  nn::BatchNorm plain(g, "plain", 3, {.affine = false, .track_running_stats = false});
  EXPECT_FALSE(plain.weight.valid());
  EXPECT_FALSE(plain.running_mean.valid());
  const Tensor x = g.input("x", {4, 3, 5});
  g.output("train", bn(x));  // batch statistics, the running ones updated
  bn.training = false;
  g.output("eval", bn(x));
  plain.training = false;  // no running statistics: the batch's all the same, as PyTorch
  g.output("plain", plain(x));
  Session s = build_inference_session(g);
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  const std::vector<float> xs = rng.floats(60, 1, 3);
  s.set_input("x", xs);
  s.step();
  const std::vector<float> train = s.read_output("train").to_f32(), eval = s.read_output("eval").to_f32(),
                           plain_y = s.read_output("plain").to_f32();
  for (int64_t ch = 0; ch < 3; ++ch) {
    double m = 0;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 5; ++j) m += train[static_cast<size_t>((i * 3 + ch) * 5 + j)];
    EXPECT_NEAR(m / 20, 0.0, 1e-5) << "channel " << ch << ": batch statistics centre it";
  }
  EXPECT_EQ(train, plain_y);
  // Eval read the running statistics before this step's update moved them: 0 and 1, x itself.
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(eval[i], xs[i] / std::sqrt(1 + 1e-5), 1e-5) << i;
  EXPECT_NE(s.read_parameter("features.1.running_mean").to_f32(), std::vector<float>(3, 0.0f));
}

TEST(NnLayers, ConvTransposeAndUpsampleAsPyTorch) {
  Graph g;
  nn::ConvTranspose t(g, "t", 6, 4, {3, 2}, {.groups = 2});
  EXPECT_EQ(t.weight.shape(), (Shape{6, 2, 3, 2}));
  EXPECT_FLOAT_EQ(t.weight.node().init.value, 1.0f / std::sqrt(12.0f));  // fan-in 2 · 3 · 2
  EXPECT_THROW(nn::ConvTranspose(g, "bad", 6, 3, {3}, {.groups = 2}), ShapeError);
  EXPECT_THROW(nn::GroupNorm(g, "gn", 4, 6), ShapeError);
  const Tensor x = g.input("x", {1, 2, 5, 7});
  const nn::Upsample by_scale{.scale_factor = {2, 1.5}}, by_size{.size = {3, 4}};
  EXPECT_EQ(by_scale(x).shape(), (Shape{1, 2, 10, 10}));
  EXPECT_EQ(by_size(x).shape(), (Shape{1, 2, 3, 4}));
  expect_has(message_of<Error>([&] { nn::Upsample{}(x); }), "either an output size or a scale factor");
  expect_has(message_of<ShapeError>([&] { nn::Upsample{.scale_factor = {2, 2, 2}}(x); }), "3 scale factors");
  expect_has(message_of<Error>([&] { nn::Upsample{.scale_factor = {0}}(x); }), "is not positive");
}

}  // namespace
}  // namespace mntest
