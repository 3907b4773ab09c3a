#version 450
// MatMul for a few rows (single-token decode: M = 1), the contract of matmul_common.glsl, exact
// f32. Memory-bound: the job is to stream B once at full bandwidth. A team of T invocations
// computes one column for up to ROWS rows, splitting K among them; the team's partial sums meet
// in shared memory. The layout of B picks the team shape (spec 5, K_CONTIG):
//   1: B(k, n) contiguous along k (a [N, K] weight, transpose_b): T = TEAM (spec 11: 32, 64 or
//      128) invocations walk k side by side, 256 / T columns per workgroup (wider teams where
//      few columns would leave SMs without enough loads in flight: lower/matmul_tiers.cpp);
//   0: otherwise: T = 4 slices of k, 64 columns per workgroup, consecutive invocations on
//      consecutive columns.
// With VEC4, each invocation issues UNROLL (spec 12) 16-byte loads of B before it multiplies them.
// Column tiles (tile0) are 256 / T wide to match. Dispatch: x = column tiles, y = row blocks of
// ROWS, z = batch. No split-K: the team already splits K.
// NORM_A (spec 7): A is rms_norm(x, w) of A's rows, x bound as A and w at binding 7 (otherwise A
// again, not read): the teams multiply x·w into B and add up x² as they walk k (each team walks
// a whole row), and scale each sum by the row's 1/sqrt(mean(x²) + eps) before the epilogue --
// decoding's norms need no dispatch of their own.
// GLU (spec 9): the two products are a gated MLP's gate and up projections (same N). A
// workgroup's first COLS / 2 columns are gate columns and the rest the up columns of the same
// outputs; the store writes both and silu(gate) * up at binding 8 (C again without GLU), so no
// swiglu dispatch follows (matmul_coop.glsl's GLU, for decoding).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#include "matmul_common.glsl"

layout(constant_id = 5) const uint K_CONTIG = 1u;
// With K_CONTIG: A and B rows 16-byte aligned and K % 4 == 0, so a team walks k in vec4s.
layout(constant_id = 6) const uint VEC4 = 0u;
layout(constant_id = 7) const uint NORM_A = 0u;
layout(constant_id = 8) const float NORM_EPS = 1e-6f;
layout(constant_id = 9) const uint GLU = 0u;
layout(constant_id = 11) const uint TEAM = 32u;  // (10 is matmul_common.glsl's K_GROUPS, 0 here)
// VEC4: the vec4s of B an invocation loads before it multiplies any (loads in flight).
layout(constant_id = 12) const uint UNROLL = 1u;
layout(std430, set = 0, binding = 8) writeonly buffer Glu { uint glu_data[]; };  // [batch, M, N] silu(gate) * up
layout(std430, set = 0, binding = 7) readonly buffer NormW { uint norm_w[]; };
layout(std430, set = 0, binding = 7) readonly buffer NormW4 { vec4 norm_w4[]; };
layout(std430, set = 0, binding = 2) readonly buffer A4 { vec4 a4[]; };
layout(std430, set = 0, binding = 3) readonly buffer B4 { vec4 b4[]; };
const uint T = K_CONTIG != 0u ? TEAM : 4u;  // invocations per column
const uint COLS = 256u / T;                // columns per workgroup
const uint ROWS = 4u;
shared float partial[ROWS][256];
shared float partial_ss[NORM_A != 0u ? ROWS : 1u][256];  // NORM_A: the teams' sums of x²
// Teams of 32 or more add their partials in two steps, SEGMENTS runs of T / SEGMENTS in
// parallel and then the runs' sums, instead of T one after another.
const uint SEGMENTS = T >= 32u ? 8u : 1u;
shared float segment_sum[SEGMENTS > 1u ? ROWS : 1u][SEGMENTS > 1u ? COLS * SEGMENTS : 1u];
shared float segment_ss[SEGMENTS > 1u && NORM_A != 0u ? ROWS : 1u][SEGMENTS > 1u ? COLS * SEGMENTS : 1u];

// With SEGMENTS > 1: the sums of each team's runs (partial[] written, a barrier after it), one
// invocation a (row, column, run); a barrier follows.
void add_segments(uint tid) {
  if (tid >= ROWS * COLS * SEGMENTS) return;
  const uint run = T / SEGMENTS, s = tid % SEGMENTS, c = (tid / SEGMENTS) % COLS, r = tid / (SEGMENTS * COLS);
  float sum = 0.0f, sq = 0.0f;
  for (uint l = s * run; l < (s + 1u) * run; ++l) {
    sum += partial[r][c * T + l];
    if (NORM_A != 0u) sq += partial_ss[r][c * T + l];
  }
  segment_sum[r][c * SEGMENTS + s] = sum;
  if (NORM_A != 0u) segment_ss[r][c * SEGMENTS + s] = sq;
}

// Column c's team's sum for row r, from shared memory (after the barriers).
float team_sum(uint r, uint c) {
  float sum = 0.0f;
  if (SEGMENTS > 1u)
    for (uint s = 0u; s < SEGMENTS; ++s) sum += segment_sum[r][c * SEGMENTS + s];
  else
    for (uint l = 0u; l < T; ++l) sum += partial[r][c * T + l];
  return sum;
}

