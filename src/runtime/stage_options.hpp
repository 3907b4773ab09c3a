// Stage options from the environment: the one place the MEGANEURA_* switches that shape a
// session's lowering are read (docs/environment.md). Stages themselves read none: lowering gets
// a LowerOptions, the optimizer its arguments.
#pragma once
#include <string>

#include "lower/lowered.hpp"
#include "meganeura/device.hpp"

namespace meganeura::runtime {

// The tiers of `device` as the environment allows:
//   MEGANEURA_MATMUL_PRECISION  highest (exact f32: no tensor cores), high (default: tensor cores,
//                               f16 scaled per block into f32's range) or medium (bf16 where the
//                               KHR bf16 kernel was built, else high)
//   MEGANEURA_COOPMAT=0, MEGANEURA_GEMV=0   turn that tier off
//   MEGANEURA_SPLIT_K           0 (off), or a number of splits to force
//   MEGANEURA_SPLIT_K_SUM       kernel (default: the product's last split adds the partials) or
//                               pass (a summing dispatch after it)
//   MEGANEURA_MATMUL            tiled | gemv | coopmat: force one tier (tests, benchmarks)
//   MEGANEURA_FLASH_ATTENTION   0: attention never on tensor cores; 1: wherever its shape allows
//                               (an error where the device has none); blocks / split: also pick
//                               the forward kernel (128-row blocks, or keys split; tests)
//   MEGANEURA_COOP_K_STEP       32 or 64: the tensor-core kernels' K step for every product (unset:
//                               for products of staged operands 64 where the workgroups fit one
//                               per SM, known from the device; 32 where the kernel stages)
//   MEGANEURA_COOP_STAGED       1: f16 tensor-core products read operands staged before them
//                               (StageF16), 0: never; unset: where that pays (large products)
//   MEGANEURA_ATTENTION_BLOCKS  0: the exact attention forward always one workgroup per row; 1:
//                               blocks of rows wherever the head dims allow (tests)
// Throws Error on a value it does not know, or on a forced tier the device lacks.
lower::MatMulTiers matmul_tiers(const DeviceInfo& device);

// MEGANEURA_MATMUL_PRECISION as set: "highest", "high", "medium", or "" (the default, high);
// an Error on any other value. The persistent decoder's weights follow it too.
std::string matmul_precision();

// Lowering's options for a session on `device`; `optimizing`: the session runs the optimizer,
// whose fusions lowering's fusion passes belong to. Also reads MEGANEURA_FUSE_ELEMENTWISE=0,
// MEGANEURA_HORIZONTAL_FUSION=0 (turn one family of passes off) and MEGANEURA_LOG=lower.
lower::LowerOptions lower_options(const DeviceInfo& device, bool optimizing);

// The most bytes of parameters one optimizer update dispatch covers: MEGANEURA_UPDATE_PACK_MIB
// (default 4; 0: as large as the device's largest buffer, `largest_buffer`), at most that.
uint64_t update_pack_bytes(uint64_t largest_buffer);
// MEGANEURA_UPLOAD_CHUNK_KIB: the staging chunk Session::set_parameters streams weights through.
uint64_t upload_chunk_bytes();

}  // namespace meganeura::runtime
