#version 450
// MatMulCoop2StagedNV: a product of operands staged at one exponent along K (stage_f16.comp's
// layout; A's rows staged by a norm, weights staged once as whole rows: ONE_EXPONENT of
// matmul_coop_staged.glsl) on workgroup-scope cooperative matrices (GL_NV_cooperative_matrix2):
// each K step loads a BM x BK tile of A and a BN x BK tile of B through tensor layouts and
// multiplies, and the driver chooses the fragments, the staging through shared memory and its
// pipelining (docs/performance.md, "Cooperative matrix 2"). A group of products (q/k/v, a gate/up
// pair) gives each workgroup a tile of one of them. The epilogue, element by element: the
// blocks' exponents undone, then bias, activation and residual (matmul_common.glsl), stored
// through a tensor layout that drops what lies past M and N.
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

layout(constant_id = 16) const uint BM = 128u;  // rows a tile
layout(constant_id = 17) const uint BN = 128u;  // columns a tile
layout(constant_id = 18) const uint BK = 64u;   // K a step
layout(std430, set = 0, binding = 2) readonly buffer A16 { float16_t a16[]; };
layout(std430, set = 0, binding = 3) readonly buffer B16 { float16_t b16[]; };
layout(std430, set = 0, binding = 4) writeonly buffer C32 { float c32[]; };
layout(std430, set = 0, binding = 6) readonly buffer Res32 { float res32[]; };

const uint STAGED_ROWS = 128u;  // a staged A's rows are padded to it (kStagedRowTile)
shared int row_exp[BM / 16u];   // the exponents of the tile's blocks of 16 rows of A
shared int col_exp[BN / 16u];   // and of 16 columns of B

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

// Element (row, col) of the tile at (m0, n0) of product g, from its scaled sum to C's value;
// `rows_residual`: the residual is added after, as a matrix (its rows contiguous).
float finish(const in uint32_t row, const in uint32_t col, const in float v, const in uint m0, const in uint n0,
             const in uint g, const in bool rows_residual) {
  const uint gm = m0 + row, gn = n0 + col;
  if (gm >= p.M || gn >= p.N[g]) return 0.0f;
  const float sum = stage_unscale(v, row_exp[row / 16u] + col_exp[col / 16u]);
  return rows_residual ? epilogue_of(sum, bias_at(gn), 0.0f) : epilogue(sum, 0u, gm, gn);
}

void main() {
  const uint t = gl_LocalInvocationID.x, m0 = gl_WorkGroupID.y * BM, tile = gl_WorkGroupID.x;
  const uint g = group_of(tile), n0 = (tile - p.tile0[g]) * BN;
  const uint a_rows = (p.M + STAGED_ROWS - 1u) / STAGED_ROWS * STAGED_ROWS;
  if (t < BM / 16u) row_exp[t] = staged_exponent(p.a_offset, a_rows, p.a_row_stride, m0 / 16u + t);
  if (t >= 64u && t < 64u + BN / 16u) col_exp[t - 64u] = staged_b_exponent(g, n0 / 16u + t - 64u);

  const uint K = p.K, a_base = 2u * p.a_offset, b_base = 2u * p.b_offset[g];
  const LAYOUT la = layout_of(p.M, K, 2u * p.a_row_stride), lb = layout_of(p.N[g], K, 2u * p.b_row_stride[g]);
  const tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);
  ACC acc = ACC(0.0f);
  for (uint k = 0u; k < K; k += BK) {
    TILE_A ta;
    TILE_B tb;
    coopMatLoadTensorNV(ta, a16, a_base, sliceTensorLayoutNV(la, m0, BM, k, BK));
    coopMatLoadTensorNV(tb, b16, b_base, sliceTensorLayoutNV(lb, n0, BN, k, BK), transposed);
    acc = coopMatMulAdd(ta, tb, acc);
  }
  barrier();  // the exponents are in shared memory

  // A residual whose rows are contiguous is loaded as a matrix through a tensor layout and added
  // (read element by element it cost the 1.7B o projection 483 against 406 us at 8 x 512 tokens).
  const bool rows_residual = HAS_RESIDUAL != 0u && p.r_col_stride == 1u;
  coopMatPerElementNV(acc, acc, finish, m0, n0, g, rows_residual);
  const uint N = p.N[g];
  if (rows_residual) {
    ACC residual;
    coopMatLoadTensorNV(residual, res32, p.r_offset,
                        sliceTensorLayoutNV(layout_of(p.M, N, p.r_row_stride), m0, BM, n0, BN));
    acc += residual;
  }
  coopMatStoreTensorNV(acc, c32, p.c_offset[g], sliceTensorLayoutNV(layout_of(p.M, N, N), m0, BM, n0, BN));
}
