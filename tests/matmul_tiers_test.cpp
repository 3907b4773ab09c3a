// Every matmul tier (lower/matmul_tiers.hpp) forced in turn on every matmul, linear and
// matmul_add case of the op table, and tensor-core attention on the attention cases, against the
// double reference at the tier's tolerance. The tensor-core tiers skip where the device has none
// (lavapipe); run them on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include "op_case.hpp"
#include "reference.hpp"

namespace mntest {
namespace {

using namespace meganeura;

struct Tier {
  std::string name;
  std::string matmul;     // MEGANEURA_MATMUL
  std::string precision;  // MEGANEURA_MATMUL_PRECISION
  std::string split_k;    // MEGANEURA_SPLIT_K
  std::string split_sum;  // MEGANEURA_SPLIT_K_SUM: kernel (default) or pass
  std::string gemv_team;  // MEGANEURA_GEMV_TEAM: "" (picked), 32, 64 or 128
  // |got - want| <= rtol * max(|want|, scale): f32 tiers as the op table; scaled f16 (bf16)
  // staging rounds each operand to 11 (8) significant bits, so the error grows with the sum of
  // |a*b| (inputs are O(1), K up to a few hundred): a wrong or missing block is still off by O(1).
  double rtol, scale;
  std::string staged{};  // MEGANEURA_COOP_STAGED: "" (where it pays), 1 (every product)
  // MEGANEURA_GEMV_SUBGROUP: "" (teams add up through subgroup arithmetic where the device has
  // it, matmul_gemv_subgroup.comp), 0 (in shared memory, matmul_gemv.comp); MEGANEURA_GEMV_COLS.
  std::string gemv_subgroup{}, gemv_cols{};
};

const Tier kTiers[] = {
    {"tiled", "tiled", "highest", "0", "kernel", "", 1e-5, 1},
    {"tiled_split_k3", "tiled", "highest", "3", "kernel", "", 1e-5, 1},
    {"tiled_split_k3_pass", "tiled", "highest", "3", "pass", "", 1e-5, 1},
    {"gemv", "gemv", "highest", "0", "kernel", "", 1e-5, 1},
    {"gemv_team128", "gemv", "highest", "0", "kernel", "128", 1e-5, 1},
    {"gemv_cols1_team64", "gemv", "highest", "0", "kernel", "64", 1e-5, 1, "", "", "1"},
    {"gemv_cols4", "gemv", "highest", "0", "kernel", "", 1e-5, 1, "", "", "4"},
    {"gemv_shared", "gemv", "highest", "0", "kernel", "", 1e-5, 1, "", "0"},
    {"gemv_shared_team128", "gemv", "highest", "0", "kernel", "128", 1e-5, 1, "", "0"},
    {"coopmat_high", "coopmat", "high", "0", "kernel", "", 1e-2, 4},
    {"coopmat_high_split_k3", "coopmat", "high", "3", "kernel", "", 1e-2, 4},
    {"coopmat_high_split_k3_pass", "coopmat", "high", "3", "pass", "", 1e-2, 4},
    {"coopmat_high_staged", "coopmat", "high", "0", "kernel", "", 1e-2, 4, "1"},
    {"coopmat_high_staged_split_k3", "coopmat", "high", "3", "kernel", "", 1e-2, 4, "1"},
    {"coopmat_medium", "coopmat", "medium", "0", "kernel", "", 6e-2, 4},
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
      split("MEGANEURA_SPLIT_K", tier.split_k), split_sum("MEGANEURA_SPLIT_K_SUM", tier.split_sum),
      team("MEGANEURA_GEMV_TEAM", tier.gemv_team), staged("MEGANEURA_COOP_STAGED", tier.staged),
      gemv_subgroup("MEGANEURA_GEMV_SUBGROUP", tier.gemv_subgroup), gemv_cols("MEGANEURA_GEMV_COLS", tier.gemv_cols);
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
  return test_name(kTiers[std::get<0>(info.param)].name + "_" + std::string(op_name(c.op)) + "_" + c.name);
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
      precision("MEGANEURA_MATMUL_PRECISION", "high");
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
                           return test_name(std::string(kAttentionKernels[std::get<0>(info.param)]) + "_" +
                                            op_cases().at(attention_case_indices().at(std::get<1>(info.param))).name);
                         });

// Unforced at precision `high`, 64 blocks of 128 query rows: the exact forward (16-row blocks)
// saves the log-sum-exp that the tensor-core backward reads (each kernel where it is faster,
// lower/emit/emit_attention.cpp); every gradient against the double reference.
TEST(AttentionPicks, ExactForwardFeedsTensorCoreBackward) {
  ScopedEnv precision("MEGANEURA_MATMUL_PRECISION", "high"), flash("MEGANEURA_FLASH_ATTENTION", std::nullopt),
      blocks("MEGANEURA_ATTENTION_BLOCKS", std::nullopt), tier("MEGANEURA_MATMUL", "coopmat");
  if (auto why = unavailable()) GTEST_SKIP() << *why;
  for (const char* grad : {"_dq", "_dk", "_dv"}) {
    const std::string name = std::string("seq_major_d16_128_heads_64_causal") + grad;
    const auto at = std::find_if(op_cases().begin(), op_cases().end(), [&](const OpCase& c) { return c.name == name; });
    ASSERT_NE(at, op_cases().end()) << name;
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    SCOPED_TRACE(name);
    CaseBuilder b(rng);
    at->build(b);
    b.rtol = 2e-2;  // as AttentionTiers' backward
    const std::string listing = build_inference_session(b.g).listing();
    EXPECT_EQ(count_lines(listing, "dispatch attention_block"), 1) << listing;
    EXPECT_EQ(count_lines(listing, "dispatch attention_coop_backward_nv"), 1) << listing;
    run_case(b);
  }
}

// The exact attention forward by blocks of 16 query rows (attention_block.comp,
// MEGANEURA_ATTENTION_BLOCKS=1: every shape it takes, not only those of 16 rows or more) on every
// forward attention case, at the exact kernels' tolerance; the listing shows the block kernel ran.
class AttentionBlocks : public ::testing::TestWithParam<size_t> {};

TEST_P(AttentionBlocks, MatchReference) {
  ScopedEnv blocks("MEGANEURA_ATTENTION_BLOCKS", "1"), flash("MEGANEURA_FLASH_ATTENTION", "0");
  const OpCase& c = op_cases().at(attention_case_indices().at(GetParam()));
  if (c.op != Op::Attention) GTEST_SKIP() << "a backward case";
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  SCOPED_TRACE(c.name);
  CaseBuilder b(rng);
  c.build(b);
  try {
    Session s = build_inference_session(b.g);
    EXPECT_EQ(count_lines(s.listing(), "dispatch attention_block"), 1) << s.listing();
  } catch (const Error& e) {
    const std::string why = e.what();
    if (why.find("the block kernel takes") != std::string::npos) GTEST_SKIP() << why;
    throw;
  }
  run_case(b);
}

INSTANTIATE_TEST_SUITE_P(Blocks, AttentionBlocks, ::testing::Range<size_t>(0, attention_case_indices().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return test_name(op_cases().at(attention_case_indices().at(info.param)).name);
                         });

// The exact per-row forward with its keys split over workgroups (attention.comp's KEY_SPLIT,
// MEGANEURA_ATTENTION_SPLIT=n: n splits of at least one key wherever the per-row kernel runs) on
// every forward attention case of fewer than 16 query rows (those the per-row kernel takes
// unforced): rows that see no key, fewer keys than splits, windows, cache positions, grouped
// heads, head dims 1 to 256, both layouts.
const char* const kKeySplits[] = {"3", "7"};

// Query rows of a forward case's attention (its graph built, not run).
int64_t query_rows(const OpCase& c) {
  Rng rng;
  CaseBuilder b(rng);
  c.build(b);
  for (const Node& n : b.g.nodes())
    if (n.op == Op::Attention) {
      const Shape& q = b.g.node(n.inputs[0]).shape;
      return q.size() < 2 ? 1 : q[q.size() - (n.attrs.seq_major ? 3 : 2)];
    }
  return 0;
}

// Built once: the instantiation and every test name ask again.
const std::vector<size_t>& forward_attention_cases() {
  static const std::vector<size_t> idx = [] {
    std::vector<size_t> found;
    for (size_t i = 0; i < op_cases().size(); ++i)
      if (op_cases()[i].op == Op::Attention && query_rows(op_cases()[i]) < 16) found.push_back(i);
    return found;
  }();
  return idx;
}

class AttentionKeySplits : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(AttentionKeySplits, MatchReference) {
  const char* splits = kKeySplits[std::get<0>(GetParam())];
  ScopedEnv split("MEGANEURA_ATTENTION_SPLIT", splits), blocks("MEGANEURA_ATTENTION_BLOCKS", "0"),
      flash("MEGANEURA_FLASH_ATTENTION", "0");
  const OpCase& c = op_cases().at(forward_attention_cases().at(std::get<1>(GetParam())));
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  SCOPED_TRACE(c.name);
  CaseBuilder b(rng);
  c.build(b);
  const std::string listing = build_inference_session(b.g).listing();
  EXPECT_EQ(count_lines(listing, std::string("keys split x") + splits), 1) << listing;
  run_case(b);
}

INSTANTIATE_TEST_SUITE_P(Splits, AttentionKeySplits,
                         ::testing::Combine(::testing::Range<size_t>(0, std::size(kKeySplits)),
                                            ::testing::Range<size_t>(0, forward_attention_cases().size())),
                         [](const ::testing::TestParamInfo<std::tuple<size_t, size_t>>& info) {
                           return test_name(std::string("x") + kKeySplits[std::get<0>(info.param)] + "_" +
                                            op_cases().at(forward_attention_cases().at(std::get<1>(info.param))).name);
                         });

// Decoding steps through one recorded session: the cache position moves and the keys change each
// step, so each step's splits differ in number and length; the counts a row must be back at zero
// for every replay after the first. Each output and log-sum-exp against a double reference.
TEST(AttentionKeySplits, RepeatedDecodingSteps) {
  constexpr int64_t H = 3, S = 90, D = 20;
  ScopedEnv split("MEGANEURA_ATTENTION_SPLIT", "5");
  Graph g;
  Tensor q = g.input("q", {1, H, 1, D}), k = g.input("k", {1, H, S, D}), v = g.input("v", {1, H, S, D});
  Tensor pos = g.input("position", {1}, i32);
  g.output("y", attention(q, k, v, pos, {.causal = true}));
  Session s = build_inference_session(g);
  ASSERT_EQ(count_lines(s.listing(), "keys split x5"), 1) << s.listing();
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  for (int32_t at : {0, 3, 89, 40, 4}) {
    SCOPED_TRACE("position " + std::to_string(at));
    const std::vector<float> qv = rng.floats(H * D, -2, 2), kv = rng.floats(H * S * D, -2, 2),
                             vv = rng.floats(H * S * D, -1, 1);
    s.set_input("q", host_f32({1, H, 1, D}, qv));
    s.set_input("k", host_f32({1, H, S, D}, kv));
    s.set_input("v", host_f32({1, H, S, D}, vv));
    s.set_input("position", host_i32({1}, {at}));
    s.step();
    const std::vector<float> y = s.read_output("y").to_f32();
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> w(static_cast<size_t>(at + 1));
      double top = -1e300, sum = 0;
      for (int64_t j = 0; j <= at; ++j) {
        double dot = 0;
        for (int64_t x = 0; x < D; ++x)
          dot += double(qv[static_cast<size_t>(h * D + x)]) * kv[static_cast<size_t>((h * S + j) * D + x)];
        w[static_cast<size_t>(j)] = dot / std::sqrt(double(D));
        top = std::max(top, w[static_cast<size_t>(j)]);
      }
      for (double& x : w) sum += x = std::exp(x - top);
      for (int64_t x = 0; x < D; ++x) {
        double want = 0;
        for (int64_t j = 0; j <= at; ++j)
          want += w[static_cast<size_t>(j)] * vv[static_cast<size_t>((h * S + j) * D + x)] / sum;
        ASSERT_NEAR(y[static_cast<size_t>(h * D + x)], want, 1e-5) << "head " << h << ", element " << x;
      }
    }
  }
}

