#include "lower/matmul_tiers.hpp"

#include <algorithm>

#include "meganeura/error.hpp"

namespace meganeura::lower {

using kernels::Kernel;

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// [N, K] weights on a device with subgroup arithmetic: teams of whole subgroups, TEAM_COLS
// columns each, so that an invocation keeps unroll x team_cols 16-byte loads on their way and no
// barrier stands between a workgroup's loads and its stores (matmul_gemv_subgroup.comp).
MatMulPlan plan_gemv_subgroup(const MatMulTiers& t, uint64_t N, uint64_t K, uint64_t batch) {
  MatMulPlan plan;
  plan.kernel = Kernel::MatMulGemvSubgroup;
  plan.k_contiguous = 1;
  plan.subgroup = t.gemv_subgroup;
  plan.tile_m = 4;
  plan.team_cols = t.gemv_cols ? t.gemv_cols : 2;
  plan.unroll = t.gemv_unroll ? t.gemv_unroll : K >= 2048 ? 2 : 1;
  plan.team = std::max(t.gemv_team, t.gemv_subgroup);
  // Where tiles would leave fewer than 3 workgroups an SM, wider teams (several subgroups a
  // column set) share K, as long as each invocation still walks 2 rounds of its loads.
  const uint64_t enough = uint64_t{3} * t.multiprocessors;
  auto tile_n = [&] { return (kernels::kWorkgroupSize / plan.team) * plan.team_cols; };
  while (t.gemv_team == 0 && plan.team < kernels::kWorkgroupSize && ceil_div(N, tile_n()) * batch < enough &&
         K >= 4u * 2u * plan.unroll * 2u * plan.team)
    plan.team *= 2;
  plan.tile_n = tile_n();
  return plan;
}

}  // namespace

