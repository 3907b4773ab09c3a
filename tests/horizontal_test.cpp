// Horizontal fusion: matmuls that share their input and take f32 weight parameters run as one
// dispatch, while the weights keep their names (set, read, save, load, gradients, updates).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "meganeura/meganeura.hpp"
#include "test_util.hpp"

namespace {

using namespace meganeura;
using mntest::Rng;

// x [3,5,33] times five weights in Hugging Face layout ([out, in], transposed): q, k, v, gate, up
// share x (4 fit one dispatch, the fifth runs alone); w2 [33, 7] (not transposed) pairs with w3
// on another input.
struct Model {
  Graph g;
  Tensor loss;
  Model() {
    Tensor x = g.input("x", {3, 5, 33}), y = g.input("y", {3, 5, 33});
    const MatMulOptions t{.transpose_b = true};
    Tensor total = g.scalar(0.0f);
    for (auto [name, n] : {std::pair{"wq", 40}, {"wk", 20}, {"wv", 20}, {"gate", 65}, {"up", 65}})
      total = total + mean(matmul(x, g.parameter(name, {n, 33}), t) * static_cast<float>(n % 7 + 1));
    Tensor a = matmul(y, g.parameter("w2", {33, 7})), b = matmul(y, g.parameter("w3", {33, 130}));
    g.output("a", a);
    g.output("b", b);
    loss = total + mean(a * a) + mean(b);
    g.output("loss", loss);
  }
};

int grouped_calls(const Session& s) {  // matmul dispatches labelled "with %a, %b, ..."
  int n = 0;
  std::string l = s.listing();
  for (size_t at = 0; (at = l.find("[with %", at)) != std::string::npos; ++at) ++n;
  return n;
}

void expect_equal(const HostTensor& a, const HostTensor& b, const std::string& what, double rtol = 1e-6) {
  std::vector<float> x = a.to_f32(), y = b.to_f32();
  ASSERT_EQ(x.size(), y.size()) << what;
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(x[i], y[i], rtol * (1 + std::abs(y[i]))) << what << " element " << i;
}

TEST(HorizontalFusion, InferenceGroupsAndKeepsValues) {
  Model m;
  Session fused = build_inference_session(m.g), plain = build_inference_session(m.g, {.optimize = false});
  EXPECT_EQ(grouped_calls(fused), 2) << fused.listing();  // {q, k, v, gate} and {w2, w3}
  EXPECT_EQ(grouped_calls(plain), 0);
  setenv("MEGANEURA_HORIZONTAL_FUSION", "0", 1);
  Session ungrouped = build_inference_session(m.g);
  unsetenv("MEGANEURA_HORIZONTAL_FUSION");
  EXPECT_EQ(grouped_calls(ungrouped), 0);
  EXPECT_EQ(fused.stats().dispatches + 4, ungrouped.stats().dispatches) << fused.listing();
  Rng rng;
  auto feeds = mntest::step_both(fused, plain, m.g, rng, -1, 1);
  expect_equal(fused.read_output("a"), plain.read_output("a"), "a");
  expect_equal(fused.read_output("b"), plain.read_output("b"), "b");
  expect_equal(fused.read_output("loss"), plain.read_output("loss"), "loss", 1e-5);
  for (const char* p : {"wq", "wk", "wv", "gate", "up", "w2", "w3"})
    expect_equal(fused.read_parameter(p), feeds.at(p), p, 0);
}

// Split-K on grouped products: the summing pass adds the partials over the packed outputs.
TEST(HorizontalFusion, GroupedProductsSplitAlongK) {
  Model m;
  mntest::ScopedEnv split("MEGANEURA_SPLIT_K", "3");
  Session fused = build_inference_session(m.g);
  EXPECT_EQ(grouped_calls(fused), 2) << fused.listing();
  EXPECT_NE(fused.listing().find("split-K"), std::string::npos) << fused.listing();
  mntest::ScopedEnv no_split("MEGANEURA_SPLIT_K", "0");
  Session plain = build_inference_session(m.g, {.optimize = false});
  Rng rng;
  mntest::step_both(fused, plain, m.g, rng, -1, 1);
  for (const char* out : {"a", "b"}) expect_equal(fused.read_output(out), plain.read_output(out), out, 1e-5);
  expect_equal(fused.read_output("loss"), plain.read_output("loss"), "loss", 1e-5);
}

TEST(HorizontalFusion, TrainingUpdatesEachWeightUnderItsName) {
  Model m;
  TrainConfig cfg;
  cfg.optimizer = SGD{.lr = 0.1f, .momentum = 0.9f};
  TrainConfig off = cfg;
  off.optimize = false;
  Session fused = build_session(m.g, m.loss, cfg), plain = build_session(m.g, m.loss, off);
  EXPECT_EQ(grouped_calls(fused), 2) << fused.listing();
  Rng rng;
  mntest::step_both(fused, plain, m.g, rng, -1, 1);
  for (int step = 0; step < 3; ++step) {
    if (step) {
      fused.step();
      plain.step();
    }
    EXPECT_NEAR(fused.read_loss(), plain.read_loss(), 1e-5 * (1 + std::abs(plain.read_loss()))) << "step " << step;
  }
  for (const char* p : {"wq", "wk", "wv", "gate", "up", "w2", "w3"}) {
    expect_equal(fused.read_grad(p), plain.read_grad(p), std::string("gradient of ") + p, 1e-5);
    expect_equal(fused.read_parameter(p), plain.read_parameter(p), p, 1e-5);
  }
  // A checkpoint of the packed weights restores each under its name.
  const std::string path = (std::filesystem::temp_directory_path() / "meganeura_horizontal_test.safetensors").string();
  fused.save(path);
  Session again = build_session(m.g, m.loss, cfg);
  again.load(path);
  for (const char* p : {"wq", "wk", "wv", "gate", "up", "w2", "w3"})
    expect_equal(again.read_parameter(p), fused.read_parameter(p), p, 0);
  std::filesystem::remove(path);
}

}  // namespace
