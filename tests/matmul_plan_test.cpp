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