MatMulPlan plan_matmul(const MatMulTiers& t, uint64_t M, uint64_t N, uint64_t K, uint64_t batch, bool b_k_contiguous,
                       uint64_t k_align) {
  MatMulPlan plan;
  const bool coop = t.coop != MatMulTiers::Coop::None;
  std::string tier = t.force;
  if (tier.empty()) tier = t.gemv && M <= 4 ? "gemv" : coop ? "coopmat" : "tiled";
  if (tier == "gemv" && b_k_contiguous && t.gemv_subgroup) return plan_gemv_subgroup(t, N, K, batch);
  if (tier == "gemv") {
    plan.kernel = Kernel::MatMulGemv;
    plan.k_contiguous = b_k_contiguous ? 1 : 0;
    plan.tile_m = 4;
    plan.tile_n = b_k_contiguous ? 8 : 64;
    // Two loads of B in flight an invocation for rows of 2048 or more (H200, decoding: SmolLM2-1.7B's
    // shape 3.46 -> 3.25 ms a token); at 135M's rows (576, 1536) 2 measured even to 2.6% slower,
    // and 4 or 8 lost at both sizes.
    plan.unroll = t.gemv_unroll ? t.gemv_unroll : K >= 2048 ? 2 : 1;
    // Decoding streams B from memory, and an SM only pulls its share of the bandwidth with enough
    // loads on their way. Rows of 2048 or more start with teams of 64 invocations a column; where
    // a team would leave fewer than 3 workgroups an SM (a [2048, 8192] down projection with 32:
    // 256 workgroups on 132 SMs), wider teams take fewer columns a workgroup, as long as each
    // invocation still walks at least 2 vec4s of K. At most 128, so that a workgroup holds 2
    // columns (GLU's gate and up). (H200: teams of 64 everywhere were faster than this rule at
    // SmolLM2-1.7B's shape and slower at 135M's; 128 everywhere slower at both.)
    const uint64_t enough = uint64_t{3} * t.multiprocessors;
    if (b_k_contiguous && t.gemv_team == 0 && t.multiprocessors > 0 && K >= 2048) {
      plan.team = 64;
      plan.tile_n = 4;
    }
    const uint32_t widest = std::min<uint32_t>(t.gemv_team ? t.gemv_team : 128, 128);
    while (b_k_contiguous && plan.team < widest &&
           (t.gemv_team || (ceil_div(N, plan.tile_n) * batch < enough && K >= 8u * 2u * plan.team))) {
      plan.team *= 2;
      plan.tile_n /= 2;
    }
    return plan;  // its invocations already split K
  }
  if (tier == "coopmat") {
    // 64x64 tiles at every size: a 128x128 variant (4x2 accumulators per subgroup) measured 2.3x
    // slower at 4096³ on an H100 (4.9 ms against 2.1), and was removed; 128x64 (2x2 a subgroup,
    // where tiles gave every SM two workgroups) was slower too on an H200 (SmolLM2-1.7B's training
    // step 55.4 -> 68.2 ms, 135M inference 3.24 -> 3.34 ms).
    using C = MatMulTiers::Coop;
    plan.kernel = t.coop == C::NV ? Kernel::MatMulCoopNV : t.bf16 ? Kernel::MatMulCoopKHRBf16 : Kernel::MatMulCoopKHR;
  }
  // Split-K where the output tiles would leave most of a large GPU (~100+ SMs) idle and K is long
  // enough to share out (at least 128 per split): about 128 workgroups in all. (A gate/up pair of
  // 96 tiles split 2 ways, the swiglu stored by each tile's last split, was no faster on an
  // H100.) A very long K
  // (an LM head's gradient, K = vocabulary) gets about 512, at least 512 deep each: a split's
  // time grows with its K range, and one workgroup per SM leaves its latency unhidden (H100: 211
  // µs at 8 splits for 128 x 576 x 49152).
  uint32_t splits = 1;
  const uint64_t tiles = ceil_div(M, plan.tile_m) * ceil_div(N, plan.tile_n) * batch;
  if (t.split_k > 0)
    splits = static_cast<uint32_t>(t.split_k);
  else if (t.split_k < 0 && tiles < 96 && K >= 8192)
    splits = static_cast<uint32_t>(std::min<uint64_t>({ceil_div(512, tiles), K / 512, 64}));
  else if (t.split_k < 0 && tiles < 96 && K >= 256)
    splits = static_cast<uint32_t>(std::min<uint64_t>({ceil_div(128, tiles), K / 128, 16}));
  // K steps of 64 where every workgroup gets an SM of its own (with as many splits as fit): a
  // workgroup's time is its steps' load latency, and 64-deep steps pay it half as often (SmolLM2's
  // gate/up pair on an H100: 22.7 -> 18.2 µs). Where workgroups share SMs the step's registers
  // halve how many fit, and the 32-deep step is faster (the LM head: 148 against 168 µs).
  const bool k64_fits = k_align == 0 || k_align % 64 == 0;
  if (coop && k64_fits && t.k_step == 64) plan.k_step = 64;
  if (coop && k64_fits && t.k_step == 0 && t.split_k < 0 && t.multiprocessors > 0 && tiles <= t.multiprocessors &&
      K < 8192) {
    splits = std::max<uint32_t>(1, std::min<uint32_t>(splits, static_cast<uint32_t>(t.multiprocessors / tiles)));
    plan.k_step = 64;
  }
  plan.k_chunk = static_cast<uint32_t>(ceil_div(ceil_div(K, std::max<uint32_t>(splits, 1)), plan.k_step) * plan.k_step);
  plan.splits = plan.k_chunk ? static_cast<uint32_t>(ceil_div(K, plan.k_chunk)) : 1;
  if (plan.splits <= 1) {
    plan.splits = 1;
    plan.k_chunk = static_cast<uint32_t>(K);
  }
  return plan;
}

MatMulTiers staging_in_kernel(MatMulTiers tiers) {
  if (tiers.k_step == 0) tiers.k_step = 32;
  return tiers;
}

}  // namespace meganeura::lower
