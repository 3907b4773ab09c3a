// lower::plan_matmul's tensor-core K step: 64 where a product's workgroups get an SM each (with
// its splits cut to fit), 32 where workgroups share SMs, K is very long, the SM count is unknown,
// or a sum of products' K groups are not multiples of 64; MEGANEURA_COOP_K_STEP forces either.
#include <gtest/gtest.h>

#include "lower/matmul_tiers.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using lower::MatMulTiers;
using lower::plan_matmul;

MatMulTiers h100() {
  MatMulTiers t;
  t.coop = MatMulTiers::Coop::NV;
  t.multiprocessors = 132;
  return t;
}

TEST(MatMulPlan, KStepOf64WhereEveryWorkgroupHasAnSM) {
  // SmolLM2 at 128 tokens: the gate/up pair (96 tiles, unsplit) and the down projection (18
  // tiles: 8 splits would make 144 workgroups; 7 fit, a 64-deep chunk of 256 makes 6).
  auto glu = plan_matmul(h100(), 128, 2 * 1536, 576, 1, true);
  EXPECT_EQ(glu.k_step, 64u);
  EXPECT_EQ(glu.splits, 1u);
  auto down = plan_matmul(h100(), 128, 576, 1536, 1, true);
  EXPECT_EQ(down.k_step, 64u);
  EXPECT_EQ(down.k_chunk % 64, 0u);
  EXPECT_LE(down.splits * 18, 132u);
  EXPECT_EQ(down.splits, 6u);
  // Every split's range is whole 64-deep steps but the last.
  EXPECT_GE(uint64_t{down.k_chunk} * down.splits, 1536u);
  EXPECT_LT(uint64_t{down.k_chunk} * (down.splits - 1), 1536u);
}

TEST(MatMulPlan, KStepOf32WhereWorkgroupsShareSMsOrTheDeviceDoesNotSay) {
  EXPECT_EQ(plan_matmul(h100(), 128, 49152, 576, 1, true).k_step, 32u);  // the LM head: 1536 tiles
  // Very long K (the LM head's d x): ~512 workgroups (29 splits of 18 tiles) stay.
  EXPECT_EQ(plan_matmul(h100(), 128, 576, 49152, 1, false).k_step, 32u);
  EXPECT_EQ(plan_matmul(h100(), 128, 576, 49152, 1, false).splits, 29u);
  MatMulTiers unknown = h100();
  unknown.multiprocessors = 0;
  EXPECT_EQ(plan_matmul(unknown, 128, 3072, 576, 1, true).k_step, 32u);
  // A sum of products whose K groups are multiples of 32 only.
  EXPECT_EQ(plan_matmul(h100(), 128, 576, 96 + 480, 1, false, 96).k_step, 32u);
  EXPECT_EQ(plan_matmul(h100(), 128, 576, 192 + 384, 1, false, 192).k_step, 64u);
  MatMulTiers tiled = h100();
  tiled.coop = MatMulTiers::Coop::None;
  EXPECT_EQ(plan_matmul(tiled, 128, 3072, 576, 1, true).k_step, 32u);
}

TEST(MatMulPlan, TheEnvironmentForcesEitherStep) {
  MatMulTiers t = h100();
  t.k_step = 32;
  EXPECT_EQ(plan_matmul(t, 128, 3072, 576, 1, true).k_step, 32u);
  t.k_step = 64;
  EXPECT_EQ(plan_matmul(t, 128, 49152, 576, 1, true).k_step, 64u);
  EXPECT_EQ(plan_matmul(t, 128, 576, 96 + 480, 1, false, 96).k_step, 32u);  // unless a K group forbids it
}

}  // namespace
}  // namespace mntest

