// The tensor cores keep f32's exponent range (kernels/stage_scale.glsl): matmuls (plain, split-K,
// the GLU pair, a training step's products) and attention forward and backward at magnitudes
// that plain f16 staging flushes to zero (1e-20, a gradient's 1e-8) or turns into infinity (1e5,
// 1e30), against the exact f32 path on the same inputs. Error: max |got - want| / max |want| per
// tensor, within 2e-3 for one product (11 significant bits, K up to a few hundred) and 2e-2 for
// a chain of them (a training step's gradients: sums of products of staged products, with
// cancellation); plain f16 staging is off by O(1) in every case. Skips without tensor cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

constexpr double kOneProduct = 2e-3, kChain = 2e-2;

// Every named tensor of a session after a step on `feeds`: its outputs and, in training, each
// parameter's gradient (as "grad <name>").
using Tensors = std::map<std::string, std::vector<float>>;
using Feeds = std::map<std::string, HostTensor>;

Session make_session(const Graph& g, std::optional<Tensor> loss) {
  return loss ? build_session(g, *loss, {.optimizer = SGD{.lr = 0.0f}}) : build_inference_session(g);
}

Tensors step(Session& s, bool training, const Feeds& feeds) {
  for (const auto& [name, value] : feeds) {
    const auto inputs = s.input_names();
    if (std::find(inputs.begin(), inputs.end(), name) != inputs.end())
      s.set_input(name, value);
    else
      s.set_parameter(name, value);
  }
  s.step();
  Tensors out;
  for (const std::string& name : s.output_names()) out[name] = s.read_output(name).to_f32();
  if (training)
    for (const std::string& name : s.parameter_names()) out["grad " + name] = s.read_grad(name).to_f32();
  return out;
}

// Each tensor of `got` within `tolerance` of the largest magnitude of `exact`'s (the loss, a sum
// of random-sign terms, is not compared: its relative error says nothing of the staging).
void expect_near_exact(const Tensors& exact, const Tensors& got, double tolerance) {
  for (const auto& [name, want] : exact) {
    if (name.rfind("meganeura.", 0) == 0) continue;  // the loss
    const std::vector<float>& have = got.at(name);
    double err = 0, top = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      if (!std::isfinite(want[i])) continue;  // an infinite input's row: infinite or NaN both ways
      if (!std::isfinite(have[i])) {
        ADD_FAILURE() << name << " element " << i << " is " << have[i] << ", exactly " << want[i];
        break;
      }
      err = std::max(err, std::abs(double(have[i]) - want[i]));
      top = std::max(top, std::abs(double(want[i])));
    }
    EXPECT_GT(top, 0.0) << name << " is all zeros: the case tests nothing";
    EXPECT_LE(err, tolerance * top) << name << ": max error " << err << " against max " << top;
  }
}

// The graph on the tensor cores (precision high, the environment's other switches as given)
// against the exact path, one session each stepped on every feed set in turn (later steps stage
// at the exponents the earlier ones left: stage_scale.glsl), each output and gradient within
// `tolerance` of its largest magnitude; false when the device has no tensor cores.
bool expect_steps_like_exact(const Graph& g, std::optional<Tensor> loss, const std::vector<Feeds>& steps,
                             std::initializer_list<std::pair<const char*, const char*>> env,
                             double tolerance = kOneProduct) {
  std::vector<Tensors> exact;
  {
    ScopedEnv precision("MEGANEURA_MATMUL_PRECISION", "highest");
    Session s = make_session(g, loss);
    for (const Feeds& feeds : steps) exact.push_back(step(s, loss.has_value(), feeds));
  }
  ScopedEnv precision("MEGANEURA_MATMUL_PRECISION", "high");
  std::vector<std::unique_ptr<ScopedEnv>> scoped;
  for (auto [name, value] : env) scoped.push_back(std::make_unique<ScopedEnv>(name, value));
  std::optional<Session> s;
  try {
    s.emplace(make_session(g, loss));
  } catch (const Error& e) {
    if (std::string(e.what()).find("tensor-core") == std::string::npos) throw;
    return false;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i + 1));
    expect_near_exact(exact[i], step(*s, loss.has_value(), steps[i]), tolerance);
  }
  return true;
}

bool expect_like_exact(const Graph& g, std::optional<Tensor> loss, const Feeds& feeds,
                       std::initializer_list<std::pair<const char*, const char*>> env, double tolerance = kOneProduct) {
  return expect_steps_like_exact(g, loss, {feeds}, env, tolerance);
}

struct Scales {
  double a, b;
};
const Scales kMatMulScales[] = {{1e-20, 1}, {1e-8, 1e-8}, {1e5, 1e5}, {1e30, 1e-30}, {1e-30, 1e5}};

