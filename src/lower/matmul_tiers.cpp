#include "lower/matmul_tiers.hpp"

#include <algorithm>

#include "kernels/spirv.hpp"
#include "meganeura/error.hpp"
#include "util/env.hpp"

namespace meganeura::lower {

using kernels::Kernel;
using util::env_choice;
using util::env_on;

namespace {

bool offers(const DeviceInfo& d, const std::string& shape) {
  return std::find(d.coopmat_shapes.begin(), d.coopmat_shapes.end(), shape) != d.coopmat_shapes.end();
}

// The kernels take 8 subgroups of 32 (their fragment layout) and 16x16x16 fragments.
MatMulTiers::Coop coop_of(const DeviceInfo& d, bool bf16) {
  if (d.subgroup_size != 32) return MatMulTiers::Coop::None;
  if (bf16) {
    return d.coopmat_khr && d.bf16 && kernels::kernel_built(Kernel::MatMulCoopKHRBf16) &&
                   offers(d, "16x16x16 bf16*bf16->f32")
               ? MatMulTiers::Coop::KHR
               : MatMulTiers::Coop::None;
  }
  if (!d.fp16 || !offers(d, "16x16x16 f16*f16->f32")) return MatMulTiers::Coop::None;
  if (d.coopmat_nv) return MatMulTiers::Coop::NV;
  if (d.coopmat_khr && kernels::kernel_built(Kernel::MatMulCoopKHR)) return MatMulTiers::Coop::KHR;
  return MatMulTiers::Coop::None;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

MatMulTiers matmul_tiers(const DeviceInfo& device) {
  MatMulTiers t;
  // PyTorch's float32 matmul precision levels (torch.set_float32_matmul_precision): highest is
  // exact f32; high (the default) is TF32's class, f16 with 11 significant bits scaled per block
  // into f32's range; medium allows bf16 (8 bits), where the KHR bf16 kernel was built and the
  // device offers it, else it is high.
  const std::string precision = env_choice("MEGANEURA_MATMUL_PRECISION", {"highest", "high", "medium"});
  if (precision == "medium" && coop_of(device, true) != MatMulTiers::Coop::None) t.bf16 = true;
  if (precision != "highest" && env_on("MEGANEURA_COOPMAT")) t.coop = coop_of(device, t.bf16);
  t.gemv = env_on("MEGANEURA_GEMV");
  if (!util::env("MEGANEURA_SPLIT_K").empty())
    t.split_k = static_cast<int>(util::env_number("MEGANEURA_SPLIT_K", 64, 0, "0 (off) or a number of splits up to 64"));
  t.split_finish = env_choice("MEGANEURA_SPLIT_K_SUM", {"kernel", "pass"}) != "pass";
  const std::string flash = env_choice("MEGANEURA_FLASH_ATTENTION", {"0", "1", "blocks", "split"});
  t.coop_attention = flash != "0" && t.coop == MatMulTiers::Coop::NV && !t.bf16;
  t.force_coop_attention = !flash.empty() && flash != "0";
  if (flash == "blocks" || flash == "split") t.attention_kernel = flash;
  if (t.force_coop_attention && !t.coop_attention)
    throw Error("MEGANEURA_FLASH_ATTENTION=" + flash + ": " + device.name + " has no usable tensor-core attention (needs " +
                "VK_NV_cooperative_matrix with 16x16x16 f16 fragments and subgroups of 32, and matmul precision high)");
  t.attention_blocks = env_choice("MEGANEURA_ATTENTION_BLOCKS", {"0", "1"});
  t.shared_memory = device.shared_memory;
  t.multiprocessors = device.multiprocessors;
  if (const std::string k = env_choice("MEGANEURA_COOP_K_STEP", {"32", "64"}); !k.empty()) t.k_step = k == "32" ? 32 : 64;
  t.force = env_choice("MEGANEURA_MATMUL", {"tiled", "gemv", "coopmat"});
  if (t.force == "coopmat" && t.coop == MatMulTiers::Coop::None)
    throw Error("MEGANEURA_MATMUL=coopmat: " + device.name + " has no usable tensor-core matmul (" +
                (precision == "highest" ? "MEGANEURA_MATMUL_PRECISION=highest" : "needs cooperative matrices with 16x16x16 " +
                 std::string(t.bf16 ? "bf16" : "f16") + " fragments and subgroups of 32") + ")");
  return t;
}

MatMulPlan plan_matmul(const MatMulTiers& t, uint64_t M, uint64_t N, uint64_t K, uint64_t batch, bool b_k_contiguous,
                       uint64_t k_align) {
  MatMulPlan plan;
  const bool coop = t.coop != MatMulTiers::Coop::None;
  std::string tier = t.force;
  if (tier.empty()) tier = t.gemv && M <= 4 ? "gemv" : coop ? "coopmat" : "tiled";
  if (tier == "gemv") {
    plan.kernel = Kernel::MatMulGemv;
    plan.k_contiguous = b_k_contiguous ? 1 : 0;
    plan.tile_m = 4;
    plan.tile_n = b_k_contiguous ? 8 : 64;
    return plan;  // its invocations already split K
  }
  if (tier == "coopmat") {
    // 64x64 tiles at every size: a 128x128 variant (4x2 accumulators per subgroup) measured 2.3x
    // slower at 4096³ on an H100 (4.9 ms against 2.1), and was removed.
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
  if (t.split_k > 0) splits = static_cast<uint32_t>(t.split_k);
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

}  // namespace meganeura::lower
