#version 450
// MatMul on tensor cores (cooperative matrices), the contract of matmul_common.glsl. Built once
// per variant by cmake/EmbedKernels.cmake: COOP_KHR selects GL_KHR_cooperative_matrix (else
// GL_NV_cooperative_matrix), STAGE_BF16 stages bf16 (KHR only; else f16). Tiles are 64x64.
//
// f32 operands are rounded to f16/bf16 on their way into shared memory, a tile's A and B each
// scaled by a power of two (stage_scale.glsl), so that neither tiny values (gradients) nor huge
// ones leave f16's range; products accumulate in f32 and the epilogue undoes the scale. The
// exponents come from the largest magnitudes the tile's blocks had at the call before (binding
// 11, the scale history: a training step's products read new values of the same operands every
// step), checked at the end of the K loop; a tile with no history, or whose values no longer fit
// it, runs again at exponents from its own largest magnitudes. Shared memory keeps each
// operand's contiguous axis (B_KCONTIG: a [N, K] weight is stored [n][k] and read as
// column-major fragments), 4 values packed to a uvec2 store (scalar 2-byte stores cost 9% of
// SmolLM2-135M's time on an H100), and VEC4_A/VEC4_B load 16-byte vectors where the
// host found the operand's rows aligned (spec constants 6-8). A workgroup is 8 subgroups of 32
// (the host checks the subgroup size), laid out WARPS_M x WARPS_N, each owning FRAG_M x FRAG_N 16x16 accumulators. K steps by K_STEP; the next
// step's global loads are issued before this step's multiplies, so they overlap. The epilogue
// goes through a 16x16 f32 staging fragment per subgroup and store_c (bounds, bias, activation,
// residual, split-K partials), so any M, N, K and strides work.
//
// GLU (spec 9): the two products are a gated MLP's gate and up projections (same N). A tile's 64
// columns are 32 output columns of each, interleaved by 16, so that a subgroup's two accumulators
// hold the gate and the up value of the same 16 columns; the epilogue stores both and silu(gate)
// * up at binding 7, and no swiglu dispatch follows. Calls without GLU bind a scratch word there.
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#if defined(COOP_KHR)
#extension GL_KHR_cooperative_matrix : require
#if defined(STAGE_BF16)
#extension GL_EXT_bfloat16 : require
#define STAGE_T bfloat16_t
#else
#define STAGE_T float16_t
#endif
#define FRAG_A coopmat<STAGE_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseA>
#define FRAG_B coopmat<STAGE_T, gl_ScopeSubgroup, 16, 16, gl_MatrixUseB>
#define FRAG_C coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator>
#define FRAG_LOAD(m, arr, off, stride) coopMatLoad(m, arr, off, stride, gl_CooperativeMatrixLayoutRowMajor)
#define FRAG_LOAD_COLUMNS(m, arr, off, stride) coopMatLoad(m, arr, off, stride, gl_CooperativeMatrixLayoutColumnMajor)
#define FRAG_STORE(m, arr, off, stride) coopMatStore(m, arr, off, stride, gl_CooperativeMatrixLayoutRowMajor)
#define FRAG_MMA(a, b, c) coopMatMulAdd(a, b, c)
#else
#extension GL_NV_cooperative_matrix : require
#define STAGE_T float16_t
#define FRAG_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG_B fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG_C fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define FRAG_LOAD(m, arr, off, stride) coopMatLoadNV(m, arr, off, stride, false)
#define FRAG_LOAD_COLUMNS(m, arr, off, stride) coopMatLoadNV(m, arr, off, stride, true)
#define FRAG_STORE(m, arr, off, stride) coopMatStoreNV(m, arr, off, stride, false)
#define FRAG_MMA(a, b, c) coopMatMulAddNV(a, b, c)
#endif
#include "common.glsl"
#include "stage_scale.glsl"