TEST(TensorCoreRange, MatMulPlainAndSplit) {
  constexpr int64_t M = 70, K = 300, N = 90;
  for (const Scales sc : kMatMulScales)
    for (const char* split : {"0", "3"}) {
      SCOPED_TRACE("scales " + std::to_string(sc.a) + " x " + std::to_string(sc.b) + ", split " + split);
      Rng rng;
      SCOPED_TRACE(seed_note(rng.seed()));
      Graph g;
      g.output("y", matmul(g.input("a", {M, K}), g.input("b", {K, N})));
      const std::map<std::string, HostTensor> feeds{{"a", host_f32({M, K}, scaled(rng.floats(M * K, -1, 1), sc.a))},
                                                    {"b", host_f32({K, N}, scaled(rng.floats(K * N, -1, 1), sc.b))}};
      if (!expect_like_exact(g, std::nullopt, feeds, {{"MEGANEURA_MATMUL", "coopmat"}, {"MEGANEURA_SPLIT_K", split}}))
        GTEST_SKIP() << "no tensor cores";
    }
}

// An infinity in A: its row is infinite or NaN, as in f32, and every other row exact to f16's
// bits (the infinity does not pick the block's scale).
TEST(TensorCoreRange, MatMulWithAnInfinity) {
  constexpr int64_t M = 70, K = 100, N = 40;
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  std::vector<float> a = rng.floats(M * K, -1, 1);
  a[5 * K + 7] = std::numeric_limits<float>::infinity();
  Graph g;
  g.output("y", matmul(g.input("a", {M, K}), g.input("b", {K, N})));
  const std::map<std::string, HostTensor> feeds{{"a", host_f32({M, K}, a)},
                                                {"b", host_f32({K, N}, rng.floats(K * N, -1, 1))}};
  if (!expect_like_exact(g, std::nullopt, feeds, {{"MEGANEURA_MATMUL", "coopmat"}})) GTEST_SKIP() << "no tensor cores";
}

// K loops whose steps differ by 40 orders of magnitude (and start with zeros), and one whose
// values grow 1e6-fold after the first step (beyond the first step's headroom: the kernel's
// second attempt, at the whole range's largest magnitudes).
TEST(TensorCoreRange, MatMulStepsOfVeryDifferentMagnitudes) {
  constexpr int64_t M = 64, K = 256, N = 64;
  const std::vector<std::vector<double>> step_scales = {{0, 1e20, 1e-20, 1, 1e-10, 1e15, 1e-5, 1},
                                                        {1, 1e6, 1e-3, 1, 3e5, 1, 1, 1}};
  for (const auto& step_scale : step_scales) {  // per 32-deep K step
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    std::vector<float> a = rng.floats(M * K, -1, 1);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) a[static_cast<size_t>(m * K + k)] *= static_cast<float>(step_scale[k / 32]);
    Graph g;
    g.output("y", matmul(g.input("a", {M, K}), g.input("b", {K, N})));
    const std::map<std::string, HostTensor> feeds{{"a", host_f32({M, K}, a)},
                                                  {"b", host_f32({K, N}, rng.floats(K * N, -1, 1))}};
    if (!expect_like_exact(g, std::nullopt, feeds, {{"MEGANEURA_MATMUL", "coopmat"}, {"MEGANEURA_COOP_K_STEP", "32"}}))
      GTEST_SKIP() << "no tensor cores";
  }
}

// A gated MLP's training step: x [T, D] through gate/up [F, D] and down [D, F], the loss
// mean(y * c); its feeds with x and c scaled as given.
constexpr int64_t kT = 40, kD = 96, kF = 150;

Tensor gated_mlp_loss(Graph& g) {
  const MatMulOptions t{.transpose_b = true};
  Tensor x = g.input("x", {kT, kD});
  Tensor h = swiglu(matmul(x, g.parameter("gate", {kF, kD}), t), matmul(x, g.parameter("up", {kF, kD}), t));
  Tensor y = matmul(h, g.parameter("down", {kD, kF}), t);
  g.output("y", y);
  return mean(y * g.input("c", {kT, kD}));
}

Feeds gated_mlp_feeds(Rng& rng, double x_scale, double c_scale) {
  return {{"x", host_f32({kT, kD}, scaled(rng.floats(kT * kD, -1, 1), x_scale))},
          {"c", host_f32({kT, kD}, scaled(rng.floats(kT * kD, -1, 1), c_scale))},
          {"gate", host_f32({kF, kD}, rng.floats(kF * kD, -0.1, 0.1))},
          {"up", host_f32({kF, kD}, rng.floats(kF * kD, -0.1, 0.1))},
          {"down", host_f32({kD, kF}, rng.floats(kD * kF, -0.1, 0.1))}};
}

