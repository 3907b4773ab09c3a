// Every matmul tier (lower/matmul_tiers.hpp) forced in turn on every matmul, linear and
// matmul_add case of the op table, and tensor-core attention on the attention cases, against the
// double reference at the tier's tolerance. The tensor-core tiers skip where the device has none
// (lavapipe); run them on a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>

#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

struct Tier {
  std::string name;
  std::string matmul;     // MEGANEURA_MATMUL
  std::string precision;  // MEGANEURA_MATMUL_PRECISION
  std::string split_k;    // MEGANEURA_SPLIT_K
  // |got - want| <= rtol * max(|want|, scale): f32 tiers as the op table; f16/bf16 staging
  // rounds each operand to 11/8 significant bits, so the error grows with the sum of |a*b|
  // (inputs are O(1), K up to a few hundred): a wrong or missing block is still off by O(1).
  double rtol, scale;
};

const Tier kTiers[] = {
    {"tiled", "tiled", "f32", "0", 1e-5, 1},
    {"tiled_split_k3", "tiled", "f32", "3", 1e-5, 1},
    {"gemv", "gemv", "f32", "0", 1e-5, 1},
    {"coopmat_f16", "coopmat", "f16", "0", 1e-2, 4},
    {"coopmat_f16_split_k3", "coopmat", "f16", "3", 1e-2, 4},
    {"coopmat_bf16", "coopmat", "bf16", "0", 6e-2, 4},
};

std::vector<size_t> matmul_case_indices() {
  std::vector<size_t> idx;
  for (size_t i = 0; i < op_cases().size(); ++i) {
    Op op = op_cases()[i].op;
    if (op == Op::MatMul || op == Op::Linear || op == Op::MatMulAdd) idx.push_back(i);
  }
  return idx;
}

// Why the device cannot run the tier the environment forces, if so (matmul_tiers() says so when a
// session is built; any other error is the test's failure, not a skip).
std::optional<std::string> unavailable() {
  Graph g;
  g.output("y", matmul(g.input("a", {2, 3}), g.input("b", {3, 2})));
  try {
    build_inference_session(g);
    return std::nullopt;
  } catch (const Error& e) {
    if (std::string(e.what()).find("no usable tensor-core matmul") == std::string::npos) throw;
    return e.what();
  }
}

class MatMulTiers : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(MatMulTiers, MatchesReference) {
  const Tier& tier = kTiers[std::get<0>(GetParam())];
  ScopedEnv force("MEGANEURA_MATMUL", tier.matmul), precision("MEGANEURA_MATMUL_PRECISION", tier.precision),
      split("MEGANEURA_SPLIT_K", tier.split_k);
  if (auto why = unavailable()) GTEST_SKIP() << *why;
  const OpCase& c = op_cases().at(matmul_case_indices().at(std::get<1>(GetParam())));
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  SCOPED_TRACE(tier.name + " / " + std::string(op_name(c.op)) + " / " + c.name);
  CaseBuilder b(rng);
  c.build(b);
  b.rtol = tier.rtol;
  b.scale = std::max(b.scale, tier.scale);
  run_case(b);
}

std::string tier_case_name(const ::testing::TestParamInfo<std::tuple<size_t, size_t>>& info) {
  const OpCase& c = op_cases().at(matmul_case_indices().at(std::get<1>(info.param)));
  std::string s = kTiers[std::get<0>(info.param)].name + "_" + std::string(op_name(c.op)) + "_" + c.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Tiers, MatMulTiers,
                         ::testing::Combine(::testing::Range<size_t>(0, std::size(kTiers)),
                                            ::testing::Range<size_t>(0, matmul_case_indices().size())),
                         tier_case_name);

// Attention forward and backward on tensor cores (MEGANEURA_FLASH_ATTENTION=1) on every
// attention case whose shape they take (D == Dv, a multiple of 16, at most 128), at f16
// staging's tolerance.
std::vector<size_t> attention_case_indices() {
  std::vector<size_t> idx;
  for (size_t i = 0; i < op_cases().size(); ++i)
    if (op_cases()[i].op == Op::Attention || op_cases()[i].op == Op::AttentionBackward) idx.push_back(i);
  return idx;
}

// The two forward kernels: 128-row blocks, and 32-row blocks whose subgroups split the keys.
const char* const kAttentionKernels[] = {"blocks", "split"};