// Split-K (K-range partials in scratch, summed with the epilogue by the last split of each tile
// or by a pass after the product): the second and third replays of the recorded dispatches (new
// inputs, scratch reused, the tile counts back at zero) must be as right as the first, in every
// tier that splits.
TEST(MatMulSplitK, RepeatedStepsAreExact) {
  constexpr int64_t M = 70, K = 2100, N = 70;  // 2 x 2 tiles of 64 x 64, partial at both edges
  for (const char* tier : {"tiled", "coopmat"})
    for (const char* sum : {"kernel", "pass"}) {
      SCOPED_TRACE(std::string(tier) + ", MEGANEURA_SPLIT_K_SUM=" + sum);
      ScopedEnv force("MEGANEURA_MATMUL", tier), split("MEGANEURA_SPLIT_K", "4"),
          precision("MEGANEURA_MATMUL_PRECISION", std::string(tier) == "tiled" ? "highest" : "high");
      ScopedEnv split_sum("MEGANEURA_SPLIT_K_SUM", sum);
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
      const bool in_kernel = std::string(sum) == "kernel";
      EXPECT_EQ(s->listing().find("summed in-kernel") != std::string::npos, in_kernel) << s->listing();
      EXPECT_EQ(s->listing().find("split-K sum") != std::string::npos, !in_kernel) << s->listing();
      Rng rng;
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> av = rng.floats(M * K, -1, 1), bv = rng.floats(K * N, -1, 1),
                                 rv = rng.floats(M * N, -1, 1);
        s->set_input("a", host_f32({M, K}, av));
        s->set_input("b", host_f32({K, N}, bv));
        s->set_input("r", host_f32({M, N}, rv));
        s->step();
        const std::vector<float> y = s->read_output("y").to_f32();
        const double tol = std::string(tier) == "tiled" ? 1e-4 : 0.5;  // f16 operands: K = 2100 terms of 1e-3 error
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double want = rv[static_cast<size_t>(m * N + n)];
            for (int64_t k = 0; k < K; ++k)
              want += double(av[static_cast<size_t>(m * K + k)]) * bv[static_cast<size_t>(k * N + n)];
            ASSERT_NEAR(y[static_cast<size_t>(m * N + n)], want, tol)
                << "step " << step << " (" << m << ", " << n << ")";
          }
      }
    }
}

