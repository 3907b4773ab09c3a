#version 450
// MatMul: batched C = A·B, f32, exact path. Each workgroup (256 invocations) computes a 64x64
// tile of C as 16x16 threads x a 4x4 register block, stepping K by 16 through shared memory
// (2 x 16 x 68 floats = 8.5 KiB). Arbitrary strides: transposes are strides; tile loads are
// mapped so that consecutive invocations read consecutive addresses whichever stride is 1, as
// one 16-byte vector each where the rows are aligned (spec 6 and 8, as the tensor-core kernel).
// Linear's epilogue (specialization constants; all off for a plain matmul) is applied in the
// store: c = act(acc + bias[n]) + residual[b, m, n]. Up to 4 products sharing A run as one
// dispatch (horizontal fusion): the column tiles are numbered across them.
// CPU_TILE (spec 11; lavapipe): no shared memory and no barrier in the K loop. An invocation
// takes two columns of the tile (32 apart) and 8 of its rows, reading A and B where they are: on
// a CPU the caches do what shared memory does on a GPU, and a SIMD group's invocations share
// their A addresses. 1.9-2.4x faster on lavapipe at a small CNN's shapes (docs/performance.md).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define MATMUL_SPLIT_FINISH_BINDING 7  // and 8: split-K's partials and tile counts (matmul_common.glsl)
#include "matmul_common.glsl"

layout(constant_id = 6) const uint VEC4_A = 0u;  // A rows k-contiguous, 16-byte aligned, K % 4 == 0
layout(constant_id = 8) const uint VEC4_B = 0u;  // B's contiguous axis (n, or k) in aligned vec4s
layout(std430, set = 0, binding = 2) readonly buffer A4 { vec4 a4[]; };
layout(std430, set = 0, binding = 3) readonly buffer B4 { vec4 b4[]; };
layout(constant_id = 11) const uint CPU_TILE = 0u;  // (9 and 10 are matmul_common.glsl's)

const uint TM = 64u, TN = 64u, TK = 16u;
const uint PAD = 4u;  // row padding: keeps float4-aligned rows, spreads banks on the transposed stores
shared float As[TK][TM + PAD];  // As[k][m]
shared float Bs[TK][TN + PAD];  // Bs[k][n]