class AttentionTiers : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(AttentionTiers, TensorCoresMatchReference) {
  ScopedEnv flash("MEGANEURA_FLASH_ATTENTION", kAttentionKernels[std::get<0>(GetParam())]),
      precision("MEGANEURA_MATMUL_PRECISION", "f16");
  const OpCase& c = op_cases().at(attention_case_indices().at(std::get<1>(GetParam())));
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  SCOPED_TRACE(c.name);
  CaseBuilder b(rng);
  c.build(b);
  // q, k, v (and dO) and the probabilities rounded to f16; softmax in f32. The backward's
  // ds = p (dp - delta) cancels, so its error is relative to the terms.
  b.rtol = c.op == Op::Attention ? 1e-2 : 2e-2;
  try {
    build_inference_session(b.g);
  } catch (const Error& e) {
    const std::string why = e.what();
    if (why.find("tensor-core") != std::string::npos) GTEST_SKIP() << why;
    throw;
  }
  run_case(b);
}

INSTANTIATE_TEST_SUITE_P(Tiers, AttentionTiers,
                         ::testing::Combine(::testing::Range<size_t>(0, std::size(kAttentionKernels)),
                                            ::testing::Range<size_t>(0, attention_case_indices().size())),
                         [](const ::testing::TestParamInfo<std::tuple<size_t, size_t>>& info) {
                           std::string s = std::string(kAttentionKernels[std::get<0>(info.param)]) + "_" +
                                           op_cases().at(attention_case_indices().at(std::get<1>(info.param))).name;
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return s;
                         });

// Split-K (K-range partials in scratch, then a pass that sums them and applies the epilogue): the
// second and third replays of the recorded dispatches (new inputs, scratch reused) must be as
// right as the first, in every tier that splits.
TEST(MatMulSplitK, RepeatedStepsAreExact) {
  constexpr int64_t M = 5, K = 2100, N = 70;
  for (const char* tier : {"tiled", "coopmat"}) {
    SCOPED_TRACE(tier);
    ScopedEnv force("MEGANEURA_MATMUL", tier), split("MEGANEURA_SPLIT_K", "4"), precision("MEGANEURA_MATMUL_PRECISION",
                                                                                        std::string(tier) == "tiled" ? "f32" : "f16");
    Graph g;
    Tensor a = g.input("a", {M, K}), b = g.input("b", {K, N}), r = g.input("r", {M, N});
    g.output("y", matmul_add(a, b, r));
    std::optional<Session> s;
    try {
      s.emplace(build_inference_session(g));
    } catch (const Error& e) {
      if (std::string(e.what()).find("tensor-core") == std::string::npos) throw;
      std::printf("  %s: skipped (%s)\n", tier, e.what());  // no tensor cores here
      continue;
    }
    ASSERT_NE(s->listing().find("split-K x4"), std::string::npos) << s->listing();
    Rng rng;
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> av = rng.floats(M * K, -1, 1), bv = rng.floats(K * N, -1, 1), rv = rng.floats(M * N, -1, 1);
      s->set_input("a", host_f32({M, K}, av));
      s->set_input("b", host_f32({K, N}, bv));
      s->set_input("r", host_f32({M, N}, rv));
      s->step();
      const std::vector<float> y = s->read_output("y").to_f32();
      const double tol = std::string(tier) == "tiled" ? 1e-4 : 0.5;  // f16 operands: K = 2100 terms of 1e-3 error
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double want = rv[static_cast<size_t>(m * N + n)];
          for (int64_t k = 0; k < K; ++k) want += double(av[static_cast<size_t>(m * K + k)]) * bv[static_cast<size_t>(k * N + n)];
          ASSERT_NEAR(y[static_cast<size_t>(m * N + n)], want, tol) << "step " << step << " (" << m << ", " << n << ")";
        }
    }
  }
}

TEST(MatMulTierSwitches, BadValuesNameTheVariable) {
  for (auto [name, value] : {std::pair{"MEGANEURA_MATMUL", "fast"}, {"MEGANEURA_MATMUL_PRECISION", "tf32"},
                             {"MEGANEURA_SPLIT_K", "many"}, {"MEGANEURA_FLASH_ATTENTION", "yes"}}) {
    ScopedEnv env(name, value);
    Graph g;
    g.output("y", matmul(g.input("a", {2, 3}), g.input("b", {3, 2})));
    std::string msg = message_of<Error>([&] { build_inference_session(g); });
    EXPECT_NE(msg.find(std::string(name) + "=" + value), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace mntest