// A sum of products whose weights share storage (a backward's d x = d1·W1 + d2·W2 + d3·W3 + r,
// the W_j packed by their forward products' horizontal fusion) runs as one dispatch over the K
// ranges of all three (lower/product_sums.cpp), split or not, and matches the double reference.
TEST(MatMulProductSums, ThreeProductsAndAResidualInOneDispatch) {
  constexpr int64_t M = 70, N = 36, K[3] = {64, 32, 96};
  for (const char* tier : {"tiled", "coopmat"})
    for (const char* split : {"3", "0"}) {
      SCOPED_TRACE(std::string(tier) + ", MEGANEURA_SPLIT_K=" + split);
      const bool f32 = std::string(tier) == "tiled";
      ScopedEnv force("MEGANEURA_MATMUL", tier), splits("MEGANEURA_SPLIT_K", split),
          precision("MEGANEURA_MATMUL_PRECISION", f32 ? "highest" : "high");
      Graph g;
      Tensor x = g.input("x", {M, N}), r = g.input("r", {M, N});
      Tensor sum = r;
      for (int j = 0; j < 3; ++j) {
        Tensor w = g.parameter("w" + std::to_string(j), {K[j], N});
        Tensor y = matmul(x, w, {.transpose_b = true});  // [M, K_j]: the three share x, so their weights pack
        g.output("y" + std::to_string(j), y);
        sum = sum + matmul(y * y, w);
      }
      g.output("sum", sum);
      std::optional<Session> s;
      try {
        s.emplace(build_inference_session(g));
      } catch (const Error& e) {
        if (std::string(e.what()).find("tensor-core") == std::string::npos) throw;
        std::printf("  %s: skipped (%s)\n", tier, e.what());
        continue;
      }
      const std::string listing = s->listing();
      ASSERT_NE(listing.find("sum of %"), std::string::npos) << listing;
      // Dispatches of a matmul kernel: the grouped forward and the sum.
      EXPECT_EQ(count_lines(listing, "dispatch matmul"), 2) << listing;
      EXPECT_EQ(listing.find(" add %"), std::string::npos) << "no add is left: " << listing;
      Rng rng;
      SCOPED_TRACE(seed_note(rng.seed()));
      const std::vector<float> xv = rng.floats(M * N, -1, 1), rv = rng.floats(M * N, -1, 1);
      std::vector<float> wv[3];
      s->set_input("x", host_f32({M, N}, xv));
      s->set_input("r", host_f32({M, N}, rv));
      for (int j = 0; j < 3; ++j) {
        wv[j] = rng.floats(K[j] * N, -0.3f, 0.3f);
        s->set_parameter("w" + std::to_string(j), host_f32({K[j], N}, wv[j]));
      }
      s->step();
      const std::vector<float> got = s->read_output("sum").to_f32();
      std::vector<double> want(rv.begin(), rv.end()), mag(M * N, 1.0);
      for (int j = 0; j < 3; ++j) {
        std::vector<float> d = s->read_output("y" + std::to_string(j)).to_f32();  // its own tier's y, squared
        for (float& v : d) v *= v;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t k = 0; k < K[j]; ++k)
            for (int64_t n = 0; n < N; ++n) {
              const double t = double(d[static_cast<size_t>(m * K[j] + k)]) * wv[j][static_cast<size_t>(k * N + n)];
              want[static_cast<size_t>(m * N + n)] += t;
              mag[static_cast<size_t>(m * N + n)] += std::abs(t);
            }
      }
      const double rtol = f32 ? 1e-5 : 3e-3;  // f16 staging: relative to the sum of |terms|
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], rtol * mag[i]) << "element " << i;
    }
}

// Steps a fused session and the same graph unfused on the same random inputs; the named outputs
// must agree to rtol (relative, floor 1). Returns the inputs fed.
std::map<std::string, HostTensor> expect_same_outputs(Session& fused, Session& plain, const Graph& g,
                                                      std::initializer_list<const char*> outputs, double rtol) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  auto feeds = step_both(fused, plain, g, rng, -1, 1);
  for (const char* out : outputs) {
    const std::vector<float> got = fused.read_output(out).to_f32(), want = plain.read_output(out).to_f32();
    EXPECT_EQ(got.size(), want.size()) << out;
    for (size_t i = 0; i < got.size() && i < want.size(); ++i)
      if (std::abs(got[i] - want[i]) > rtol * (1 + std::abs(want[i]))) {
        ADD_FAILURE() << out << " element " << i << ": " << got[i] << " against " << want[i];
        break;
      }
  }
  return feeds;
}

