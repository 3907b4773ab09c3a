// Which kernel runs a matmul: the tiers a device offers (sessions fill them from the device and
// the environment, runtime/stage_options.hpp) and the choice for one product's shape
// (docs/performance.md, "Matmul tiers").
#pragma once
#include <cstdint>
#include <string>

#include "kernels/kernel_abi.hpp"

namespace meganeura::lower {

struct MatMulTiers {
  enum class Coop : uint8_t { None, NV, KHR };
  Coop coop = Coop::None;  // tensor cores, f32 operands staged to scaled f16 (or bf16)
  bool bf16 = false;       // stage as bf16 (KHR only: precision medium)
  bool gemv = true;        // a few rows: stream B once (exact f32)
  int split_k = -1;        // -1: where tiles would leave the GPU idle; 0: never; n: n splits
  // Split-K's partials summed by the last split of each tile to finish, in the product's own
  // dispatch (false: a summing pass after it, as a fused norm or rotary always gets).
  bool split_finish = true;
  std::string force;  // "", "tiled", "gemv" or "coopmat": every matmul on that tier
  // Attention forward on tensor cores (NV cooperative matrices, f16 staging) where its shape
  // allows; force_coop_attention: everywhere it allows, or an error.
  bool coop_attention = false;
  bool force_coop_attention = false;
  std::string attention_kernel;  // forced with it: "" (either), "blocks" (128-row) or "split"
  // The exact attention forward for many rows (AttentionBlock): "" where it pays (at least
  // kAttentionBlockRows query rows), "0" never, "1" wherever the head dims and shared memory allow.
  std::string attention_blocks;
  // The exact forward of few query rows (decoding) with its keys split over workgroups (KEY_SPLIT
  // of attention.comp): -1 where a workgroup a row would leave SMs idle and the keys are many; 0
  // never; n: n splits of at least one key wherever the per-row kernel runs (tests).
  int attention_key_splits = -1;
  // The fewest keys a split takes: 0 picks (kAttentionSplitMinKeys unforced, 1 where
  // attention_key_splits forces the splits); a row's keys take fewer splits where they are few.
  uint32_t attention_split_min_keys = 0;
  uint64_t shared_memory = 0;    // bytes a workgroup may use (maxComputeSharedMemorySize)
  uint32_t multiprocessors = 0;  // the device's SMs, 0 if unknown
  // The tensor-core kernels' K step: 0 picks 64 where a product's workgroups fit one per SM
  // (fewer, longer steps: the latency of each step's loads is paid half as often), else 32.
  uint32_t k_step = 0;
  // f16 tensor-core products that read operands staged before them (StageF16: each value
  // converted once, not once per tile that reads it) instead of staging inside the product:
  // Auto where that pays (emit_staging.cpp, stage_before).
  enum class Staged : uint8_t { Auto, Never, Always };
  Staged staged = Staged::Auto;
  // Staged products at one exponent along K on workgroup-scope matrices (MatMulCoop2StagedNV:
  // VK_NV_cooperative_matrix2 and the kernel built) where they have at least coop2_min_rows rows
  // and coop2_min_k of K (docs/performance.md, "Cooperative matrix 2").
  bool coop2 = false;
  uint32_t coop2_min_rows = 0, coop2_min_k = 0;
  // The GEMV's invocations a column for [N, K] weights: 0 picks (a subgroup, or 32 in shared
  // memory, wider where few columns would leave SMs idle: up to 256 with subgroups, 128 without);
  // 32, 64, 128 or 256 everywhere (tests and measurements; 128 at most in shared memory).
  uint32_t gemv_team = 0;
  // The GEMV's 16-byte loads of B an invocation issues before it multiplies: 0 picks (2 for rows
  // of 2048 or more, else 1); 1, 2, 4 or 8 everywhere (tests and measurements).
  uint32_t gemv_unroll = 0;
  // The device's subgroup size where the GEMV's teams add up through subgroup arithmetic
  // (MatMulGemvSubgroup): a power of two from 4 to 128; 0: teams add up in shared memory.
  uint32_t gemv_subgroup = 0;
  // MatMulGemvSubgroup's columns a team: 0 picks; 1, 2 or 4 everywhere (tests, measurements).
  uint32_t gemv_cols = 0;
};

// How one product runs.
struct MatMulPlan {
  kernels::Kernel kernel = kernels::Kernel::MatMul;
  uint32_t tile_m = 64, tile_n = 64;
  uint32_t splits = 1, k_chunk = 0;  // split-K: K ranges of k_chunk, summed in the kernel or by a second pass
  uint32_t k_contiguous = 0;         // gemv: B walks k contiguously (spec 5)
  uint32_t team = 32;                // gemv with k_contiguous: invocations a column (spec 11), 32..256
  uint32_t unroll = 1;               // gemv: vec4 loads of B in flight an invocation (spec 12)
  uint32_t team_cols = 1;            // MatMulGemvSubgroup: columns a team (spec 13)
  uint32_t subgroup = 0;             // MatMulGemvSubgroup: the device's subgroup size (spec 15)
  uint32_t k_step = 32;              // tensor cores: K a step (spec 11), 32 or 64
  bool one_exponent = false;         // staged operands at one exponent along K (spec 13)
};
// N: the columns of every product of the dispatch together. k_align: a K step must not cross a
// multiple of it (a sum of products' K groups); 0: any.
MatMulPlan plan_matmul(const MatMulTiers& tiers, uint64_t M, uint64_t N, uint64_t K, uint64_t batch,
                       bool b_k_contiguous, uint64_t k_align = 0);

// The tiers for a tensor-core product that stages its f32 operands inside the kernel (not
// staged before it): K steps of 32 unless `tiers` forces one. With the scale history such a
// product's K loop holds more registers (205 at 64 on an H200, 1 workgroup an SM), and 32
// everywhere was faster: SmolLM2-135M's training step 8.66 -> 8.39 ms (docs/performance.md).
MatMulTiers staging_in_kernel(MatMulTiers tiers);

}  // namespace meganeura::lower
