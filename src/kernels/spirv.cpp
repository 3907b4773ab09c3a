// The embedded SPIR-V of each kernel. The headers are generated at build time from
// src/kernels/*.comp by cmake/EmbedKernels.cmake (glslangValidator --vn mn_spv_<name>).
#include "kernels/spirv.hpp"

#include <cstddef>
#include <cstdint>

#include "attention.spv.h"
#include "attention_backward.spv.h"
#include "attention_block.spv.h"
#include "attention_coop_backward_nv.spv.h"
#include "attention_coop_nv.spv.h"
#include "attention_coop_split_nv.spv.h"
#include "cache_write.spv.h"
#include "cast16.spv.h"
#include "clip_scale.spv.h"
#include "cross_entropy_backward.spv.h"
#include "cross_entropy_count.spv.h"
#include "cross_entropy_finish.spv.h"
#include "cross_entropy_rows.spv.h"
#include "decode_step.spv.h"
#include "decode_weights.spv.h"
#include "elementwise.spv.h"
#include "gather.spv.h"
#include "matmul.spv.h"
#include "matmul_coop_nv.spv.h"
#include "matmul_coop_staged_nv.spv.h"
#include "matmul_coop_staged_tall_nv.spv.h"
#include "matmul_gemv.spv.h"
#include "matmul_gemv_subgroup.spv.h"
#include "matmul_split_sum.spv.h"
#include "matmul_split_sum_norm.spv.h"
#include "matmul_split_sum_rotary.spv.h"
#if defined(MEGANEURA_KERNEL_MATMUL_COOP_KHR)
#include "matmul_coop_khr.spv.h"
#define MN_KHR(name) name
#else
#define MN_KHR(name) \
  std::span<const uint32_t> {}
#endif
#if defined(MEGANEURA_KERNEL_MATMUL_COOP2_STAGED_NV)
#include "matmul_coop2_staged_nv.spv.h"
#define MN_COOP2(name) name
#else
#define MN_COOP2(name) \
  std::span<const uint32_t> {}
#endif
#if defined(MEGANEURA_KERNEL_MATMUL_COOP_KHR_BF16)
#include "matmul_coop_khr_bf16.spv.h"
#define MN_KHR_BF16(name) name
#else
#define MN_KHR_BF16(name) \
  std::span<const uint32_t> {}
#endif
#include "norm.spv.h"
#include "norm_backward.spv.h"
#include "norm_weight_grad.spv.h"
#include "one_hot.spv.h"
#include "optimizer.spv.h"
#include "reduce.spv.h"
#include "rotary.spv.h"
#include "rotary_append.spv.h"
#include "scatter_add.spv.h"
#include "softmax.spv.h"
#include "softmax_backward.spv.h"
#include "stage_f16.spv.h"
#include "step_scalars.spv.h"

