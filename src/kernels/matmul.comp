#version 450
// MatMul: batched C = A·B, f32, exact path. Each workgroup (256 invocations) computes a 64x64
// tile of C as 16x16 threads x a 4x4 register block, stepping K by 16 through shared memory
// (2 x 16 x 68 floats = 8.5 KiB). Arbitrary strides: transposes are strides; tile loads are
// mapped so that consecutive invocations read consecutive addresses whichever stride is 1.
// Linear's epilogue (specialization constants; all off for a plain matmul) is applied in the
// store: c = act(acc + bias[n]) + residual[b, m, n]. Up to 4 products sharing A run as one
// dispatch (horizontal fusion): the column tiles are numbered across them.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

struct MatMulParams {
  uint M, K, batch, batch_rank;
  uint a_offset, a_row_stride, a_col_stride, groups;
  uint batch_shape[4], a_batch_stride[4], b_batch_stride[4];
  uint bias_offset, r_offset, r_row_stride, r_col_stride, r_batch_stride[4];
  uint N[4], tile0[5], pad0, pad1, pad2;
  uint b_offset[4], c_offset[4];
  uint b_row_stride[4], b_col_stride[4];
};
layout(std430, set = 0, binding = 0) readonly buffer Params { MatMulParams p; };
layout(std430, set = 0, binding = 2) readonly buffer A { uint a_data[]; };
layout(std430, set = 0, binding = 3) readonly buffer B { uint b_data[]; };
layout(std430, set = 0, binding = 4) writeonly buffer C { uint c_data[]; };
// Bound to A and B when the epilogue does not read them (never to C).
layout(std430, set = 0, binding = 5) readonly buffer Bias { uint bias_data[]; };
layout(std430, set = 0, binding = 6) readonly buffer Res { uint res_data[]; };

layout(constant_id = 1) const uint HAS_BIAS = 0u;
layout(constant_id = 2) const uint ACT = 0u;  // LIN_ACT_*
layout(constant_id = 3) const uint HAS_RESIDUAL = 0u;
const uint LIN_ACT_NONE = 0u, LIN_ACT_RELU = 1u, LIN_ACT_GELU = 2u, LIN_ACT_GELU_TANH = 3u, LIN_ACT_SILU = 4u;

float epilogue(float v, uint bt, uint gm, uint gn) {
  if (HAS_BIAS != 0u) v += uintBitsToFloat(bias_data[p.bias_offset + gn]);
  switch (ACT) {
    case LIN_ACT_RELU: v = v < 0.0f ? 0.0f : v; break;  // NaN passes through
    case LIN_ACT_GELU: v = gelu_p(v); break;
    case LIN_ACT_GELU_TANH: v = gelu_tanh_p(v); break;
    case LIN_ACT_SILU: v = silu_p(v); break;
  }
  if (HAS_RESIDUAL != 0u) {
    uint r_base;
    STRIDED_OFFSET(r_base, bt, p.batch_rank, p.batch_shape, p.r_batch_stride)
    v += uintBitsToFloat(res_data[p.r_offset + r_base + gm * p.r_row_stride + gn * p.r_col_stride]);
  }
  return v;
}

const uint TM = 64u, TN = 64u, TK = 16u;
const uint PAD = 4u;  // row padding: keeps float4-aligned rows, spreads banks on the transposed stores
shared float As[TK][TM + PAD];  // As[k][m]
shared float Bs[TK][TN + PAD];  // Bs[k][n]

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % 16u, ty = tid / 16u;  // this thread: rows ty + 16i, columns tx + 16j
  bool a_k_contig = p.a_col_stride == 1u;  // A row-major: walk k fastest
  uint tiles = p.tile0[p.groups];

  for (uint bt = gl_WorkGroupID.z; bt < p.batch; bt += gl_NumWorkGroups.z) {
    uint a_base, b_batch;
    STRIDED_OFFSET(a_base, bt, p.batch_rank, p.batch_shape, p.a_batch_stride)
    STRIDED_OFFSET(b_batch, bt, p.batch_rank, p.batch_shape, p.b_batch_stride)
    a_base += p.a_offset;

    for (uint m0 = gl_WorkGroupID.y * TM; m0 < p.M; m0 += gl_NumWorkGroups.y * TM) {
      for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        uint g = 0u;  // the product this column tile belongs to
        while (g + 1u < p.groups && tile >= p.tile0[g + 1u]) ++g;
        uint N = p.N[g], n0 = (tile - p.tile0[g]) * TN;
        uint b_base = b_batch + p.b_offset[g], c_base = p.c_offset[g] + bt * p.M * N;
        uint b_row = p.b_row_stride[g], b_col = p.b_col_stride[g];
        bool b_n_contig = b_col == 1u || b_row != 1u;  // B: walk n fastest unless k-contiguous
        float acc[4][4];
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

        for (uint k0 = 0u; k0 < p.K; k0 += TK) {
          // 1024 elements per tile, 4 per invocation; out-of-range elements load as zero.
          for (uint l = 0u; l < 4u; ++l) {
            uint e = tid + 256u * l;
            uint am = a_k_contig ? e / TK : e % TM;
            uint ak = a_k_contig ? e % TK : e / TM;
            uint gm = m0 + am, gk = k0 + ak;
            As[ak][am] = (gm < p.M && gk < p.K)
                ? uintBitsToFloat(a_data[a_base + gm * p.a_row_stride + gk * p.a_col_stride]) : 0.0f;
            uint bn = b_n_contig ? e % TN : e / TK;
            uint bk = b_n_contig ? e / TN : e % TK;
            uint gn = n0 + bn, gk2 = k0 + bk;
            Bs[bk][bn] = (gn < N && gk2 < p.K) ? uintBitsToFloat(b_data[b_base + gk2 * b_row + gn * b_col]) : 0.0f;
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
            if (gn < N) c_data[c_base + gm * N + gn] = floatBitsToUint(epilogue(acc[i][j], bt, gm, gn));
          }
        }
      }
    }
  }
}
