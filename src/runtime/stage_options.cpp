#include "runtime/stage_options.hpp"

#include <algorithm>
#include <cstdio>

#include "kernels/spirv.hpp"
#include "lower/fuse/pass.hpp"
#include "meganeura/error.hpp"
#include "runtime/optimize_options.hpp"
#include "util/env.hpp"
#include "util/log_topic.hpp"

namespace meganeura::runtime {

using kernels::Kernel;
using util::env_choice;
using util::env_on;

namespace {

// The fewest rows and K at which a one-exponent staged product runs on workgroup-scope matrices
// unasked. With fewer rows the driver's tiles wait on their loads at one workgroup an SM (the 1.7B
// shape's q/k/v at 128 tokens: 73 against 56 us on an H100); with K of 576 (SmolLM2-135M at
// 8 x 512 tokens) every product was slower (q/k/v 86 against 63 us), with K of 2048 (the 1.7B
// shape) every one faster (docs/performance.md, "Cooperative matrix 2").
constexpr uint32_t kCoop2MinRows = 1024, kCoop2MinK = 2048;

bool offers(const DeviceInfo& d, const std::string& shape) {
  return std::find(d.coopmat_shapes.begin(), d.coopmat_shapes.end(), shape) != d.coopmat_shapes.end();
}

// The kernels take 8 subgroups of 32 (their fragment layout) and 16x16x16 fragments.
lower::MatMulTiers::Coop coop_of(const DeviceInfo& d, bool bf16) {
  if (d.subgroup_size != 32) return lower::MatMulTiers::Coop::None;
  if (bf16) {
    return d.coopmat_khr && d.bf16 && kernels::kernel_built(Kernel::MatMulCoopKHRBf16) &&
                   offers(d, "16x16x16 bf16*bf16->f32")
               ? lower::MatMulTiers::Coop::KHR
               : lower::MatMulTiers::Coop::None;
  }
  if (!d.fp16 || !offers(d, "16x16x16 f16*f16->f32")) return lower::MatMulTiers::Coop::None;
  if (d.coopmat_nv) return lower::MatMulTiers::Coop::NV;
  if (d.coopmat_khr && kernels::kernel_built(Kernel::MatMulCoopKHR)) return lower::MatMulTiers::Coop::KHR;
  return lower::MatMulTiers::Coop::None;
}

}  // namespace

std::string matmul_precision() { return env_choice("MEGANEURA_MATMUL_PRECISION", {"highest", "high", "medium"}); }

lower::MatMulTiers matmul_tiers(const DeviceInfo& device) {
  lower::MatMulTiers t;
  // PyTorch's float32 matmul precision levels (torch.set_float32_matmul_precision): highest is
  // exact f32; high (the default) is TF32's class, f16 with 11 significant bits scaled per block
  // into f32's range; medium allows bf16 (8 bits), where the KHR bf16 kernel was built and the
  // device offers it, else it is high.
  const std::string precision = matmul_precision();
  if (precision == "medium" && coop_of(device, true) != lower::MatMulTiers::Coop::None) t.bf16 = true;
  if (precision != "highest" && env_on("MEGANEURA_COOPMAT")) t.coop = coop_of(device, t.bf16);
  t.gemv = env_on("MEGANEURA_GEMV");
  if (!util::env("MEGANEURA_SPLIT_K").empty())
    t.split_k =
        static_cast<int>(util::env_number("MEGANEURA_SPLIT_K", 64, 0, "0 (off) or a number of splits up to 64"));
  t.split_finish = env_choice("MEGANEURA_SPLIT_K_SUM", {"kernel", "pass"}) != "pass";
  const std::string flash = env_choice("MEGANEURA_FLASH_ATTENTION", {"0", "1", "blocks", "split"});
  t.coop_attention = flash != "0" && t.coop == lower::MatMulTiers::Coop::NV && !t.bf16;
  t.force_coop_attention = !flash.empty() && flash != "0";
  if (flash == "blocks" || flash == "split") t.attention_kernel = flash;
  if (t.force_coop_attention && !t.coop_attention)
    throw Error("MEGANEURA_FLASH_ATTENTION=" + flash + ": " + device.name +
                " has no usable tensor-core attention (needs " +
                "VK_NV_cooperative_matrix with 16x16x16 f16 fragments and subgroups of 32, and matmul precision high)");
  t.attention_blocks = env_choice("MEGANEURA_ATTENTION_BLOCKS", {"0", "1"});
  if (!util::env("MEGANEURA_ATTENTION_SPLIT").empty())
    t.attention_key_splits = static_cast<int>(util::env_number(
        "MEGANEURA_ATTENTION_SPLIT", 64, 0, "0 (never) or the workgroups a row's keys split over, up to 64"));
  t.attention_split_min_keys = static_cast<uint32_t>(
      util::env_number("MEGANEURA_ATTENTION_SPLIT_KEYS", 1u << 20, 0, "the fewest keys a split takes, 1 to 1048576"));
  t.shared_memory = device.shared_memory;
  t.multiprocessors = device.multiprocessors;
  if (const std::string k = env_choice("MEGANEURA_COOP_K_STEP", {"32", "64"}); !k.empty())
    t.k_step = k == "32" ? 32 : 64;
  if (const std::string s = env_choice("MEGANEURA_COOP_STAGED", {"0", "1"}); !s.empty())
    t.staged = s == "1" ? lower::MatMulTiers::Staged::Always : lower::MatMulTiers::Staged::Never;
  // Workgroup-scope matrices for the staged products at one exponent along K, where they have
  // enough rows to be faster than MatMulCoopStagedNV (docs/performance.md, "Cooperative matrix 2");
  // MEGANEURA_COOP2=1 at any size (an error where the device or the build has none), 0 never.
  const std::string coop2 = env_choice("MEGANEURA_COOP2", {"0", "1"});
  const bool coop2_here = t.coop == lower::MatMulTiers::Coop::NV && !t.bf16 && device.coopmat2_nv &&
                          kernels::kernel_built(Kernel::MatMulCoop2StagedNV);
  if (coop2 == "1" && !coop2_here)
    throw Error("MEGANEURA_COOP2=1: " + device.name + " has no usable VK_NV_cooperative_matrix2 matmul (" +
                (kernels::kernel_built(Kernel::MatMulCoop2StagedNV)
                     ? "needs the extension's workgroup scope, tensor addressing and per-element operations, and "
                       "the tensor-core tier at precision high"
                     : "this build has no cooperative-matrix-2 kernels: scripts/fetch_glslang.sh, then rebuild") +
                ")");
  t.coop2 = coop2_here && coop2 != "0";
  t.coop2_min_rows = coop2 == "1" ? 0 : kCoop2MinRows;
  t.coop2_min_k = coop2 == "1" ? 0 : kCoop2MinK;
  // Teams that add up through subgroup arithmetic where the device has it (MEGANEURA_GEMV_SUBGROUP=0:
  // in shared memory, matmul_gemv.comp; a size: plan for that size instead of the device's, tests).
  const std::string teams = env_choice("MEGANEURA_GEMV_SUBGROUP", {"0", "1", "4", "8", "16", "32", "64", "128"});
  const bool sized = !teams.empty() && teams != "0" && teams != "1";
  const uint32_t sg = sized ? static_cast<uint32_t>(std::stoul(teams)) : device.subgroup_size;
  if (device.subgroup_arithmetic && sg >= 4 && sg <= 128 && (sg & (sg - 1)) == 0 && teams != "0") t.gemv_subgroup = sg;
  if (const std::string cols = env_choice("MEGANEURA_GEMV_COLS", {"1", "2", "4"}); !cols.empty())
    t.gemv_cols = static_cast<uint32_t>(std::stoul(cols));
  if (const std::string team = env_choice("MEGANEURA_GEMV_TEAM", {"32", "64", "128", "256"}); !team.empty())
    t.gemv_team = static_cast<uint32_t>(std::stoul(team));
  if (const std::string unroll = env_choice("MEGANEURA_GEMV_UNROLL", {"1", "2", "4", "8"}); !unroll.empty())
    t.gemv_unroll = static_cast<uint32_t>(std::stoul(unroll));
  t.force = env_choice("MEGANEURA_MATMUL", {"tiled", "gemv", "coopmat"});
  if (t.force == "coopmat" && t.coop == lower::MatMulTiers::Coop::None)
    throw Error("MEGANEURA_MATMUL=coopmat: " + device.name + " has no usable tensor-core matmul (" +
                (precision == "highest" ? "MEGANEURA_MATMUL_PRECISION=highest"
                                        : "needs cooperative matrices with 16x16x16 " +
                                              std::string(t.bf16 ? "bf16" : "f16") + " fragments and subgroups of 32") +
                ")");
  return t;
}

bool optimizing(bool option) { return option && env_on("MEGANEURA_OPTIMIZE"); }

void log_optimize(const std::string& report) {
  if (util::log_topic("optimize")) std::fprintf(stderr, "meganeura: %s\n", report.c_str());
}

// MEGANEURA_LOWER_SKIP: fusion passes not to run, comma-separated (each fusion measured off).
static std::vector<std::string> skipped_passes() {
  std::vector<std::string> names;
  const std::string list = util::env("MEGANEURA_LOWER_SKIP");
  for (size_t at = 0; !list.empty() && at <= list.size();) {
    const size_t end = std::min(list.find(',', at), list.size());
    names.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  std::vector<std::string> known;
  std::string all;
  for (const lower::Pass& pass : lower::fusion_passes()) {
    known.emplace_back(pass.name);
    all += (all.empty() ? "" : ", ") + known.back();
  }
  for (const std::string& name : names)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw Error("MEGANEURA_LOWER_SKIP=" + list + ": no fusion pass '" + name + "' (the passes: " + all + ")");
  return names;
}

lower::LowerOptions lower_options(const DeviceInfo& device, bool optimizing) {
  lower::LowerOptions o;
  o.fuse = optimizing;
  o.fuse_elementwise = env_on("MEGANEURA_FUSE_ELEMENTWISE");
  o.group_matmuls = env_on("MEGANEURA_HORIZONTAL_FUSION");
  o.log = util::log_topic("lower");
  o.skip_passes = skipped_passes();
  o.matmul = matmul_tiers(device);
  o.cpu_device = device.type == "CPU";
  // A CPU implementation runs a workgroup a core: a few tiles fill it, and split-K's partials
  // only cost (a 512 x 512 x 512 product on lavapipe: 99 ms whole, 253 ms in two splits).
  if (o.cpu_device && o.matmul.split_k < 0) o.matmul.split_k = 0;
  return o;
}

uint64_t update_pack_bytes(uint64_t largest_buffer) {
  const uint64_t mib =
      util::env_number("MEGANEURA_UPDATE_PACK_MIB", uint64_t{1} << 20, 4, "a number of MiB (0: as large as a buffer)");
  return mib == 0 ? largest_buffer : std::min(mib << 20, largest_buffer);
}

uint64_t upload_chunk_bytes() {
  return util::env_number("MEGANEURA_UPLOAD_CHUNK_KIB", uint64_t{1} << 30, 64 << 10, "a number of KiB") << 10;
}

}  // namespace meganeura::runtime