// A norm that reads a split-K product's rows runs in the product's summing pass (one workgroup
// per row: sum, epilogue, store, normalise): an rms_norm of a matmul_add and a layer_norm of a
// linear, with batch dimensions and a row length that is no multiple of the workgroup. A second
// norm of the same rows, whose weight is computed after the product, runs on its own. Unsplit, the
// norms run as their own dispatches; both ways must match the double reference.
TEST(MatMulSplitK, NormOfTheSumRunsInTheSummingPass) {
  constexpr int64_t B = 2, M = 5, K = 300, N = 1100, N2 = 40;  // N: more than a pass of 4 x 256 columns
  constexpr double eps = 1e-5;
  for (const char* split : {"3", "0"}) {
    SCOPED_TRACE(std::string("MEGANEURA_SPLIT_K=") + split);
    ScopedEnv force("MEGANEURA_MATMUL", "tiled"), splits("MEGANEURA_SPLIT_K", split),
        precision("MEGANEURA_MATMUL_PRECISION", "highest");
    Graph g;
    Tensor a = g.input("a", {B, M, K}), b = g.input("b", {K, N}), r = g.input("r", {B, M, N}), w = g.input("w", {N});
    Tensor a2 = g.input("a2", {B, M, K}), b2 = g.input("b2", {K, N2}), bias = g.input("bias", {N2});
    Tensor w2 = g.input("w2", {N2}), beta = g.input("beta", {N2});
    Tensor h = matmul_add(a, b, r);
    g.output("h", h);
    g.output("y", rms_norm(h, w, static_cast<float>(eps)));
    g.output("z", layer_norm(linear(a2, b2, bias), w2, beta, static_cast<float>(eps)));
    g.output("u", rms_norm(h, w * 2.0f, static_cast<float>(eps)));  // its weight is computed after h
    Session s = build_inference_session(g);  // pairing is lowering's fusion: on with the optimizer
    const std::string listing = s.listing();
    EXPECT_EQ(count_lines(listing, "dispatch norm "), std::string(split) == "0" ? 3 : 1) << listing;
    if (std::string(split) != "0") {
      EXPECT_NE(listing.find("split-K sum, rms_norm %"), std::string::npos) << listing;
      EXPECT_NE(listing.find("split-K sum, layer_norm %"), std::string::npos) << listing;
    }
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    auto in = [&](const char* name, Shape shape) {
      std::vector<float> v = rng.floats(numel(shape), -1, 1);
      s.set_input(name, host_f32(shape, v));
      return std::vector<double>(v.begin(), v.end());
    };
    const auto av = in("a", {B, M, K}), bv = in("b", {K, N}), rv = in("r", {B, M, N}), wv = in("w", {N});
    const auto a2v = in("a2", {B, M, K}), b2v = in("b2", {K, N2}), biasv = in("bias", {N2}), w2v = in("w2", {N2}),
               betav = in("beta", {N2});
    s.step();
    const std::vector<float> hy = s.read_output("h").to_f32(), yy = s.read_output("y").to_f32(),
                             zy = s.read_output("z").to_f32(), uy = s.read_output("u").to_f32();
    for (int64_t row = 0; row < B * M; ++row) {
      std::vector<double> hv(N), xv(N2);
      double ss = 0, mean = 0, var = 0;
      for (int64_t n = 0; n < N; ++n) {
        hv[n] = rv[row * N + n];
        for (int64_t k = 0; k < K; ++k) hv[n] += av[row * K + k] * bv[k * N + n];
        ss += hv[n] * hv[n];
      }
      for (int64_t n = 0; n < N2; ++n) {
        xv[n] = biasv[n];
        for (int64_t k = 0; k < K; ++k) xv[n] += a2v[row * K + k] * b2v[k * N2 + n];
        mean += xv[n] / N2;
      }
      for (int64_t n = 0; n < N2; ++n) var += (xv[n] - mean) * (xv[n] - mean) / N2;
      const double rstd = 1 / std::sqrt(ss / N + eps), rstd2 = 1 / std::sqrt(var + eps);
      for (int64_t n = 0; n < N; ++n) {
        const size_t i = static_cast<size_t>(row * N + n);
        ASSERT_NEAR(hy[i], hv[n], 1e-4 * std::max(1.0, std::abs(hv[n]))) << "h row " << row << " col " << n;
        ASSERT_NEAR(yy[i], hv[n] * rstd * wv[n], 1e-4) << "y row " << row << " col " << n;
        ASSERT_NEAR(uy[i], hv[n] * rstd * 2 * wv[n], 1e-4) << "u row " << row << " col " << n;
      }
      for (int64_t n = 0; n < N2; ++n)
        ASSERT_NEAR(zy[static_cast<size_t>(row * N2 + n)], (xv[n] - mean) * rstd2 * w2v[n] + betav[n], 1e-4)
            << "z row " << row << " col " << n;
    }
  }
}

// A q/k/v group split along K whose q and k go through one rotary pair next: the summing pass
// rotates them (no rotary dispatch). GQA-like head counts, cos/sin broadcast over the heads.
// Unsplit, the pair runs right after the group. Both against the unfused graph (exact f32).
TEST(MatMulSplitK, RotaryOfTheSumRunsInTheSummingPass) {
  for (const char* split : {"3", "0"}) {
    SCOPED_TRACE(std::string("MEGANEURA_SPLIT_K=") + split);
    ScopedEnv force("MEGANEURA_MATMUL", "tiled"), splits("MEGANEURA_SPLIT_K", split),
        precision("MEGANEURA_MATMUL_PRECISION", "highest");
    Graph g;
    const MatMulOptions t{.transpose_b = true};
    Tensor cs = g.input("cos", {13, 1, 16}), sn = g.input("sin", {13, 1, 16});
    Tensor x = g.input("x", {2, 13, 96});
    Tensor q = reshape(matmul(x, g.parameter("wq", {64, 96}), t), {2, 13, 4, 16});
    Tensor k = reshape(matmul(x, g.parameter("wk", {32, 96}), t), {2, 13, 2, 16});
    Tensor v = matmul(x, g.parameter("wv", {32, 96}), t);
    g.output("q", rotary(q, cs, sn));
    g.output("k", rotary(k, cs, sn));
    g.output("v", v);
    Session fused = build_inference_session(g), plain = build_inference_session(g, {.optimize = false});
    const std::string listing = fused.listing();
    EXPECT_EQ(listing.find("dispatch rotary") == std::string::npos, std::string(split) != "0") << listing;
    if (std::string(split) != "0") {
      EXPECT_NE(listing.find("split-K sum, rotary %"), std::string::npos) << listing;
    }
    expect_same_outputs(fused, plain, g, {"q", "k", "v"}, 1e-5);
  }
}

// The subgroup GEMV planned for a subgroup size the device does not run it with (a driver that
// varies it): the step is a DeviceError that names the two sizes and the switch around it, not
// wrong columns.
TEST(MatMulGemv, AnotherSubgroupSizeIsAnError) {
  const DeviceInfo device = default_device_info();
  if (!device.subgroup_arithmetic) GTEST_SKIP() << device.name << " has no subgroup arithmetic";
  const std::string planned = device.subgroup_size == 16 ? "32" : "16";
  ScopedEnv tier("MEGANEURA_GEMV", "1"), precision("MEGANEURA_MATMUL_PRECISION", "highest"),
      unforced("MEGANEURA_MATMUL", std::nullopt), size("MEGANEURA_GEMV_SUBGROUP", planned);
  Graph g;
  g.output("y", matmul(g.input("x", {1, 64}), g.parameter("w", {48, 64}), {.transpose_b = true}));
  Session s = build_inference_session(g);
  ASSERT_NE(s.listing().find("dispatch matmul_gemv_subgroup"), std::string::npos) << s.listing();
  s.set_input("x", HostTensor::f32s({1, 64}, std::vector<float>(64, 1.0f)));
  s.set_parameter("w", HostTensor::f32s({48, 64}, std::vector<float>(48 * 64, 1.0f)));
  const std::string msg = message_of<DeviceError>([&] { s.step(); });
  for (const std::string& part : {"subgroups of " + std::to_string(device.subgroup_size), "not the " + planned,
                                  std::string("MEGANEURA_GEMV_SUBGROUP=0")})
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
}