// Four staged values packed for shared memory, rounded to nearest even.
#if defined(STAGE_BF16)
uvec2 stage_pack4(vec4 v) {
  uvec4 b = floatBitsToUint(v);
  return uvec2(f32_to_bf16(b.x) | (f32_to_bf16(b.y) << 16u), f32_to_bf16(b.z) | (f32_to_bf16(b.w) << 16u));
}
#else
uvec2 stage_pack4(vec4 v) { return uvec2(packFloat2x16(f16vec2(v.xy)), packFloat2x16(f16vec2(v.zw))); }
#endif

#define MATMUL_SPLIT_FINISH_BINDING 8  // and 9: split-K's partials and tile counts (matmul_common.glsl)
#include "matmul_common.glsl"

// 64 x 64 (a 128 x 128 tile with 4 x 2 fragments per subgroup ran 2.3x slower on an H100).
// STAGED_TALL's tiles are 128 x 64 (two fragment rows a subgroup): staged loads are copies, and
// each B tile is read by half as many workgroups (products of many K steps).
#if defined(STAGED_TALL)
const uint WARPS_M = 4u, WARPS_N = 2u, FRAG_M = 2u, FRAG_N = 2u;
#else
const uint WARPS_M = 4u, WARPS_N = 2u, FRAG_M = 1u, FRAG_N = 2u;
#endif
layout(constant_id = 6) const uint VEC4_A = 0u;     // A k-contiguous, rows 16-byte aligned, K % 4 == 0
layout(constant_id = 7) const uint B_KCONTIG = 0u;  // B(k, n) contiguous along k (transpose_b)
layout(constant_id = 8) const uint VEC4_B = 0u;     // B's contiguous axis in aligned 16-byte vectors
layout(constant_id = 9) const uint GLU = 0u;        // gate and up interleaved, swiglu in the epilogue
layout(std430, set = 0, binding = 2) readonly buffer A4 { vec4 a4[]; };
layout(std430, set = 0, binding = 3) readonly buffer B4 { vec4 b4[]; };
layout(std430, set = 0, binding = 7) writeonly buffer Glu { uint glu_data[]; };  // [batch, M, N] silu(gate) * up
// GLU_STAGED (spec 12): silu(gate) * up also staged for the tensor-core product that reads it next
// (StageF16's layout, kernel_abi.hpp: round64(M) rows of round64(N) / 2 words, then an exponent
// for each block of 16 rows x 32 columns, which is the output of one pair of subgroups). Binding
// 10 (C again, not written, without it).
layout(constant_id = 12) const uint GLU_STAGED = 0u;
const uint STAGED_ROWS = 128u;  // a staged A's rows are padded to it (kStagedRowTile, kernel_abi.hpp)
layout(std430, set = 0, binding = 10) writeonly buffer GluStaged { uint glu_staged[]; };

// K_STEP (spec 11): K a step, 32 or 64 (where each workgroup has an SM to itself: half the
// steps, each waiting once on its loads; lower/matmul_tiers.cpp).
layout(constant_id = 11) const uint K_STEP = 32u;
const uint BM = WARPS_M * FRAG_M * 16u, BN = WARPS_N * FRAG_N * 16u, BK = K_STEP;
// Rows padded by 16 bytes: spreads the banks and keeps every fragment 16-byte aligned.
const uint A_STRIDE = BK + 8u;
const uint B_STRIDE = B_KCONTIG != 0u ? BK + 8u : BN + 8u;
const uint A_LOADS = BM * BK / 256u, B_LOADS = BK * BN / 256u;  // elements per invocation
// Staged values 4 to a uvec2 (runs along each row, packed): a run is one 8-byte store.
shared uvec2 As[BM * A_STRIDE / 4u];                    // As[m][k]
#if defined(STAGED)
shared uvec2 Bs[BN * (BK + 8u) / 4u];  // Bs[n][k]: staged B is k-contiguous
#else
shared uvec2 Bs[(BN * (BK + 8u) + BK * (BN + 8u)) / 4u];  // Bs[n][k] (B_KCONTIG) or Bs[k][n]
#endif
shared float Cs[8u * 256u * (GLU != 0u ? 2u : 1u)];  // a 16x16 fragment per subgroup (GLU: two) on its way out
shared uvec2 step_max[8u];  // per subgroup: the largest magnitudes of its share of the tile's A and B
shared uint glu_max[8u];    // GLU_STAGED: per subgroup, the largest magnitude of its swiglu values

