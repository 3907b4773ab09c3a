// Initialisation against PyTorch's defaults: the README's MLP through init::linear, the same
// model built with nn layers and initialised by default, every layer's parameters, init::linear
// refusing a weight whose fan-in it cannot tell, and set_parameter/load winning over defaults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using ::testing::AllOf;
using ::testing::HasSubstr;

// U(-bound, bound), filled: no value beyond the bound, the largest |v| close to it (n draws
// leave a gap of about bound/n), and for enough values the standard deviation bound/sqrt(3).
// A bound twice or half the true one fails, as OwnChecksFail shows.
::testing::AssertionResult fills_uniform(const std::vector<float>& v, double bound) {
  const double n = static_cast<double>(v.size());
  double max_abs = 0, sq = 0;
  for (float x : v) {
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
    sq += static_cast<double>(x) * x;
  }
  const double std = std::sqrt(sq / n), want_std = bound / std::sqrt(3.0);
  if (max_abs > bound * (1 + 1e-6))
    return ::testing::AssertionFailure() << "max |v| " << max_abs << " exceeds the bound " << bound;
  if (max_abs < bound * std::max(0.5, 1 - 8 / n))
    return ::testing::AssertionFailure() << "max |v| " << max_abs << " of " << n << " values fills too little of ±"
                                         << bound;
  if (n >= 256 && std::fabs(std - want_std) > 0.1 * want_std)
    return ::testing::AssertionFailure() << "std " << std << ", U(±" << bound << ") has " << want_std;
  return ::testing::AssertionSuccess();
}

std::vector<float> values_of(const Session& s, const std::string& name) { return s.read_parameter(name).to_f32(); }

// The README's "Example" graph, as written there: weights declared [in, out], used as x·W.
struct ReadmeMlp {
  Graph g;
  Tensor loss;
  ReadmeMlp() {
    const int64_t batch = 128;
    auto x = g.input("x", {batch, 784});
    auto y = g.input("y", {batch}, i32);
    auto h = relu(matmul(x, g.parameter("fc1.weight", {784, 256})) + g.parameter("fc1.bias", {256}));
    auto logits = matmul(h, g.parameter("fc2.weight", {256, 10})) + g.parameter("fc2.bias", {10});
    g.output("logits", logits);
    loss = cross_entropy(logits, y);
  }
};

// The same MLP from nn layers: weights [out, in] (PyTorch's), read transposed.
struct NnMlp {
  Graph g;
  Tensor loss;
  NnMlp() {
    auto x = g.input("x", {128, 784});
    auto y = g.input("y", {128}, i32);
    nn::Linear fc1(g, "fc1", 784, 256), fc2(g, "fc2", 256, 10);
    auto logits = fc2(relu(fc1(x)));
    g.output("logits", logits);
    loss = cross_entropy(logits, y);
  }
};

const TrainConfig kReadmeConfig{.optimizer = AdamW{.lr = 2e-3f, .weight_decay = 1e-4f},
                                .schedule = Cosine{.warmup_steps = 100}};

// torch.nn.Linear(in, out): weight and bias U(±1/sqrt(in)).
void expect_linear(const Session& s, const std::string& layer, int64_t in) {
  const double bound = 1 / std::sqrt(static_cast<double>(in));
  EXPECT_TRUE(fills_uniform(values_of(s, layer + ".weight"), bound)) << layer << ".weight, fan_in " << in;
  EXPECT_TRUE(fills_uniform(values_of(s, layer + ".bias"), bound)) << layer << ".bias, fan_in " << in;
}

TEST(InitChecks, OwnChecksFail) {
  std::vector<float> v(1000);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-0.1f, 0.1f);
  for (float& x : v) x = u(rng);
  EXPECT_TRUE(fills_uniform(v, 0.1));
  EXPECT_FALSE(fills_uniform(v, 0.05)) << "values beyond a bound half as wide";
  EXPECT_FALSE(fills_uniform(v, 0.2)) << "a bound twice as wide, half empty";
  EXPECT_FALSE(fills_uniform(std::vector<float>(1000, 0.1f), 0.1)) << "every value at the bound: the wrong spread";
}

TEST(Init, ReadmeExampleMatchesPyTorchLinear) {
  ReadmeMlp m;
  Session s = build_session(m.g, m.loss, kReadmeConfig);
  init::linear(s, "fc1.weight", "fc1.bias", 1);  // as the README calls it
  init::linear(s, "fc2.weight", "fc2.bias", 2);
  expect_linear(s, "fc1", 784);
  expect_linear(s, "fc2", 256);
}