// A decoding step's rms_norm whose only readers are the A of GEMV products (a grouped pair, and a
// single matmul_add) runs inside them: x·w into the sums, the row's rstd at the store. K = 1100
// (16-byte loads, unrolled, then single) and K = 37 (scalar); 3 rows in 2 batches; both GEMV kernels (teams adding up
// through subgroups or in shared memory). With the GEMV tier off, or the pass skipped (MEGANEURA_LOWER_SKIP), the norms
// run on their own. Ungrouped (horizontal fusion off), each product works the norm out itself. All against the unfused
// graph (exact f32).
TEST(MatMulGemv, RmsNormOfTheRowsRunsInTheProducts) {
  for (auto [gemv, horizontal, subgroup, skip] : {std::tuple{"1", "1", "1", ""},
                                                  {"1", "1", "0", ""},
                                                  {"1", "0", "1", ""},
                                                  {"1", "0", "0", ""},
                                                  {"0", "1", "1", ""},
                                                  {"1", "1", "1", "rms_norm_in_gemv"}}) {
    SCOPED_TRACE(std::string("MEGANEURA_GEMV=") + gemv + " MEGANEURA_HORIZONTAL_FUSION=" + horizontal +
                 " MEGANEURA_GEMV_SUBGROUP=" + subgroup + " MEGANEURA_LOWER_SKIP=" + skip);
    ScopedEnv tier("MEGANEURA_GEMV", gemv), precision("MEGANEURA_MATMUL_PRECISION", "highest"),
        unforced("MEGANEURA_MATMUL", std::nullopt), grouping("MEGANEURA_HORIZONTAL_FUSION", horizontal),
        teams("MEGANEURA_GEMV_SUBGROUP", subgroup), skipped("MEGANEURA_LOWER_SKIP", skip);
    Graph g;
    const MatMulOptions t{.transpose_b = true};
    Tensor x = g.input("x", {2, 3, 1100}), y = g.input("y", {2, 3, 37}), r = g.input("r", {2, 3, 20});
    Tensor nx = rms_norm(x, g.parameter("wx", {1100}), 1e-5f), ny = rms_norm(y, g.parameter("wy", {37}), 1e-5f);
    g.output("a", matmul(nx, g.parameter("wa", {70, 1100}), t));
    g.output("b", matmul(nx, g.parameter("wb", {70, 1100}), t));
    g.output("c", matmul_add(ny, g.parameter("wc", {37, 20}), r));
    Session fused = build_inference_session(g), plain = build_inference_session(g, {.optimize = false});
    const std::string listing = fused.listing();
    EXPECT_EQ(listing.find("dispatch norm") == std::string::npos, std::string(gemv) == "1" && !*skip) << listing;
    // Sums of 1100 terms in another order (and the norm's scale applied to the sum, not to each
    // x): f32 rounding reaches ~2e-5; a wrong column, row or scale is off by O(1).
    expect_same_outputs(fused, plain, g, {"a", "b", "c"}, 1e-4);
  }
}

// A gated MLP's gate and up projections share x and run as one tensor-core dispatch, which also
// computes swiglu(gate, up) as it stores (GLU): no swiglu dispatch follows. N = 150 ends inside a
// 16-column run. Checked against the same graph lowered without fusion (same f16 staging), forward
// and the gradients through it.
TEST(MatMulGlu, SwigluRunsInTheTensorCoreEpilogue) {
  ScopedEnv force("MEGANEURA_MATMUL", "coopmat"), precision("MEGANEURA_MATMUL_PRECISION", "high");
  if (auto why = unavailable()) GTEST_SKIP() << *why;
  Graph g;
  const MatMulOptions t{.transpose_b = true};
  Tensor x = g.input("x", {3, 37, 72});
  Tensor y = swiglu(matmul(x, g.parameter("gate", {150, 72}), t), matmul(x, g.parameter("up", {150, 72}), t));
  g.output("y", y);
  Tensor loss = mean(y * y);
  g.output("loss", loss);
  Session fused = build_inference_session(g), plain = build_inference_session(g, {.optimize = false});
  const std::string listing = fused.listing();
  EXPECT_NE(listing.find("swiglu %"), std::string::npos) << listing;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);)
    EXPECT_FALSE(line.rfind("dispatch elementwise", 0) == 0 && line.find("swiglu") != std::string::npos) << listing;
  const auto feeds = expect_same_outputs(fused, plain, g, {"y"}, 1e-4);

  TrainConfig cfg;
  cfg.optimizer = SGD{.lr = 0.0f};
  TrainConfig off = cfg;
  off.optimize = false;
  Session train = build_session(g, loss, cfg), train_plain = build_session(g, loss, off);
  EXPECT_NE(train.listing().find("swiglu %"), std::string::npos) << train.listing();
  for (Session* s : {&train, &train_plain})
    for (const auto& [name, value] : feeds) (name == "x" ? s->set_input(name, value) : s->set_parameter(name, value));
  train.step();
  train_plain.step();
  EXPECT_NEAR(train.read_loss(), train_plain.read_loss(), 1e-4 * std::abs(train_plain.read_loss()));
  for (const char* w : {"gate", "up"}) {
    const std::vector<float> gg = train.read_grad(w).to_f32(), gw = train_plain.read_grad(w).to_f32();
    for (size_t i = 0; i < gg.size(); ++i)
      ASSERT_NEAR(gg[i], gw[i], 1e-4 * (1e-3 + std::abs(gw[i]))) << w << " grad " << i;
  }
}