#if defined(STAGED)
// The variant for operands staged before the product (stage_f16.comp): the K loop of
// matmul_coop_staged.glsl copies them. a_offset, a_row_stride, b_offset[g] and b_row_stride[g]
// are then in 32-bit words of the staged layout, B_KCONTIG is 1 and K_GROUPS 0. A variant of its
// own: the in-kernel staging below, with the staged loop beside it behind a specialisation
// constant, ran 12% slower on an H100 at SmolLM2-135M's shape.
#include "matmul_coop_staged.glsl"
#endif

// GLU_STAGED: this subgroup's 16 x 16 swiglu values (Cs, row-major at warp * 512) into the
// staged copy, scaled by the exponent of the 16 x 32 block it shares with its partner subgroup
// (the other 16 columns of the tile, warp ^ 1). Batch 1: the rows are the product's.
void stage_glu_block(uint largest, uint fm, uint fn, uint n0, uint wn) {
  const uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  // The staged layout's rows are padded to STAGED_ROWS, the staged kernel's tile (the product
  // that reads them); rows past M that no tile of this call covers are never stored from.
  const uint row_words = (p.N[0] + 63u) / 64u * 32u, padded_rows = (p.M + STAGED_ROWS - 1u) / STAGED_ROWS * STAGED_ROWS;
  subgroupBarrier();  // reconverged after the bounds checks: the reduction sees every lane
  largest = subgroupMax(largest);
  if (subgroupElect()) glu_max[warp] = largest;
  subgroupMemoryBarrierShared();
  barrier();
  const int e = stage_exponent(max(glu_max[warp], glu_max[warp ^ 1u]), STAGE_EXP_LIMIT);
  const float scale = stage_pow2(e);
  for (uint w = lane; w < 128u; w += gl_SubgroupSize) {  // 16 rows of 8 words
    const uint r = w / 8u, c = 2u * (w % 8u), at = warp * 512u + r * 16u + c;
    glu_staged[(fm + r) * row_words + (fn + c) / 2u] = packHalf2x16(vec2(Cs[at], Cs[at + 1u]) * scale);
  }
  if (wn == 0u && subgroupElect()) glu_staged[staged_exponent_word(padded_rows, row_words, fm / 16u, n0 / 32u)] = uint(e);
  barrier();  // glu_max is read before the next tile writes it
}

#if !defined(STAGED)
// Per row job (A's rows and K range) and per column tile of each split (B's), the largest
// magnitude the tile found at the call before, plus one (0: none yet), from which this call's
// tiles stage at one fixed exponent (stage_scale.glsl, "A tile that reads blocks ..."). Written
// by every tile of the job (the same value) as it finishes; a persistent buffer, zeroed at
// session build. Word (bt, job) for A, then (bt, split, tile) for B.
layout(std430, set = 0, binding = 11) coherent buffer ScaleHistory { uint scale_history[]; };

shared uvec2 tile_history[2];  // a tile's two history words, read by one invocation (two: tiles alternate)

// The fixed exponents of A and B from their history words; x is STAGE_NO_HISTORY without both.
ivec2 history_exponents(uint ha, uint hb) {
  const int ea = stage_history_exponent(ha), eb = stage_history_exponent(hb);
  return ea == STAGE_NO_HISTORY || eb == STAGE_NO_HISTORY ? ivec2(STAGE_NO_HISTORY) : ivec2(ea, eb);
}
#endif

// The K step's largest magnitudes of A and of B, over the whole workgroup.
uvec2 step_max_of_workgroup() {
  uvec2 m = step_max[0];
  for (uint w = 1u; w < 8u; ++w) m = max(m, step_max[w]);
  return m;
}