TEST(Init, NnLinearModelIsInitialisedByDefault) {
  NnMlp m;
  Session s = build_session(m.g, m.loss, kReadmeConfig);
  expect_linear(s, "fc1", 784);
  expect_linear(s, "fc2", 256);
  EXPECT_EQ(s.parameter_info("fc1.weight").init, Init::uniform(1 / std::sqrt(784.0f), WeightLayout::out_in));
  // The same graph gives the same values; each parameter has its own stream.
  NnMlp again;
  Session t = build_session(again.g, again.loss, kReadmeConfig);
  EXPECT_EQ(values_of(s, "fc2.weight"), values_of(t, "fc2.weight"));
  // Steps with only the inputs set.
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  s.set_input("x", rng.floats(128 * 784, 0, 1));
  s.set_input("y", host_i32({128}, rng.ints(128, 0, 9)));
  EXPECT_NO_THROW(s.step());
  EXPECT_TRUE(std::isfinite(s.read_loss()));
}

TEST(Init, InitLinearReadsNnLinearsLayout) {
  NnMlp m;
  Session s = build_session(m.g, m.loss, kReadmeConfig);
  init::linear(s, "fc1.weight", "fc1.bias", 1);  // the README's call on nn::Linear's [out, in] weights
  init::linear(s, "fc2.weight", "", 2);
  expect_linear(s, "fc1", 784);
  EXPECT_TRUE(fills_uniform(values_of(s, "fc2.weight"), 1 / 16.0)) << "fan_in 256, not 10";
  EXPECT_THAT(message_of<ShapeError>([&] { init::linear(s, "fc2.weight", "", 2, WeightLayout::in_out); }),
              AllOf(HasSubstr("fc2.weight"), HasSubstr("[out, in]")));
}

TEST(Init, DefaultsRedrawFromASeed) {
  NnMlp m;
  Session s = build_session(m.g, m.loss, kReadmeConfig);
  const std::vector<float> seed0 = values_of(s, "fc1.weight");
  init::defaults(s, 7);
  const std::vector<float> seed7 = values_of(s, "fc1.weight");
  EXPECT_NE(seed0, seed7);
  expect_linear(s, "fc1", 784);
  init::defaults(s, 0);
  EXPECT_EQ(values_of(s, "fc1.weight"), seed0) << "the session's own draw is init::defaults(s, 0)";
  EXPECT_EQ(init::draw(Init::uniform(0.5f), {100}, "a", 3), init::draw(Init::uniform(0.5f), {100}, "a", 3));
  EXPECT_NE(init::draw(Init::uniform(0.5f), {100}, "a", 3), init::draw(Init::uniform(0.5f), {100}, "b", 3));
  EXPECT_THROW(init::draw(Init{}, {2}, "w", 0), Error);
}