namespace mntest {
namespace {

// The GEMV's team (invocations a column, [N, K] weights): 64 for rows of 2048 or more, wider
// while the workgroups (256 / team columns each) would leave fewer than 3 an SM and each
// invocation still walks 2 vec4s; 32 where the SM count is unknown; MEGANEURA_GEMV_TEAM's value
// as given.
TEST(MatMulPlan, GemvTeamsWidenWhereColumnsAreFew) {
  auto team = [](const MatMulTiers& t, uint64_t n, uint64_t k) {
    const auto plan = plan_matmul(t, 1, n, k, 1, true);
    EXPECT_EQ(plan.kernel, kernels::Kernel::MatMulGemv);
    EXPECT_EQ(plan.tile_n * plan.team, 256u);
    return plan.team;
  };
  const MatMulTiers h = h100();
  EXPECT_EQ(team(h, 6144, 2048), 64u);  // SmolLM2-1.7B's q/k/v: 1536 workgroups
  EXPECT_EQ(team(h, 2048, 8192), 64u);  // its down projection: 512 workgroups
  EXPECT_EQ(team(h, 49152, 576), 32u);  // SmolLM2-135M's LM head: 6144 workgroups
  EXPECT_EQ(team(h, 960, 576), 64u);    // its q/k/v: 240 workgroups, K too short for 128
  EXPECT_EQ(team(h, 576, 1536), 128u);  // its down projection: 288 workgroups
  MatMulTiers unknown = h;
  unknown.multiprocessors = 0;
  EXPECT_EQ(team(unknown, 2048, 8192), 32u);
  MatMulTiers forced = h;
  forced.gemv_team = 128;
  EXPECT_EQ(team(forced, 49152, 576), 128u);
  // [K, N] weights keep their 4 slices of k, 64 columns a workgroup.
  EXPECT_EQ(plan_matmul(h, 1, 2048, 8192, 1, false).tile_n, 64u);
}

// The GEMV's loads of B in flight an invocation: 2 for rows of 2048 or more, 1 below;
// MEGANEURA_GEMV_UNROLL's value as given.
TEST(MatMulPlan, GemvLoadsTwoAtATimeOnLongRows) {
  const MatMulTiers h = h100();
  EXPECT_EQ(plan_matmul(h, 1, 6144, 2048, 1, true).unroll, 2u);  // SmolLM2-1.7B's q/k/v
  EXPECT_EQ(plan_matmul(h, 1, 2048, 8192, 1, true).unroll, 2u);  // its down projection
  EXPECT_EQ(plan_matmul(h, 1, 576, 1536, 1, true).unroll, 1u);   // SmolLM2-135M's down projection
  MatMulTiers forced = h;
  forced.gemv_unroll = 8;
  EXPECT_EQ(plan_matmul(forced, 1, 576, 1536, 1, true).unroll, 8u);
}

// With subgroup arithmetic ([N, K] weights): teams of one subgroup, 2 columns each (a gate/up
// pair's gate and up), 256 / team * 2 columns a workgroup; a team takes more subgroups while the
// workgroups would leave fewer than 3 an SM and each invocation still walks 2 rounds of its
// loads; MEGANEURA_GEMV_TEAM and MEGANEURA_GEMV_COLS as given. [K, N] weights keep
// matmul_gemv.comp.
TEST(MatMulPlan, GemvSubgroupTeams) {
  MatMulTiers t = h100();
  t.gemv_subgroup = 32;
  auto plan = [&](const MatMulTiers& tiers, uint64_t n, uint64_t k) {
    const auto p = plan_matmul(tiers, 1, n, k, 1, true);
    EXPECT_EQ(p.kernel, kernels::Kernel::MatMulGemvSubgroup);
    EXPECT_EQ(p.subgroup, 32u);
    EXPECT_EQ(p.tile_n, 256u / p.team * p.team_cols);
    return p;
  };
  const auto qkv = plan(t, 6144, 2048);  // SmolLM2-1.7B's q/k/v: 384 workgroups at 32, 768 at 64
  EXPECT_EQ(qkv.team, 64u);
  EXPECT_EQ(qkv.team_cols, 2u);
  EXPECT_EQ(qkv.unroll, 2u);
  EXPECT_EQ(plan(t, 2048, 8192).team, 128u);  // its down projection: 128 workgroups at 32, 512 at 128
  EXPECT_EQ(plan(t, 576, 1536).team, 128u);   // SmolLM2-135M's down projection: K too short for 256
  EXPECT_EQ(plan(t, 49152, 576).team, 32u);   // its LM head: 3072 workgroups
  MatMulTiers unknown = t;
  unknown.multiprocessors = 0;
  EXPECT_EQ(plan(unknown, 2048, 8192).team, 32u);
  MatMulTiers forced = t;
  forced.gemv_team = 64;
  forced.gemv_cols = 4;
  const auto f = plan(forced, 49152, 576);
  EXPECT_EQ(f.team, 64u);
  EXPECT_EQ(f.tile_n, 16u);
  EXPECT_EQ(plan_matmul(t, 1, 2048, 8192, 1, false).kernel, kernels::Kernel::MatMulGemv);
}

}  // namespace
}  // namespace mntest