// A training step of a gated MLP whose loss is tiny (its gradients near 1e-12) and whose
// activations are large: every product of the backward, the GLU pair's included.
TEST(TensorCoreRange, TrainingStepWithTinyGradients) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  Graph g;
  const Tensor loss = gated_mlp_loss(g);
  if (!expect_like_exact(g, loss, gated_mlp_feeds(rng, 300, 1e-10), {{"MEGANEURA_MATMUL", "coopmat"}}, kChain))
    GTEST_SKIP() << "no tensor cores";
}

// One session stepped on operands whose magnitudes change from call to call: the same (the
// exponents the call before left fit), grown 1e6-fold and shrunk 1e-9-fold (beyond the headroom
// and the slack: those tiles run again at their steps' own exponents), all zeros, an infinity,
// and back. Plain, split-K and the GLU pair of a training step.
TEST(TensorCoreRange, CallsWhoseMagnitudesChange) {
  constexpr int64_t M = 70, K = 300, N = 90;
  const double scales[] = {1, 1, 1e6, 1e6, 1e-3, 1, 0, 1, 1e30, 1e-30};
  for (const char* split : {"0", "3"}) {
    SCOPED_TRACE(std::string("split ") + split);
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    Graph g;
    g.output("y", matmul(g.input("a", {M, K}), g.input("b", {K, N})));
    std::vector<Feeds> steps;
    for (size_t i = 0; i < std::size(scales); ++i) {
      std::vector<float> a = scaled(rng.floats(M * K, -1, 1), scales[i]);
      if (scales[i] == 0) a[3] = 1e-3f;  // not all zeros: the case must test something
      if (i == 7) a[5 * K + 7] = std::numeric_limits<float>::infinity();
      steps.push_back({{"a", host_f32({M, K}, a)},
                       {"b", host_f32({K, N}, scaled(rng.floats(K * N, -1, 1), i % 3 == 2 ? 1e-9 : 1))}});
    }
    if (!expect_steps_like_exact(g, std::nullopt, steps,
                                 {{"MEGANEURA_MATMUL", "coopmat"}, {"MEGANEURA_SPLIT_K", split}}))
      GTEST_SKIP() << "no tensor cores";
  }
}

TEST(TensorCoreRange, TrainingStepsWhoseGradientsChange) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  Graph g;
  const Tensor loss = gated_mlp_loss(g);
  std::vector<Feeds> steps;
  for (const double c : {1e-10, 1e-10, 1e-2, 1e-2, 1e-12, 1.0})
    steps.push_back(gated_mlp_feeds(rng, c == 1.0 ? 1e-4 : 300, c));
  if (!expect_steps_like_exact(g, loss, steps, {{"MEGANEURA_MATMUL", "coopmat"}}, kChain))
    GTEST_SKIP() << "no tensor cores";
}

// Attention on the tensor cores, forward and backward (q, k, v parameters of a training step):
// values of 1e5, queries and keys of 1e-3, and a loss whose gradients are near 1e-10. 130 query
// rows (a partial block), grouped query heads, causal and not, both forward kernels.
TEST(TensorCoreRange, AttentionForwardAndBackward) {
  constexpr int64_t B = 1, HQ = 4, HKV = 2, S = 130, D = 64;
  for (const char* kernel : {"blocks", "split"})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(kernel) + (causal ? ", causal" : ""));
      Rng rng;
      SCOPED_TRACE(seed_note(rng.seed()));
      Graph g;
      Tensor q = g.parameter("q", {B, HQ, S, D}), k = g.parameter("k", {B, HKV, S, D}),
             v = g.parameter("v", {B, HKV, S, D});
      Tensor o = attention(q, k, v, {.causal = causal});
      g.output("o", o);
      Tensor loss = sum(o * g.input("c", {B, HQ, S, D}));
      const std::map<std::string, HostTensor> feeds{
          {"q", host_f32({B, HQ, S, D}, scaled(rng.floats(B * HQ * S * D, -1, 1), 3e-2))},
          {"k", host_f32({B, HKV, S, D}, scaled(rng.floats(B * HKV * S * D, -1, 1), 3e1))},
          {"v", host_f32({B, HKV, S, D}, scaled(rng.floats(B * HKV * S * D, -1, 1), 1e5))},
          {"c", host_f32({B, HQ, S, D}, scaled(rng.floats(B * HQ * S * D, -1, 1), 1e-10))}};
      if (!expect_like_exact(g, loss, feeds, {{"MEGANEURA_FLASH_ATTENTION", kernel}}, kChain))
        GTEST_SKIP() << "no tensor cores";
    }
}

}  // namespace
}  // namespace mntest