// Decoding's gated MLP: the GEMV computes gate and up and stores swiglu(gate, up) too (GLU), with
// the rms_norm before them in its loads: no norm or swiglu dispatch. Weights as [N, K] (teams
// along k; K = 1100 in 16-byte loads, 1, 2, 4 or 8 of them in flight, the last round partial;
// K = 37 scalar) and as [K, N] (4 slices of k); N = 37 and 70 end inside a tile's half; 3 rows in
// 2 batches. Both kernels: teams adding up in shared memory (MEGANEURA_GEMV_SUBGROUP=0) and through
// subgroups (2 or 4 columns a team, one subgroup or several). Exact f32, against the unfused graph.
TEST(MatMulGemv, SwigluRunsInTheStore) {
  ScopedEnv tier("MEGANEURA_GEMV", "1"), precision("MEGANEURA_MATMUL_PRECISION", "highest"),
      unforced("MEGANEURA_MATMUL", std::nullopt);
  const bool subgroups = default_device_info().subgroup_arithmetic;
  struct Case {
    int64_t k, n;
    bool transpose;
    std::string team, unroll, subgroup, cols;
  };
  for (const Case& c : {Case{1100, 37, true, "32", "1", "0", ""},
                        {1100, 37, true, "32", "8", "0", ""},
                        {1100, 37, true, "128", "2", "0", ""},
                        {1100, 37, true, "64", "4", "0", ""},
                        {37, 70, true, "64", "2", "0", ""},
                        {64, 37, false, "32", "2", "", ""},
                        {1100, 37, true, "", "", "", ""},
                        {1100, 37, true, "32", "8", "", "4"},
                        {1100, 70, true, "256", "2", "", "2"},
                        {37, 70, true, "64", "1", "", "4"}}) {
    SCOPED_TRACE("K " + std::to_string(c.k) + ", N " + std::to_string(c.n) + (c.transpose ? ", [N, K]" : ", [K, N]") +
                 ", teams of " + c.team + ", " + c.unroll + " loads in flight, MEGANEURA_GEMV_SUBGROUP=" + c.subgroup +
                 ", " + c.cols + " columns a team");
    ScopedEnv width("MEGANEURA_GEMV_TEAM", c.team), in_flight("MEGANEURA_GEMV_UNROLL", c.unroll),
        subgroup("MEGANEURA_GEMV_SUBGROUP", c.subgroup), cols("MEGANEURA_GEMV_COLS", c.cols);
    Graph g;
    const MatMulOptions t{.transpose_b = c.transpose};
    const Shape w = c.transpose ? Shape{c.n, c.k} : Shape{c.k, c.n};
    Tensor x = rms_norm(g.input("x", {2, 3, c.k}), g.parameter("norm", {c.k}), 1e-5f);
    g.output("y", swiglu(matmul(x, g.parameter("gate", w), t), matmul(x, g.parameter("up", w), t)));
    Session fused = build_inference_session(g), plain = build_inference_session(g, {.optimize = false});
    const std::string listing = fused.listing();
    EXPECT_NE(listing.find("swiglu %"), std::string::npos) << listing;
    EXPECT_EQ(listing.find("dispatch elementwise"), std::string::npos) << listing;
    EXPECT_EQ(listing.find("dispatch norm"), std::string::npos) << listing;
    const bool subgroup_kernel = subgroups && c.transpose && c.subgroup != "0";
    EXPECT_EQ(listing.find("dispatch matmul_gemv_subgroup") != std::string::npos, subgroup_kernel) << listing;
    expect_same_outputs(fused, plain, g, {"y"}, 1e-4);  // as RmsNormOfTheRowsRunsInTheProducts
  }
}

// An inference session's weights are staged for the tensor cores once, by the derived command
// list, and again after every parameter write: set_parameter's new weights (and the first
// default-initialised ones) are what the next step multiplies. Against a double reference; the
// two products' weights differ (a stale staging would be off by O(1)).
TEST(MatMulTierSwitches, StagedWeightsFollowEveryParameterWrite) {
  // Staging forced: a product this small is not worth it (lower/emit/emit_staging.cpp).
  ScopedEnv force("MEGANEURA_MATMUL", "coopmat"), precision("MEGANEURA_MATMUL_PRECISION", "high"),
      staged("MEGANEURA_COOP_STAGED", "1");
  if (auto why = unavailable()) GTEST_SKIP() << *why;
  const int64_t M = 200, K = 130, N = 150;
  Graph g;
  Tensor w = g.parameter("w", {K, N});
  g.output("y", matmul(g.input("x", {M, K}), w));
  Session s = build_inference_session(g);
  EXPECT_GE(s.memory().staged_weights, uint64_t(K * N * 2));  // f16, padded to whole tiles
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  const std::vector<float> x = rng.floats(M * K, -1, 1);
  s.set_input("x", x);
  for (int round = 0; round < 3; ++round) {
    const std::vector<float> wv = rng.floats(K * N, -1, 1);
    s.set_parameter("w", wv);
    s.step();
    if (round == 1) s.step();  // nothing written in between: the staged weights stay
    const std::vector<float> y = s.read_output("y").to_f32();
    for (int64_t m = 0; m < M; m += 7)
      for (int64_t n = 0; n < N; n += 5) {
        double want = 0, scale = 0;
        for (int64_t k = 0; k < K; ++k) {
          want += double(x[static_cast<size_t>(m * K + k)]) * wv[static_cast<size_t>(k * N + n)];
          scale += std::abs(double(x[static_cast<size_t>(m * K + k)]) * wv[static_cast<size_t>(k * N + n)]);
        }
        ASSERT_NEAR(y[static_cast<size_t>(m * N + n)], want, 4e-3 * scale)
            << "round " << round << " (" << m << ", " << n << ")";
      }
  }
}

// Steps `s` on `inputs` and `params`, and checks its output `y` = a · w^T (w [N, K], the graph's
// last product) against the double reference (reference.hpp): every row, every `n_step`-th column,
// within `rtol` of the sum of its products' magnitudes, sum_k |a(m, k) w(n, k)|.
void expect_last_product_near(Session& s, const Graph& g, const std::map<std::string, HostTensor>& inputs,
                              const std::map<std::string, HostTensor>& params, Tensor a, Tensor w, int64_t n_step,
                              double rtol) {
  for (const auto& [name, v] : inputs) s.set_input(name, v);
  for (const auto& [name, v] : params) s.set_parameter(name, v);
  s.step();
  const std::vector<float> out = s.read_output("y").to_f32();
  std::map<std::string, HostTensor> feeds = inputs;
  feeds.insert(params.begin(), params.end());
  const std::vector<RefTensor> ref = evaluate(g, feeds);
  const std::vector<double>& av = ref[static_cast<size_t>(a.id())].v;
  const std::vector<double>& wv = ref[static_cast<size_t>(w.id())].v;
  const std::vector<double>& want = ref[static_cast<size_t>(g.outputs().at(0).second)].v;
  const int64_t K = a.shape().back(), N = w.shape()[0], M = static_cast<int64_t>(av.size()) / K;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; n += n_step) {
      double scale = 0;
      for (int64_t k = 0; k < K; ++k)
        scale += std::abs(av[static_cast<size_t>(m * K + k)] * wv[static_cast<size_t>(n * K + k)]);
      ASSERT_NEAR(out[static_cast<size_t>(m * N + n)], want[static_cast<size_t>(m * N + n)], rtol * scale)
          << "(" << m << ", " << n << ")";
    }
}