// NORM_A: row r's 1/sqrt(mean(x²) + eps), from column c's team (every team walked the whole row).
float row_scale(uint r, uint c) {
  float sq = 0.0f;
  if (SEGMENTS > 1u)
    for (uint s = 0u; s < SEGMENTS; ++s) sq += segment_ss[r][c * SEGMENTS + s];
  else
    for (uint l = 0u; l < T; ++l) sq += partial_ss[r][c * T + l];
  return norm_rstd(sq, p.K, NORM_EPS);
}

void main() {
  uint tid = gl_LocalInvocationID.x;
  uint lane = K_CONTIG != 0u ? tid % T : tid / COLS;
  uint col = K_CONTIG != 0u ? tid / T : tid % COLS;
  uint tiles = p.tile0[p.groups];
  uint row_blocks = (p.M + ROWS - 1u) / ROWS;

  for (uint bt = gl_WorkGroupID.z; bt < p.batch; bt += gl_NumWorkGroups.z) {
    uint a_base, b_batch;
    STRIDED_OFFSET(a_base, bt, p.batch_rank, p.batch_shape, p.a_batch_stride)
    STRIDED_OFFSET(b_batch, bt, p.batch_rank, p.batch_shape, p.b_batch_stride)
    a_base += p.a_offset;
    for (uint rb = gl_WorkGroupID.y; rb < row_blocks; rb += gl_NumWorkGroups.y) {
      uint m0 = rb * ROWS, rows = min(ROWS, p.M - m0);
      for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        // GLU: tile t covers outputs t * COLS / 2 .. of both products; column col is the gate's
        // (group 0) in the first half, the up's (group 1) in the second.
        uint g = GLU != 0u ? col / (COLS / 2u) : group_of(tile);
        uint N = p.N[g], n = GLU != 0u ? tile * (COLS / 2u) + col % (COLS / 2u) : (tile - p.tile0[g]) * COLS + col;
        uint b_at = b_batch + p.b_offset[g] + n * p.b_col_stride[g];
        uint b_row = p.b_row_stride[g];
        float acc[ROWS], ss[ROWS];
        for (uint r = 0u; r < ROWS; ++r) acc[r] = ss[r] = 0.0f;
        if (n < N && VEC4 != 0u) {
          uint a_row4 = p.a_row_stride / 4u, k4_end = p.K / 4u;
          for (uint k4_first = lane; k4_first < k4_end; k4_first += T * UNROLL) {
            vec4 bs[UNROLL];  // issued together, so that UNROLL loads are on their way at once
            for (uint u = 0u; u < UNROLL; ++u) {
              const uint k4 = k4_first + u * T;
              bs[u] = k4 < k4_end ? b4[b_at / 4u + k4] : vec4(0.0f);
            }
            // (A break, not a loop condition: the condition form lost the gain, H200.)
            for (uint u = 0u; u < UNROLL; ++u) {
              const uint k4 = k4_first + u * T;
              if (k4 >= k4_end) break;
              vec4 b = bs[u];
              uint a_at = (a_base + m0 * p.a_row_stride) / 4u + k4;
              if (NORM_A != 0u) {
                vec4 wb = norm_w4[k4] * b;
                for (uint r = 0u; r < rows; ++r) {
                  vec4 x = a4[a_at + r * a_row4];
                  ss[r] += dot(x, x);
                  acc[r] += dot(x, wb);
                }
              } else {
                for (uint r = 0u; r < rows; ++r) acc[r] += dot(a4[a_at + r * a_row4], b);
              }
            }
          }
        } else if (n < N) {
          for (uint k = lane; k < p.K; k += T) {
            float b = uintBitsToFloat(b_data[b_at + k * b_row]);
            uint a_at = a_base + m0 * p.a_row_stride + k * p.a_col_stride;
            if (NORM_A != 0u) b *= uintBitsToFloat(norm_w[k]);
            for (uint r = 0u; r < rows; ++r) {
              float x = uintBitsToFloat(a_data[a_at + r * p.a_row_stride]);
              if (NORM_A != 0u) ss[r] += x * x;
              acc[r] += x * b;
            }
          }
        }
        for (uint r = 0u; r < ROWS; ++r) partial[r][col * T + lane] = acc[r];
        if (NORM_A != 0u)
          for (uint r = 0u; r < ROWS; ++r) partial_ss[r][col * T + lane] = ss[r];
        barrier();
        if (SEGMENTS > 1u) {
          add_segments(tid);
          barrier();
        }
        if (GLU != 0u) {
          const uint half_cols = COLS / 2u;
          if (tid < half_cols * ROWS) {  // one invocation per (output, row): gate, up and their swiglu
            uint c = tid % half_cols, r = tid / half_cols, nn = tile * half_cols + c;
            if (r < rows && nn < N) {
              float gate = team_sum(r, c), up = team_sum(r, c + half_cols);
              if (NORM_A != 0u) {
                float scale = row_scale(r, c);
                gate *= scale;
                up *= scale;
              }
              store_c(0u, bt, m0 + r, nn, gate, 0u);
              store_c(1u, bt, m0 + r, nn, up, 0u);
              glu_data[(bt * p.M + m0 + r) * N + nn] = floatBitsToUint(silu_p(gate) * up);
            }
          }
        } else if (tid < COLS * ROWS) {  // one invocation per (column, row) adds the team's partials
          uint c = tid % COLS, r = tid / COLS, nn = (tile - p.tile0[g]) * COLS + c;
          if (r < rows && nn < N) {
            float sum = team_sum(r, c);
            if (NORM_A != 0u) sum *= row_scale(r, c);
            store_c(g, bt, m0 + r, nn, sum, 0u);
          }
        }
        barrier();
      }
    }
  }
}
