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

// Every named tensor of a session after one step: its outputs and, in training, each
// parameter's gradient (as "grad <name>").
using Tensors = std::map<std::string, std::vector<float>>;

Tensors run(const Graph& g, std::optional<Tensor> loss, const std::map<std::string, HostTensor>& feeds) {
  std::optional<Session> s;
  if (loss)
    s.emplace(build_session(g, *loss, {.optimizer = SGD{.lr = 0.0f}}));
  else
    s.emplace(build_inference_session(g));
  for (const auto& [name, value] : feeds) {
    const auto inputs = s->input_names();
    if (std::find(inputs.begin(), inputs.end(), name) != inputs.end())
      s->set_input(name, value);
    else
      s->set_parameter(name, value);
  }
  s->step();
  Tensors out;
  for (const std::string& name : s->output_names()) out[name] = s->read_output(name).to_f32();
  if (loss)
    for (const std::string& name : s->parameter_names()) out["grad " + name] = s->read_grad(name).to_f32();
  return out;
}

// The graph on the tensor cores (precision high, the environment's other switches as given)
// against the exact path, each output and gradient within `tolerance` of its largest magnitude
// (the loss, a sum of random-sign terms, is not compared: its relative error says nothing of the
// staging); false when the device has no tensor cores.
bool expect_like_exact(const Graph& g, std::optional<Tensor> loss, const std::map<std::string, HostTensor>& feeds,
                       std::initializer_list<std::pair<const char*, const char*>> env, double tolerance = kOneProduct) {
  Tensors exact;
  {
    ScopedEnv precision("MEGANEURA_MATMUL_PRECISION", "highest");
    exact = run(g, loss, feeds);
  }
  ScopedEnv precision("MEGANEURA_MATMUL_PRECISION", "high");
  std::vector<std::unique_ptr<ScopedEnv>> scoped;
  for (auto [name, value] : env) scoped.push_back(std::make_unique<ScopedEnv>(name, value));
  Tensors got;
  try {
    got = run(g, loss, feeds);
  } catch (const Error& e) {
    if (std::string(e.what()).find("tensor-core") == std::string::npos) throw;
    return false;
  }
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
  return true;
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

// A training step of a gated MLP whose loss is tiny (its gradients near 1e-12) and whose
// activations are large: every product of the backward, the GLU pair's included.
TEST(TensorCoreRange, TrainingStepWithTinyGradients) {
  constexpr int64_t T = 40, D = 96, F = 150;
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  Graph g;
  const MatMulOptions t{.transpose_b = true};
  Tensor x = g.input("x", {T, D});
  Tensor h = swiglu(matmul(x, g.parameter("gate", {F, D}), t), matmul(x, g.parameter("up", {F, D}), t));
  Tensor y = matmul(h, g.parameter("down", {D, F}), t);
  g.output("y", y);
  Tensor loss = mean(y * g.input("c", {T, D}));
  const std::map<std::string, HostTensor> feeds{{"x", host_f32({T, D}, scaled(rng.floats(T * D, -1, 1), 300))},
                                                {"c", host_f32({T, D}, scaled(rng.floats(T * D, -1, 1), 1e-10))},
                                                {"gate", host_f32({F, D}, rng.floats(F * D, -0.1, 0.1))},
                                                {"up", host_f32({F, D}, rng.floats(F * D, -0.1, 0.1))},
                                                {"down", host_f32({D, F}, rng.floats(D * F, -0.1, 0.1))}};
  if (!expect_like_exact(g, loss, feeds, {{"MEGANEURA_MATMUL", "coopmat"}}, kChain)) GTEST_SKIP() << "no tensor cores";
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