// A norm whose rows a tensor-core product reads next stages them itself, at one exponent from
// the bound sqrt(dim) * max |w| + max |b| (stage_rows.glsl): the product, weights staged once,
// needs no StageF16 of its own. Both producers: the norm's own kernel, and split-K's summing pass
// of the product before it (norm_after_matmul). Rows and dimension off the 64 grid (padding
// rows and words), rms_norm and layer_norm with a bias, weights at 1, 1e-25 and 1e25 (outputs
// far outside f16's range), against a double reference. The product's weights, staged once at
// an exponent for each 16 rows along all of K (WHOLE_ROWS; the K loop then holds none), have
// their blocks of 16 rows at 1, 1e8 and 1e-8 (the outputs stay within f32).
TEST(MatMulTierSwitches, NormsStageTheRowsTheirProductReads) {
  ScopedEnv force("MEGANEURA_MATMUL", "coopmat"), precision("MEGANEURA_MATMUL_PRECISION", "high"),
      splits("MEGANEURA_SPLIT_K", "3"), auto_staging("MEGANEURA_COOP_STAGED", std::nullopt);
  if (auto why = unavailable()) GTEST_SKIP() << *why;
  const int64_t M = 100, K = 200, N = 150, H = 288;
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  for (auto [layer, after_product, w_scale] : {std::tuple{false, false, 1.0},
                                               {true, false, 1e-25},
                                               {false, true, 1e25},
                                               {true, true, 1.0},
                                               {false, true, 1e-25}}) {
    SCOPED_TRACE(std::string(layer ? "layer_norm" : "rms_norm") + (after_product ? " after a product" : "") +
                 ", weights x" + std::to_string(w_scale));
    Graph g;
    Tensor x = g.input("x", {M, K});
    if (after_product) x = matmul(g.input("h", {M, H}), g.parameter("w0", {H, K})) + x;
    Tensor w = g.parameter("nw", {K});
    Tensor y = layer ? layer_norm(x, w, g.parameter("nb", {K}), 1e-5f) : rms_norm(x, w, 1e-5f);
    Tensor w1 = g.parameter("w1", {N, K});
    g.output("y", matmul(y, w1, {.transpose_b = true}));
    Session s = build_inference_session(g);
    const std::string listing = s.listing();
    EXPECT_NE(listing.find(after_product ? "split-K sum" : "staged for the product"), std::string::npos) << listing;
    EXPECT_EQ(listing.find("stage A"), std::string::npos) << listing;
    std::map<std::string, HostTensor> inputs{{"x", host_f32({M, K}, rng.floats(M * K, -2, 2))}};
    std::vector<float> w1_values = rng.floats(N * K, -1, 1);
    for (int64_t i = 0; i < N * K; ++i)
      w1_values[static_cast<size_t>(i)] *= std::array{1.0f, 1e8f, 1e-8f}[(i / K / 16) % 3];
    std::map<std::string, HostTensor> params{{"nw", host_f32({K}, scaled(rng.floats(K, -1, 1), w_scale))},
                                             {"w1", host_f32({N, K}, w1_values)}};
    if (after_product) {
      inputs.emplace("h", host_f32({M, H}, rng.floats(M * H, -1, 1)));
      params.emplace("w0", host_f32({H, K}, rng.floats(H * K, -1, 1)));
    }
    if (layer) params.emplace("nb", host_f32({K}, scaled(rng.floats(K, -1, 1), w_scale)));
    expect_last_product_near(s, g, inputs, params, y, w1, 7, 4e-3);
  }
}

// A gated MLP on a norm's rows, y = swiglu(x·gateᵀ, x·upᵀ)·downᵀ (x [M, K], gate/up [F, K],
// down [N, F]), and its check: y against the double reference (expect_last_product_near), with
// random inputs and the up weights scaled by `up_scale` (swiglu values far outside f16's range).
struct GatedMlp {
  Graph g;
  Tensor h, down;
  int64_t M, K, F, N;
};

std::unique_ptr<GatedMlp> gated_mlp(int64_t M, int64_t K, int64_t F, int64_t N) {
  auto m = std::make_unique<GatedMlp>();
  m->M = M, m->K = K, m->F = F, m->N = N;
  const MatMulOptions t{.transpose_b = true};
  Tensor x = rms_norm(m->g.input("x", {M, K}), m->g.parameter("nw", {K}), 1e-5f);
  Tensor gate = matmul(x, m->g.parameter("gate", {F, K}), t);
  Tensor up = matmul(x, m->g.parameter("up", {F, K}), t);
  m->h = swiglu(gate, up);
  m->down = m->g.parameter("down", {N, F});
  m->g.output("y", matmul(m->h, m->down, t));
  return m;
}

void expect_gated_mlp_near(Session& s, GatedMlp& m, Rng& rng, double up_scale) {
  const std::map<std::string, HostTensor> inputs{{"x", host_f32({m.M, m.K}, rng.floats(m.M * m.K, -2, 2))}};
  const std::map<std::string, HostTensor> params{
      {"nw", host_f32({m.K}, rng.floats(m.K, 0.5, 1.5))},
      {"gate", host_f32({m.F, m.K}, rng.floats(m.F * m.K, -1, 1))},
      {"up", host_f32({m.F, m.K}, scaled(rng.floats(m.F * m.K, -1, 1), up_scale))},
      {"down", host_f32({m.N, m.F}, rng.floats(m.N * m.F, -1, 1))}};
  expect_last_product_near(s, m.g, inputs, params, m.h, m.down, 3, 6e-3);
}

// A gated MLP's tensor-core gate/up product stores silu(gate) * up staged for the down product
// (GLU_STAGED): each 16 x 32 block at the exponent of its largest value, which a pair of
// subgroups agrees on. Rows off the 64 grid; the up weights at 1, 1e20 and 1e-20 (swiglu values
// far outside f16's range); against a double reference.
TEST(MatMulTierSwitches, GatedProductsStageTheirSwiglu) {
  ScopedEnv force("MEGANEURA_MATMUL", "coopmat"), precision("MEGANEURA_MATMUL_PRECISION", "high"),
      auto_staging("MEGANEURA_COOP_STAGED", std::nullopt), splits("MEGANEURA_SPLIT_K", std::nullopt),
      coop2("MEGANEURA_COOP2", "0");  // GLU_STAGED is the older kernel's (matmul_coop.glsl)
  if (auto why = unavailable()) GTEST_SKIP() << *why;
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  for (double up_scale : {1.0, 1e20, 1e-20}) {
    SCOPED_TRACE("up weights x" + std::to_string(up_scale));
    const std::unique_ptr<GatedMlp> m = gated_mlp(100, 96, 192, 70);
    Session s = build_inference_session(m->g);
    const std::string listing = s.listing();
    EXPECT_NE(listing.find("staged for the product]"), std::string::npos) << listing;
    EXPECT_EQ(listing.find("stage A"), std::string::npos) << listing;
    expect_gated_mlp_near(s, *m, rng, up_scale);
  }
}

// Builds an inference session for `g` with the workgroup-scope kernel forced (MEGANEURA_COOP2=1),
// or nothing where the device or the build has none (lavapipe; a build without .tools/glslang).
std::optional<Session> coop2_session(const Graph& g) {
  try {
    return build_inference_session(g);
  } catch (const Error& e) {
    const std::string why = e.what();
    if (why.find("VK_NV_cooperative_matrix2") == std::string::npos && why.find("tensor-core") == std::string::npos)
      throw;
    std::printf("  skipped: %s\n", why.c_str());
    return std::nullopt;
  }
}

// Weights whose blocks of 16 rows (of K) sit at 1, 1e8 and 1e-8: staged once at an exponent a
// block, which the workgroup-scope kernel's epilogue undoes element by element.
std::vector<float> blocky_weights(Rng& rng, int64_t rows, int64_t K) {
  std::vector<float> w = rng.floats(rows * K, -1, 1);
  for (int64_t i = 0; i < rows * K; ++i) w[static_cast<size_t>(i)] *= std::array{1.0f, 1e8f, 1e-8f}[(i / K / 16) % 3];
  return w;
}