namespace meganeura::kernels {
namespace {

struct Entry {
  std::string_view name;
  std::span<const uint32_t> code;
};

// No default: a Kernel value without a case is a compile error (-Wswitch promoted below), and
// the static_assert after this function checks that every value up to Count has a name.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
constexpr Entry entry(Kernel k) {
  switch (k) {
    case Kernel::Elementwise: return {"elementwise", mn_spv_elementwise};
    case Kernel::Cast16: return {"cast16", mn_spv_cast16};
    case Kernel::MatMul: return {"matmul", mn_spv_matmul};
    case Kernel::MatMulGemv: return {"matmul_gemv", mn_spv_matmul_gemv};
    case Kernel::MatMulSplitSum: return {"matmul_split_sum", mn_spv_matmul_split_sum};
    case Kernel::MatMulCoopNV: return {"matmul_coop_nv", mn_spv_matmul_coop_nv};
    case Kernel::MatMulCoopKHR: return {"matmul_coop_khr", MN_KHR(mn_spv_matmul_coop_khr)};
    case Kernel::MatMulCoopKHRBf16: return {"matmul_coop_khr_bf16", MN_KHR_BF16(mn_spv_matmul_coop_khr_bf16)};
    case Kernel::Reduce: return {"reduce", mn_spv_reduce};
    case Kernel::Softmax: return {"softmax", mn_spv_softmax};
    case Kernel::Norm: return {"norm", mn_spv_norm};
    case Kernel::CrossEntropyRows: return {"cross_entropy_rows", mn_spv_cross_entropy_rows};
    case Kernel::CrossEntropyFinish: return {"cross_entropy_finish", mn_spv_cross_entropy_finish};
    case Kernel::Gather: return {"gather", mn_spv_gather};
    case Kernel::ScatterAdd: return {"scatter_add", mn_spv_scatter_add};
    case Kernel::OneHot: return {"one_hot", mn_spv_one_hot};
    case Kernel::SoftmaxBackward: return {"softmax_backward", mn_spv_softmax_backward};
    case Kernel::NormBackward: return {"norm_backward", mn_spv_norm_backward};
    case Kernel::NormWeightGrad: return {"norm_weight_grad", mn_spv_norm_weight_grad};
    case Kernel::CrossEntropyCount: return {"cross_entropy_count", mn_spv_cross_entropy_count};
    case Kernel::CrossEntropyBackward: return {"cross_entropy_backward", mn_spv_cross_entropy_backward};
    case Kernel::Optimizer: return {"optimizer", mn_spv_optimizer};
    case Kernel::ClipScale: return {"clip_scale", mn_spv_clip_scale};
    case Kernel::CacheWrite: return {"cache_write", mn_spv_cache_write};
    case Kernel::Attention: return {"attention", mn_spv_attention};
    case Kernel::AttentionBackward: return {"attention_backward", mn_spv_attention_backward};
    case Kernel::AttentionBlock: return {"attention_block", mn_spv_attention_block};
    case Kernel::AttentionCoopNV: return {"attention_coop_nv", mn_spv_attention_coop_nv};
    case Kernel::AttentionCoopSplitNV: return {"attention_coop_split_nv", mn_spv_attention_coop_split_nv};
    case Kernel::Rotary: return {"rotary", mn_spv_rotary};
    case Kernel::MatMulSplitSumNorm: return {"matmul_split_sum_norm", mn_spv_matmul_split_sum_norm};
    case Kernel::MatMulSplitSumRotary: return {"matmul_split_sum_rotary", mn_spv_matmul_split_sum_rotary};
    case Kernel::AttentionBackwardCoopNV: return {"attention_coop_backward_nv", mn_spv_attention_coop_backward_nv};
    case Kernel::StepScalars: return {"step_scalars", mn_spv_step_scalars};
    case Kernel::StageF16: return {"stage_f16", mn_spv_stage_f16};
    case Kernel::MatMulCoopStagedNV: return {"matmul_coop_staged_nv", mn_spv_matmul_coop_staged_nv};
    case Kernel::MatMulCoopStagedTallNV: return {"matmul_coop_staged_tall_nv", mn_spv_matmul_coop_staged_tall_nv};
    case Kernel::MatMulGemvSubgroup: return {"matmul_gemv_subgroup", mn_spv_matmul_gemv_subgroup};
    case Kernel::MatMulCoop2StagedNV: return {"matmul_coop2_staged_nv", MN_COOP2(mn_spv_matmul_coop2_staged_nv)};
    case Kernel::RotaryAppend: return {"rotary_append", mn_spv_rotary_append};
    case Kernel::DecodeStep: return {"decode_step", mn_spv_decode_step};
    case Kernel::DecodeWeights: return {"decode_weights", mn_spv_decode_weights};
    case Kernel::Count: break;
  }
  return {};
}
#pragma GCC diagnostic pop

constexpr bool optional_kernel(Kernel k) {
  return k == Kernel::MatMulCoopKHR || k == Kernel::MatMulCoopKHRBf16 || k == Kernel::MatMulCoop2StagedNV;
}

constexpr bool every_kernel_embedded() {
  for (size_t i = 0; i < size_t(Kernel::Count); ++i) {
    if (entry(Kernel(i)).name.empty()) return false;
    if (entry(Kernel(i)).code.size() < 5 && !optional_kernel(Kernel(i))) return false;  // 5-word SPIR-V header
  }
  return true;
}
static_assert(every_kernel_embedded(), "every Kernel needs a .comp file and a case in entry()");

}  // namespace

std::span<const uint32_t> spirv(Kernel k) { return entry(k).code; }
std::string_view kernel_name(Kernel k) { return entry(k).name; }
bool kernel_built(Kernel k) { return !entry(k).code.empty(); }

}  // namespace meganeura::kernels
