#version 450
// MatMulCoop2StagedNV: a product of operands staged at one exponent along K (stage_f16.comp's
// layout; A's rows staged by a norm, weights staged once as whole rows: ONE_EXPONENT of
// matmul_coop_staged.glsl) on workgroup-scope cooperative matrices (GL_NV_cooperative_matrix2):
// each K step loads a BM x BK tile of A and a BN x BK tile of B through tensor layouts and
// multiplies, and the driver chooses the fragments, the staging through shared memory and its
// pipelining (1.4-1.8x our own tiling at the 1.7B shape's products: docs/performance.md,
// "Cooperative matrix 2"). The epilogue, element by element: the blocks' exponents undone, then
// bias, activation and residual (matmul_common.glsl), stored through a tensor layout that drops
// what lies past M and N. Built twice (cmake/EmbedKernels.cmake): COOP2_GLU, the variant where
// B's groups 0 and 1 are a gate and an up projection: two accumulators of BN columns each, both
// stored, and silu(gate) * up at binding 7 (a define, not a specialisation constant, so that the
// single product holds no second accumulator).
// Compiled with the newer glslang of scripts/fetch_glslang.sh (cmake/EmbedKernels.cmake).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#include "common.glsl"
#include "stage_scale.glsl"
#include "matmul_common.glsl"

#if defined(COOP2_GLU)
const uint GLU = 1u;
#else
const uint GLU = 0u;
#endif
layout(constant_id = 16) const uint BM = 128u;  // rows a tile
layout(constant_id = 17) const uint BN = 128u;  // columns an accumulator (GLU: of gate and of up)
layout(constant_id = 18) const uint BK = 64u;   // K a step
layout(std430, set = 0, binding = 2) readonly buffer A16 { float16_t a16[]; };
layout(std430, set = 0, binding = 3) readonly buffer B16 { float16_t b16[]; };
layout(std430, set = 0, binding = 4) writeonly buffer C32 { float c32[]; };
layout(std430, set = 0, binding = 7) writeonly buffer Glu32 { float glu32[]; };

const uint STAGED_ROWS = 128u;  // a staged A's rows are padded to it (kStagedRowTile)
shared int row_exp[BM / 16u];   // the exponents of the tile's blocks of 16 rows of A
shared int col_exp[BN / 8u];    // and of 16 columns of B (GLU: the gate's, then the up's)

#define LAYOUT tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
#define ACC coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>
#define TILE_A coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA>
#define TILE_B coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB>

// [rows, cols] with rows `stride` elements apart.
LAYOUT layout_of(uint rows, uint cols, uint stride) {
  LAYOUT l = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
  l = setTensorLayoutDimensionNV(l, rows, cols);
  return setTensorLayoutStrideNV(l, stride, 1);
}

// The exponent word of 16-row block `rb` of a staged operand (stage_f16.comp): one along K here.
int staged_exponent(uint base, uint padded_rows, uint row_words, uint rb) {
  return int(a_data[base + staged_exponent_word(padded_rows, row_words, rb, 0u)]);
}
int staged_b_exponent(uint g, uint rb) {
  const uint padded = (p.N[g] + 63u) / 64u * 64u, words = p.b_row_stride[g];
  return rb < padded / 16u ? int(b_data[p.b_offset[g] + staged_exponent_word(padded, words, rb, 0u)]) : 0;
}

// Element (row, col) of the tile at (m0, n0) of product g, from its scaled sum to C's value.
float finish(const in uint32_t row, const in uint32_t col, const in float v, const in uint m0, const in uint n0,
             const in uint g, const in uint slot) {
  const uint gm = m0 + row, gn = n0 + col;
  if (gm >= p.M || gn >= p.N[g]) return 0.0f;
  return epilogue(stage_unscale(v, row_exp[row / 16u] + col_exp[slot * (BN / 16u) + col / 16u]), 0u, gm, gn);
}

float silu_of(const in uint32_t row, const in uint32_t col, const in float gate) { return silu_p(gate); }

// The product g's tile of B at columns n0.., step k.
TILE_B load_b(uint g, uint n0, uint k) {
  const LAYOUT lb = layout_of(p.N[g], p.K, 2u * p.b_row_stride[g]);
  const tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  TILE_B tile;
  coopMatLoadTensorNV(tile, b16, 2u * p.b_offset[g], sliceTensorLayoutNV(lb, n0, BN, k, BK), transposed);
  return tile;
}

void store(ACC m, uint offset, uint m0, uint n0, uint N) {
  coopMatStoreTensorNV(m, c32, offset, sliceTensorLayoutNV(layout_of(p.M, N, N), m0, BM, n0, BN));
}

void main() {
  const uint t = gl_LocalInvocationID.x, m0 = gl_WorkGroupID.y * BM, tile = gl_WorkGroupID.x;
  const uint g = GLU != 0u ? 0u : group_of(tile), n0 = (tile - p.tile0[g]) * BN;
  const uint a_rows = (p.M + STAGED_ROWS - 1u) / STAGED_ROWS * STAGED_ROWS;
  if (t < BM / 16u) row_exp[t] = staged_exponent(p.a_offset, a_rows, p.a_row_stride, m0 / 16u + t);
  const uint slots = GLU != 0u ? 2u : 1u;
  if (t >= 64u && t < 64u + slots * (BN / 16u)) {
    const uint j = t - 64u, slot = j / (BN / 16u);
    col_exp[j] = staged_b_exponent(g + slot, n0 / 16u + j % (BN / 16u));
  }

  const LAYOUT la = layout_of(p.M, p.K, 2u * p.a_row_stride);
  ACC acc = ACC(0.0f);
#if defined(COOP2_GLU)
  ACC acc_up = ACC(0.0f);
#endif
  for (uint k = 0u; k < p.K; k += BK) {
    TILE_A ta;
    coopMatLoadTensorNV(ta, a16, 2u * p.a_offset, sliceTensorLayoutNV(la, m0, BM, k, BK));
    acc = coopMatMulAdd(ta, load_b(g, n0, k), acc);
#if defined(COOP2_GLU)
    acc_up = coopMatMulAdd(ta, load_b(1u, n0, k), acc_up);
#endif
  }
  barrier();  // the exponents are in shared memory

  coopMatPerElementNV(acc, acc, finish, m0, n0, g, 0u);
  store(acc, p.c_offset[g], m0, n0, p.N[g]);
#if defined(COOP2_GLU)
  coopMatPerElementNV(acc_up, acc_up, finish, m0, n0, 1u, 1u);
  store(acc_up, p.c_offset[1], m0, n0, p.N[1]);
  coopMatPerElementNV(acc, acc, silu_of);
  acc = acc * acc_up;  // component-wise
  coopMatStoreTensorNV(acc, glu32, 0u, sliceTensorLayoutNV(layout_of(p.M, p.N[0], p.N[0]), m0, BM, n0, BN));
#endif
}