// MatMulCoop2StagedNV (VK_NV_cooperative_matrix2) on products of a norm's staged rows and weights
// staged once: a q/k/v group of three (tiles straddling the groups' edges), a product with a
// residual, and one whose A is an input staged at one exponent a block of rows (WHOLE_ROWS), its
// columns spread over 1e-3..1e3. Rows, K and N off every tile; against a double reference, each
// output element within 4e-3 of the sum of its products' magnitudes.
TEST(MatMulCoop2, OneExponentProductsMatchReference) {
  ScopedEnv force("MEGANEURA_MATMUL", "coopmat"), precision("MEGANEURA_MATMUL_PRECISION", "high"),
      coop2("MEGANEURA_COOP2", "1"), splits("MEGANEURA_SPLIT_K", "0"),
      staging("MEGANEURA_COOP_STAGED", "1");  // p is too small to stage unasked
  const int64_t M = 100, K = 200, F = 150;
  const MatMulOptions t{.transpose_b = true};
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  Graph g;
  Tensor x = g.input("x", {M, K}), r = g.input("r", {M, 70}), wide = g.input("z", {M, K});
  Tensor y = rms_norm(x, g.parameter("nw", {K}), 1e-5f);
  const std::vector<std::pair<std::string, int64_t>> products = {{"q", F}, {"k", 70}, {"v", 70}};
  for (const auto& [name, n] : products) g.output(name, matmul(y, g.parameter("w" + name, {n, K}), t));
  g.output("o", matmul_add(y, g.parameter("wo", {70, K}), r, t));
  g.output("p", matmul(wide, g.parameter("wp", {70, K}), t));
  std::optional<Session> s = coop2_session(g);
  if (!s) GTEST_SKIP() << "no VK_NV_cooperative_matrix2 here";
  EXPECT_GE(count_lines(s->listing(), "dispatch matmul_coop2_staged_nv"), 3) << s->listing();
  std::vector<float> spread = rng.floats(M * K, -1, 1);
  for (int64_t i = 0; i < M * K; ++i) spread[static_cast<size_t>(i)] *= std::pow(10.0f, float(i % K % 7) - 3.0f);
  std::map<std::string, HostTensor> feeds{{"x", host_f32({M, K}, rng.floats(M * K, -2, 2))},
                                          {"z", host_f32({M, K}, spread)},
                                          {"r", host_f32({M, 70}, rng.floats(M * 70, -1, 1))},
                                          {"nw", host_f32({K}, rng.floats(K, 0.5, 1.5))}};
  for (const char* w : {"wq", "wk", "wv", "wo", "wp"}) {
    const int64_t n = std::string(w) == "wq" ? F : 70;
    feeds.emplace(w, host_f32({n, K}, blocky_weights(rng, n, K)));
  }
  for (const auto& [name, v] : feeds)
    (name[0] == 'w' || name == "nw") ? s->set_parameter(name, v) : s->set_input(name, v);
  s->step();
  const std::vector<RefTensor> ref = evaluate(g, feeds);
  for (const auto& [name, id] : g.outputs()) {
    SCOPED_TRACE(name);
    const std::vector<double>& yv = ref[static_cast<size_t>(name == "p" ? wide.id() : y.id())].v;
    const std::vector<float> out = s->read_output(name).to_f32();
    const std::vector<float>& w = feeds.at("w" + name).to_f32();
    const int64_t N = static_cast<int64_t>(out.size()) / M;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double scale = 0;
        for (int64_t k = 0; k < K; ++k)
          scale += std::abs(yv[static_cast<size_t>(m * K + k)] * w[static_cast<size_t>(n * K + k)]);
        ASSERT_NEAR(out[static_cast<size_t>(m * N + n)], ref[static_cast<size_t>(id)].v[static_cast<size_t>(m * N + n)],
                    4e-3 * scale + 1e-6)
            << "(" << m << ", " << n << ")";
      }
  }
}

// The gate/up pair on MatMulCoop2StagedNV as a group of two products, the swiglu a call of its
// own, the down projection on the older kernel; rows and F off every tile.
TEST(MatMulCoop2, GatedProductsMatchReference) {
  ScopedEnv force("MEGANEURA_MATMUL", "coopmat"), precision("MEGANEURA_MATMUL_PRECISION", "high"),
      coop2("MEGANEURA_COOP2", "1"), splits("MEGANEURA_SPLIT_K", "0"),
      auto_staging("MEGANEURA_COOP_STAGED", std::nullopt);
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  for (double up_scale : {1.0, 1e20, 1e-20}) {
    SCOPED_TRACE("up weights x" + std::to_string(up_scale));
    const std::unique_ptr<GatedMlp> m = gated_mlp(100, 96, 200, 70);
    std::optional<Session> s = coop2_session(m->g);
    if (!s) GTEST_SKIP() << "no VK_NV_cooperative_matrix2 here";
    const std::string listing = s->listing();
    EXPECT_EQ(count_lines(listing, "dispatch matmul_coop2_staged_nv"), 1) << listing;
    EXPECT_NE(listing.find("swiglu"), std::string::npos) << listing;
    expect_gated_mlp_near(*s, *m, rng, up_scale);
  }
}

TEST(MatMulTierSwitches, BadValuesNameTheVariable) {
  for (auto [name, value] : {std::pair{"MEGANEURA_MATMUL", "fast"},
                             {"MEGANEURA_MATMUL_PRECISION", "tf32"},
                             {"MEGANEURA_SPLIT_K", "many"},
                             {"MEGANEURA_FLASH_ATTENTION", "yes"},
                             {"MEGANEURA_SPLIT_K_SUM", "later"},
                             {"MEGANEURA_SCHEDULE", "fast"},
                             {"MEGANEURA_SPLIT_K", "-1"},
                             {"MEGANEURA_SPLIT_K", "65"},
                             {"MEGANEURA_ATTENTION_BLOCKS", "yes"},
                             {"MEGANEURA_COOP_K_STEP", "48"},
                             {"MEGANEURA_COOP2", "yes"},
                             {"MEGANEURA_COOP_STAGED", "yes"},
                             {"MEGANEURA_GEMV_TEAM", "512"},
                             {"MEGANEURA_GEMV_UNROLL", "3"},
                             {"MEGANEURA_GEMV_COLS", "3"},
                             {"MEGANEURA_GEMV_SUBGROUP", "yes"},
                             {"MEGANEURA_LOWER_SKIP", "rotary_in_matmul,fast"},
                             {"MEGANEURA_LOWER_SKIP", "swiglu_in_matmul,"}}) {
    ScopedEnv env(name, value);
    Graph g;
    g.output("y", matmul(g.input("a", {2, 3}), g.input("b", {3, 2})));
    std::string msg = message_of<Error>([&] { build_inference_session(g); });
    EXPECT_NE(msg.find(std::string(name) + "=" + value), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace mntest