// The K step's products from the staged tiles into the accumulators (acc, wm, wn in scope).
#define MULTIPLY_STEP()                                                                                 \
  for (uint kk = 0u; kk < BK; kk += 16u) {                                                              \
    FRAG_A fa[FRAG_M];                                                                                  \
    FRAG_B fb[FRAG_N];                                                                                  \
    for (uint i = 0u; i < FRAG_M; ++i) /* offsets and strides in uvec2s of 4 values */                 \
      FRAG_LOAD(fa[i], As, (((wm * FRAG_M + i) * 16u) * A_STRIDE + kk) / 4u, A_STRIDE / 4u);            \
    for (uint j = 0u; j < FRAG_N; ++j) {                                                                \
      uint n_frag = (wn * FRAG_N + j) * 16u;                                                            \
      if (B_KCONTIG != 0u) FRAG_LOAD_COLUMNS(fb[j], Bs, (n_frag * B_STRIDE + kk) / 4u, B_STRIDE / 4u);   \
      else FRAG_LOAD(fb[j], Bs, (kk * B_STRIDE + n_frag) / 4u, B_STRIDE / 4u);                          \
    }                                                                                                   \
    for (uint i = 0u; i < FRAG_M; ++i)                                                                  \
      for (uint j = 0u; j < FRAG_N; ++j) acc[i * FRAG_N + j] = FRAG_MMA(fa[i], fb[j], acc[i * FRAG_N + j]); \
  }

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint wm = warp / WARPS_N, wn = warp % WARPS_N;
  bool a_k_contig = p.a_col_stride == 1u;  // A row-major: consecutive invocations walk k
  uint tiles = p.tile0[p.groups];
  uint row_jobs = ((p.M + BM - 1u) / BM) * p.splits;
#if !defined(STAGED)
  uint tile_parity = 0u;