// CPU_TILE: columns n0 + tid % 32 and that + 32, rows m0 + 8 (tid / 32) ... + 7 of a 64 x 64 tile,
// straight from A and B (the K groups of a sum of products start on TK boundaries, as in main's
// loop).
void direct_tile(uint g, uint bt, uint m0, uint n0, uint N, uint k_begin, uint k_end, uint a_base, uint b_base,
                 uint split) {
  uint tid = gl_LocalInvocationID.x, n = n0 + tid % 32u, rows = m0 + 8u * (tid / 32u);
  if (rows >= p.M) return;
  uint gn0 = min(n, N - 1u), gn1 = min(n + 32u, N - 1u), b_row = p.b_row_stride[g], b_col = p.b_col_stride[g];
  float acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = 0.0f;
  for (uint k0 = k_begin; k0 < k_end; k0 += TK) {
    uint ka_shift, ka_row, kb_shift;
    k_group_at(k0, ka_shift, ka_row, kb_shift);
    float step[16];  // a K step's sum apart, then added: blocked summation, as accurate as the tiles'
    for (int i = 0; i < 16; ++i) step[i] = 0.0f;
    for (uint k = k0; k < min(k0 + TK, k_end); ++k) {
      float b0 = uintBitsToFloat(b_data[b_base + kb_shift + k * b_row + gn0 * b_col]);
      float b1 = uintBitsToFloat(b_data[b_base + kb_shift + k * b_row + gn1 * b_col]);
      for (int i = 0; i < 8; ++i) {
        uint gm = min(rows + uint(i), p.M - 1u);
        float a = uintBitsToFloat(a_data[a_base + ka_shift + gm * ka_row + k * p.a_col_stride]);
        step[i] += a * b0;
        step[i + 8] += a * b1;
      }
    }
    for (int i = 0; i < 16; ++i) acc[i] += step[i];
  }
  for (int i = 0; i < 8; ++i) {
    if (rows + uint(i) >= p.M) break;
    if (n < N) store_c(g, bt, rows + uint(i), n, acc[i], split);
    if (n + 32u < N) store_c(g, bt, rows + uint(i), n + 32u, acc[i + 8], split);
  }
}

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16u, ty = tid / 16u;  // this thread: rows ty + 16i, columns tx + 16j
  bool a_k_contig = p.a_col_stride == 1u;  // A row-major: walk k fastest
  uint tiles = p.tile0[p.groups];
  uint row_jobs = ((p.M + TM - 1u) / TM) * p.splits;

  for (uint bt = gl_WorkGroupID.z; bt < p.batch; bt += gl_NumWorkGroups.z) {
    uint a_base, b_batch;
    STRIDED_OFFSET(a_base, bt, p.batch_rank, p.batch_shape, p.a_batch_stride)
    STRIDED_OFFSET(b_batch, bt, p.batch_rank, p.batch_shape, p.b_batch_stride)
    a_base += p.a_offset;

    for (uint job = gl_WorkGroupID.y; job < row_jobs; job += gl_NumWorkGroups.y) {
      uint m0 = (job / p.splits) * TM, split = job % p.splits;
      uint k_begin = split * p.k_chunk, k_end = min(p.K, k_begin + p.k_chunk);
      for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        uint g = group_of(tile);
        uint N = p.N[g], n0 = (tile - p.tile0[g]) * TN;
        uint b_base = b_batch + p.b_offset[g];
        if (CPU_TILE != 0u) {
          direct_tile(g, bt, m0, n0, N, k_begin, k_end, a_base, b_base, split);
          split_finish(g, bt, m0, n0, tile, TM, TN);
          continue;
        }
        uint b_row = p.b_row_stride[g], b_col = p.b_col_stride[g];
        bool b_n_contig = b_col == 1u || b_row != 1u;  // B: walk n fastest unless k-contiguous
        float acc[4][4];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

        for (uint k0 = k_begin; k0 < k_end; k0 += TK) {
          uint ka_shift, ka_row, kb_shift;  // a sum of products: this step's product
          k_group_at(k0, ka_shift, ka_row, kb_shift);
          // 1024 elements per tile, 4 per invocation (one vec4 where rows are aligned: spec 6
          // and 8); out-of-range elements load as zero.
          if (VEC4_A != 0u) {
            uint am = tid / 4u, ak = (tid % 4u) * 4u, gm = m0 + am, gk = k0 + ak;
            vec4 v = (gm < p.M && gk < k_end) ? a4[(a_base + ka_shift + gm * ka_row + gk) / 4u] : vec4(0.0f);
            As[ak][am] = v.x; As[ak + 1u][am] = v.y; As[ak + 2u][am] = v.z; As[ak + 3u][am] = v.w;
          } else {
            for (uint l = 0u; l < 4u; ++l) {
              uint e = tid + 256u * l;
              uint am = a_k_contig ? e / TK : e % TM;
              uint ak = a_k_contig ? e % TK : e / TM;
              uint gm = m0 + am, gk = k0 + ak;
              As[ak][am] = (gm < p.M && gk < k_end)
                  ? uintBitsToFloat(a_data[a_base + ka_shift + gm * ka_row + gk * p.a_col_stride]) : 0.0f;
            }
          }
          if (VEC4_B != 0u && b_n_contig) {
            uint bn = (tid % 16u) * 4u, bk = tid / 16u, gn = n0 + bn, gk = k0 + bk;
            vec4 v = (gn < N && gk < k_end) ? b4[(b_base + kb_shift + gk * b_row + gn) / 4u] : vec4(0.0f);
            Bs[bk][bn] = v.x; Bs[bk][bn + 1u] = v.y; Bs[bk][bn + 2u] = v.z; Bs[bk][bn + 3u] = v.w;
          } else if (VEC4_B != 0u) {
            uint bn = tid / 4u, bk = (tid % 4u) * 4u, gn = n0 + bn, gk = k0 + bk;
            vec4 v = (gn < N && gk < k_end) ? b4[(b_base + kb_shift + gk + gn * b_col) / 4u] : vec4(0.0f);
            Bs[bk][bn] = v.x; Bs[bk + 1u][bn] = v.y; Bs[bk + 2u][bn] = v.z; Bs[bk + 3u][bn] = v.w;
          } else {
            for (uint l = 0u; l < 4u; ++l) {
              uint e = tid + 256u * l;
              uint bn = b_n_contig ? e % TN : e / TK;
              uint bk = b_n_contig ? e / TN : e % TK;
              uint gn = n0 + bn, gk = k0 + bk;
              Bs[bk][bn] = (gn < N && gk < k_end) ? uintBitsToFloat(b_data[b_base + kb_shift + gk * b_row + gn * b_col]) : 0.0f;
            }
          }
          barrier();
          for (uint k = 0u; k < TK; ++k) {
            float a[4], b[4];
            for (int i = 0; i < 4; ++i) a[i] = As[k][ty + 16u * uint(i)];
            for (int j = 0; j < 4; ++j) b[j] = Bs[k][tx + 16u * uint(j)];
            for (int i = 0; i < 4; ++i)
              for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
          }
          barrier();
        }

        for (int i = 0; i < 4; ++i) {
          uint gm = m0 + ty + 16u * uint(i);
          if (gm >= p.M) continue;
          for (int j = 0; j < 4; ++j) {
            uint gn = n0 + tx + 16u * uint(j);
            if (gn < N) store_c(g, bt, gm, gn, acc[i][j], split);
          }
        }
        split_finish(g, bt, m0, n0, tile, TM, TN);
      }
    }
  }
}