TEST(Init, EveryLayerHasPyTorchsDefault) {
  Graph g;
  nn::Embedding emb(g, "emb", 500, 32);
  nn::RMSNorm rms(g, "rms", 32);
  nn::LayerNorm ln(g, "ln", 32);
  nn::SwiGLU mlp(g, "mlp", 32, 48, /*bias=*/true);
  nn::MultiHeadAttention attn(g, "attn", {.hidden = 32, .heads = 4, .kv_heads = 2, .bias = true});
  nn::Rotary rope(g, {.head_dim = 8, .max_positions = 16});
  Tensor ids = g.input("ids", {2, 5}, i32), pos = g.input("pos", {5}, i32);
  g.output("y", mlp(attn(ln(rms(emb(ids))), pos, &rope)));
  for (const Node& n : g.nodes())
    if (n.op == Op::Parameter) {
      EXPECT_NE(n.init.kind, Init::Kind::none) << n.name << " has no default initialiser";
    }

  Session s = build_inference_session(g);
  const std::vector<float> e = values_of(s, "emb.weight");  // N(0, 1)
  double mean = 0, sq = 0;
  for (float v : e) mean += v;
  mean /= static_cast<double>(e.size());
  for (float v : e) sq += (v - mean) * (v - mean);
  EXPECT_NEAR(mean, 0.0, 0.04);  // 5 standard errors
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(e.size())), 1.0, 0.03);
  const auto [lo, hi] = std::minmax_element(e.begin(), e.end());
  EXPECT_TRUE(*lo < -3 && *hi > 3) << "16,000 normal draws reach past 3 std on both sides: " << *lo << ", " << *hi;
  EXPECT_EQ(values_of(s, "rms.weight"), std::vector<float>(32, 1.0f));
  EXPECT_EQ(values_of(s, "ln.weight"), std::vector<float>(32, 1.0f));
  EXPECT_EQ(values_of(s, "ln.bias"), std::vector<float>(32, 0.0f));
  for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj"}) expect_linear(s, std::string("attn.") + p, 32);
  expect_linear(s, "mlp.gate_proj", 32);
  expect_linear(s, "mlp.up_proj", 32);
  expect_linear(s, "mlp.down_proj", 48);
  s.set_input("ids", host_i32({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  s.set_input("pos", host_i32({5}, {0, 1, 2, 3, 4}));
  EXPECT_NO_THROW(s.step());
}

TEST(Init, LinearRefusesAWeightItCannotRead) {
  Graph g;
  Tensor x = g.input("x", {2, 784});
  Tensor w = g.parameter("w", {784, 256}), sq = g.parameter("sq", {256, 256}), b = g.parameter("b", {256});
  Tensor odd = g.parameter("odd", {256, 3}), b5 = g.parameter("b5", {5}), cube = g.parameter("cube", {2, 2, 2});
  g.output("y", matmul(matmul(x, w), sq) + b);
  g.output("z", sum(odd) + sum(b5) + sum(cube));
  Session s = build_inference_session(g);
  const std::string msg = message_of<ShapeError>([&] { init::linear(s, "w", "", 1); });
  EXPECT_THAT(
      msg, AllOf(HasSubstr("\"w\" [784,256]"), HasSubstr("WeightLayout::in_out"), HasSubstr("WeightLayout::out_in")));
  init::linear(s, "w", "", 1, WeightLayout::in_out);
  EXPECT_TRUE(fills_uniform(values_of(s, "w"), 1 / 28.0));
  init::linear(s, "w", "", 1, WeightLayout::out_in);
  EXPECT_TRUE(fills_uniform(values_of(s, "w"), 1 / 16.0));
  init::linear(s, "sq", "", 1);  // square: the fan-in is 256 either way
  EXPECT_TRUE(fills_uniform(values_of(s, "sq"), 1 / 16.0));
  init::linear(s, "w", "b", 1);  // the bias [256] says w is [in, out]
  EXPECT_TRUE(fills_uniform(values_of(s, "w"), 1 / 28.0));
  EXPECT_THAT(message_of<ShapeError>([&] { init::linear(s, "odd", "b5", 1); }),
              HasSubstr("neither of the weight's dims"));
  EXPECT_THAT(message_of<ShapeError>([&] { init::linear(s, "w", "b", 1, WeightLayout::out_in); }),
              HasSubstr("output dim is 784"));
  EXPECT_THAT(message_of<ShapeError>([&] { init::linear(s, "cube", "", 1); }), HasSubstr("not a matrix"));
}

TEST(Init, SetParameterAndLoadWinOverDefaults) {
  NnMlp m;
  const std::vector<float> twos(256 * 784, 2.0f);
  Session s = build_session(m.g, m.loss, kReadmeConfig);
  s.set_parameter("fc1.weight", twos);
  EXPECT_EQ(values_of(s, "fc1.weight"), twos);
  expect_linear(s, "fc2", 256);  // the others still get their defaults

  const std::string path =
      (std::filesystem::temp_directory_path() / ("init_test_" + std::to_string(::getpid()) + ".safetensors")).string();
  init::defaults(s, 11);
  s.save(path);
  Session t = build_session(m.g, m.loss, kReadmeConfig);
  t.load(path);
  std::filesystem::remove(path);
  for (const std::string& name : s.parameter_names()) EXPECT_EQ(values_of(t, name), values_of(s, name)) << name;
}

TEST(Init, PlainParametersStillNeedSetting) {
  ReadmeMlp m;
  Session s = build_session(m.g, m.loss, kReadmeConfig);
  s.set_input("x", std::vector<float>(128 * 784, 0.5f));
  s.set_input("y", host_i32({128}, std::vector<int32_t>(128, 1)));
  EXPECT_THAT(message_of<Error>([&] { s.step(); }), AllOf(HasSubstr("fc1.weight"), HasSubstr("fc2.bias")));
}

TEST(Init, GraphParameterTakesAnInit) {
  Graph g;
  Tensor w = g.parameter("w", {3}, f32, Init::constant(2.5f));
  g.output("y", w * 2.0f);
  Session s = build_inference_session(g);
  s.step();
  EXPECT_EQ(s.read_output("y").to_f32(), std::vector<float>(3, 5.0f));
  EXPECT_THROW(g.parameter("h", {3}, f16, Init::constant(1)), DTypeError);
  EXPECT_THROW(g.parameter("n", {3}, f32, Init::uniform(-1)), Error);
}

}  // namespace
}  // namespace mntest