#endif

  for (uint bt = gl_WorkGroupID.z; bt < p.batch; bt += gl_NumWorkGroups.z) {
    uint a_base, b_batch;
    STRIDED_OFFSET(a_base, bt, p.batch_rank, p.batch_shape, p.a_batch_stride)
    STRIDED_OFFSET(b_batch, bt, p.batch_rank, p.batch_shape, p.b_batch_stride)
    a_base += p.a_offset;

    for (uint job = gl_WorkGroupID.y; job < row_jobs; job += gl_NumWorkGroups.y) {
      uint m0 = (job / p.splits) * BM, split = job % p.splits;
      uint k_begin = split * p.k_chunk, k_end = min(p.K, k_begin + p.k_chunk);
      for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        uint g = GLU != 0u ? 0u : group_of(tile);
        uint N = p.N[g], n0 = GLU != 0u ? tile * (BN / 2u) : (tile - p.tile0[g]) * BN;
        uint b_base = b_batch + p.b_offset[g];
        uint b_row = p.b_row_stride[g], b_col = p.b_col_stride[g];
        bool b_n_contig = b_col == 1u || b_row != 1u;

        FRAG_C acc[FRAG_M * FRAG_N];
        for (uint i = 0u; i < FRAG_M * FRAG_N; ++i) acc[i] = FRAG_C(0.0);
        float ra[A_LOADS], rb[B_LOADS];  // the next K step, in flight while this one multiplies

        // Element l of this invocation's share of a K step: A (am, ak), B (bk, bn). Elements
        // come in runs of 4 along the axis shared memory keeps contiguous (k for A; k or n for
        // B), so that each run is staged as one packed store. Consecutive invocations walk the
        // operand's contiguous axis in memory: along the run (4 at a time, one 16-byte load with
        // VEC4_A/VEC4_B), or, where memory is contiguous along the other axis, across it.
#define A_ELEM(l, am, ak)                                                      \
  uint am, ak;                                                                 \
  if (a_k_contig) {                                                            \
    uint e_ = (tid + 256u * ((l) / 4u)) * 4u + (l) % 4u;                       \
    am = e_ / BK;                                                              \
    ak = e_ % BK;                                                              \
  } else {                                                                     \
    uint e_ = tid + 256u * ((l) / 4u);                                         \
    am = e_ % BM;                                                              \
    ak = (e_ / BM) * 4u + (l) % 4u;                                            \
  }
#define B_ELEM(l, bk, bn)                                                      \
  uint bk, bn;                                                                 \
  if (B_KCONTIG != 0u || b_n_contig) { /* memory and shared memory along the same axis */ \
    uint e_ = (tid + 256u * ((l) / 4u)) * 4u + (l) % 4u;                       \
    bn = B_KCONTIG != 0u ? e_ / BK : e_ % BN;                                  \
    bk = B_KCONTIG != 0u ? e_ % BK : e_ / BN;                                  \
  } else { /* memory along k, shared memory along n */                         \
    uint e_ = tid + 256u * ((l) / 4u);                                         \
    bk = e_ % BK;                                                              \
    bn = (e_ / BK) * 4u + (l) % 4u;                                            \
  }
// B's column gn of tile column bn and where its product starts (GLU: alternating 16-column runs
// of gate and up, each product's column n0 + 16 * (bn / 32) + bn % 16).
#define B_COLUMN(bn, gn, bb)                                                   \
  uint gn = GLU != 0u ? n0 + ((bn) / 32u) * 16u + (bn) % 16u : n0 + (bn);     \
  uint bb = GLU != 0u ? b_batch + p.b_offset[((bn) / 16u) % 2u] : b_base;
#define LOAD_STEP(k0)                                                                          \
  uint ka_shift, ka_row, kb_shift;                                                             \
  k_group_at(k0, ka_shift, ka_row, kb_shift);                                                  \
  if (VEC4_A != 0u) {                                                                          \
    for (uint l = 0u; l < A_LOADS; l += 4u) {                                                  \
      A_ELEM(l, am, ak)                                                                        \
      uint gm = m0 + am, gk = (k0) + ak;                                                       \
      vec4 v = (gm < p.M && gk < k_end) ? a4[(a_base + ka_shift + gm * ka_row + gk) / 4u] : vec4(0.0f); \
      ra[l] = v.x; ra[l + 1u] = v.y; ra[l + 2u] = v.z; ra[l + 3u] = v.w;                       \
    }                                                                                          \
  } else {                                                                                     \
    for (uint l = 0u; l < A_LOADS; ++l) {                                                      \
      A_ELEM(l, am, ak)                                                                        \
      uint gm = m0 + am, gk = (k0) + ak;                                                       \
      ra[l] = (gm < p.M && gk < k_end)                                                         \
          ? uintBitsToFloat(a_data[a_base + ka_shift + gm * ka_row + gk * p.a_col_stride]) : 0.0f; \
    }                                                                                          \
  }                                                                                            \
  if (VEC4_B != 0u) {                                                                          \
    for (uint l = 0u; l < B_LOADS; l += 4u) {                                                  \
      B_ELEM(l, bk, bn)                                                                        \
      B_COLUMN(bn, gn, bb)                                                                     \
      uint gk = (k0) + bk;                                                                     \
      vec4 v = (gn < N && gk < k_end) ? b4[(bb + kb_shift + gk * b_row + gn * b_col) / 4u] : vec4(0.0f); \
      rb[l] = v.x; rb[l + 1u] = v.y; rb[l + 2u] = v.z; rb[l + 3u] = v.w;                       \
    }                                                                                          \
  } else {                                                                                     \
    for (uint l = 0u; l < B_LOADS; ++l) {                                                      \
      B_ELEM(l, bk, bn)                                                                        \
      B_COLUMN(bn, gn, bb)                                                                     \
      uint gk = (k0) + bk;                                                                     \
      rb[l] = (gn < N && gk < k_end) ? uintBitsToFloat(b_data[bb + kb_shift + gk * b_row + gn * b_col]) : 0.0f; \
    }                                                                                          \
  }

// The tile's largest finite magnitudes of A and B over its whole K range into OUT, through
// shared memory (a barrier), for a tile with no usable history: a pass of loads only, the first
// step's loads already in ra and rb. Leaves ra and rb holding the last step's.
#define FINITE_MAX_PASS(OUT)                                                          \
  {                                                                                   \
    uint ma_ = 0u, mb_ = 0u;                                                          \
    for (uint k0 = k_begin; k0 < k_end; k0 += BK) {                                   \
      if (k0 != k_begin) { LOAD_STEP(k0) }                                            \
      for (uint l = 0u; l < A_LOADS; ++l) ma_ = max(ma_, stage_magnitude(ra[l]));     \
      for (uint l = 0u; l < B_LOADS; ++l) mb_ = max(mb_, stage_magnitude(rb[l]));     \
    }                                                                                 \
    subgroupBarrier(); /* reconverged after the loads' bounds checks */               \
    ma_ = subgroupMax(ma_);                                                           \
    mb_ = subgroupMax(mb_);                                                           \
    if (subgroupElect()) step_max[gl_SubgroupID] = uvec2(ma_, mb_);                   \
    barrier();                                                                        \
    OUT = step_max_of_workgroup();                                                    \
    barrier(); /* read by every subgroup before the loop writes it again */           \
  }

#if defined(STAGED)
        int frag_exp[FRAG_M * FRAG_N];  // accumulator f holds its products times 2^frag_exp[f]
        staged_products(acc, frag_exp, m0, n0, g, k_begin, k_end);
#define ACC_EXP(f) frag_exp[f]
#else
#define ACC_EXP(f) acc_exp
        // The tile stages A and B at one exponent each for its whole K range: those its blocks'
        // largest magnitudes at the call before give (scale_history), checked as it goes; where
        // there are none yet, or this call's values no longer fit them, at the tile's own.
        uint hist_a = bt * row_jobs + job, hist_b = p.batch * row_jobs + (bt * p.splits + split) * tiles + tile;
        // Read once for the workgroup: other tiles of the job rewrite the words during the call,
        // and every subgroup must stage at the same exponents and take the same path.
        if (tid == 0u) tile_history[tile_parity] = uvec2(scale_history[hist_a], scale_history[hist_b]);
        LOAD_STEP(k_begin)
        barrier();
        const uvec2 history = tile_history[tile_parity];
        tile_parity ^= 1u;  // the next tile's words: these may still be read
        ivec2 tile_e = history_exponents(history.x, history.y);
        uvec2 tile_max = uvec2(0u);  // the tile's largest finite magnitudes of A and B, for the next call
        bool checked = tile_e.x != STAGE_NO_HISTORY;  // exponents from the history: checked after the loop
        if (!checked) {
          FINITE_MAX_PASS(tile_max)
          tile_e = ivec2(stage_exponent(tile_max.x, STAGE_EXP_LIMIT), stage_exponent(tile_max.y, STAGE_EXP_LIMIT));
          LOAD_STEP(k_begin)
        }
        int acc_exp;
        for (;;) {
          acc_exp = tile_e.x + tile_e.y;
          const float scale_a = stage_pow2(tile_e.x), scale_b = stage_pow2(tile_e.y);
          float run_a = 0.0f, run_b = 0.0f;  // the largest magnitudes staged (infinity and NaN as such)
          for (uint k0 = k_begin; k0 < k_end; k0 += BK) {
            for (uint l = 0u; l < A_LOADS; l += 4u) {
              A_ELEM(l, am, ak)
              const vec4 v = vec4(ra[l], ra[l + 1u], ra[l + 2u], ra[l + 3u]);
              run_a = max(run_a, max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w))));
              As[(am * A_STRIDE + ak) / 4u] = stage_pack4(v * scale_a);
            }
            for (uint l = 0u; l < B_LOADS; l += 4u) {
              B_ELEM(l, bk, bn)
              const vec4 v = vec4(rb[l], rb[l + 1u], rb[l + 2u], rb[l + 3u]);
              run_b = max(run_b, max(max(abs(v.x), abs(v.y)), max(abs(v.z), abs(v.w))));
              Bs[(B_KCONTIG != 0u ? bn * B_STRIDE + bk : bk * B_STRIDE + bn) / 4u] = stage_pack4(v * scale_b);
            }
            barrier();
            if (k0 + BK < k_end) {
              LOAD_STEP(k0 + BK)
            } else if (checked) {  // the maxima, published through the step's last barrier
              subgroupBarrier();    // reconverged after the loads' bounds checks
              const uint ma = subgroupMax(floatBitsToUint(run_a)), mb = subgroupMax(floatBitsToUint(run_b));
              if (subgroupElect()) step_max[gl_SubgroupID] = uvec2(ma, mb);
            }
            MULTIPLY_STEP()
            barrier();
          }
          if (!checked) break;
          tile_max = k_begin < k_end ? step_max_of_workgroup() : uvec2(0u);
          if (stage_fits(tile_max.x, tile_e.x) && stage_fits(tile_max.y, tile_e.y)) break;
          // Again at the tile's own exponents (those of its finite values where it met an
          // infinity or a NaN), unchecked.
          barrier();  // every subgroup has read step_max before it is written again
          if (tile_max.x >= STAGE_NOT_FINITE || tile_max.y >= STAGE_NOT_FINITE) {
            LOAD_STEP(k_begin)
            FINITE_MAX_PASS(tile_max)
          }
          tile_e = ivec2(stage_exponent(tile_max.x, STAGE_EXP_LIMIT), stage_exponent(tile_max.y, STAGE_EXP_LIMIT));
          checked = false;
          for (uint i = 0u; i < FRAG_M * FRAG_N; ++i) acc[i] = FRAG_C(0.0);
          LOAD_STEP(k_begin)
        }
        if (tid == 0u) {  // every tile of this row job (column tile) finds the same maxima
          atomicExchange(scale_history[hist_a], tile_max.x + 1u);
          atomicExchange(scale_history[hist_b], tile_max.y + 1u);
        }
#endif
#undef FINITE_MAX_PASS
#undef LOAD_STEP
#undef A_ELEM
#undef B_ELEM
#undef B_COLUMN

        if (GLU != 0u) {  // acc[2i]: gate, acc[2i + 1]: up, of output columns n0 + 16 wn ..
          for (uint i = 0u; i < FRAG_M; ++i) {
            FRAG_STORE(acc[2u * i], Cs, warp * 512u, 16u);
            FRAG_STORE(acc[2u * i + 1u], Cs, warp * 512u + 256u, 16u);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            uint fm = m0 + (wm * FRAG_M + i) * 16u, fn = n0 + wn * 16u;
            uint largest = 0u;
            for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
              uint gm = fm + e / 16u, gn = fn + e % 16u;
              float h = 0.0f;  // rows past M stage as zeros
              if (gm < p.M && gn < N) {
                float gate = stage_unscale(Cs[warp * 512u + e], ACC_EXP(2u * i)),
                      up = stage_unscale(Cs[warp * 512u + 256u + e], ACC_EXP(2u * i + 1u));
                store_c(0u, bt, gm, gn, gate, split);
                store_c(1u, bt, gm, gn, up, split);
                h = silu_p(gate) * up;
                glu_data[(bt * p.M + gm) * N + gn] = floatBitsToUint(h);
              }
              if (GLU_STAGED != 0u) {
                Cs[warp * 512u + e] = h;  // this invocation's own gate value, read above
                largest = max(largest, stage_magnitude(h));
              }
            }
            if (GLU_STAGED != 0u) stage_glu_block(largest, fm, fn, n0, wn);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
          }
          continue;
        }

        for (uint i = 0u; i < FRAG_M; ++i) {
          for (uint j = 0u; j < FRAG_N; ++j) {
            FRAG_STORE(acc[i * FRAG_N + j], Cs, warp * 256u, 16u);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            uint fm = m0 + (wm * FRAG_M + i) * 16u, fn = n0 + (wn * FRAG_N + j) * 16u;
            for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
              uint gm = fm + e / 16u, gn = fn + e % 16u;
              if (gm < p.M && gn < N) store_c(g, bt, gm, gn, stage_unscale(Cs[warp * 256u + e], ACC_EXP(i * FRAG_N + j)), split);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
          }
        }
        split_finish(g, bt, m0, n0, tile, BM, BN);
      }
    }
  }
}
