#version 450
// MatMul for a few rows (decoding) whose B is a [N, K] weight (contiguous along k), exact f32,
// on devices with subgroup arithmetic: matmul_gemv.comp's contract and bindings, its K_CONTIG
// case. Memory-bound: the job is to stream B once at full bandwidth, so each invocation keeps
// UNROLL x TEAM_COLS 16-byte loads of B on their way and nothing waits at a barrier. A team of
// TEAM invocations (whole subgroups of SUBGROUP) computes TEAM_COLS columns for up to ROWS rows,
// its invocations walking k side by side; the partial sums meet through subgroupAdd and, in a
// team of several subgroups, one shared word a subgroup and a barrier. Tiles are
// (WG / TEAM) * TEAM_COLS columns (lower/matmul_tiers.cpp). Dispatch as matmul_gemv.comp.
// Spec: 5 K_CONTIG (1), 6 VEC4 (rows 16-byte aligned, K % 4 == 0), 7 NORM_A, 8 its eps, 9 GLU,
// 10 K_GROUPS (0), 11 TEAM, 12 UNROLL, 13 TEAM_COLS, 14 ROWS, 15 SUBGROUP (the device's size).
// NORM_A: A is rms_norm(x, w) of A's rows (x at binding 2, w at 7): x·w is multiplied as it is
// loaded, the team adds up x² as it walks the row, and the sums are scaled by the row's
// 1/sqrt(mean(x²) + eps) at the store. GLU: the first TEAM_COLS / 2 columns of a team are gate
// columns (group 0), the rest the up columns of the same outputs (group 1); the store writes
// both and silu(gate) * up at binding 8. The epilogue's bias and residual are loaded before the
// K loop (a load after it made every workgroup wait for it at its end).
#extension GL_GOOGLE_include_directive : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

#include "matmul_common.glsl"

layout(constant_id = 6) const uint VEC4 = 0u;
layout(constant_id = 7) const uint NORM_A = 0u;
layout(constant_id = 8) const float NORM_EPS = 1e-6f;
layout(constant_id = 9) const uint GLU = 0u;
layout(constant_id = 11) const uint TEAM = 32u;
layout(constant_id = 12) const uint UNROLL = 1u;
layout(constant_id = 13) const uint TEAM_COLS = 2u;
layout(constant_id = 14) const uint ROWS = 4u;
layout(constant_id = 15) const uint SUBGROUP = 32u;
layout(std430, set = 0, binding = 8) writeonly buffer Glu { uint glu_data[]; };  // [batch, M, N] silu(gate) * up
layout(std430, set = 0, binding = 7) readonly buffer NormW { uint norm_w[]; };
layout(std430, set = 0, binding = 7) readonly buffer NormW4 { vec4 norm_w4[]; };
layout(std430, set = 0, binding = 2) readonly buffer A4 { vec4 a4[]; };
layout(std430, set = 0, binding = 3) readonly buffer B4 { vec4 b4[]; };

const uint SPLIT = TEAM / SUBGROUP;  // subgroups a team
const uint TEAMS = WG / TEAM;        // teams a workgroup
const uint OUTS = GLU != 0u ? TEAM_COLS / 2u : TEAM_COLS;  // outputs a team stores a row
// A team of several subgroups: each subgroup's sums (ROWS x TEAM_COLS, then ROWS sums of x²).
const uint SUMS = ROWS * (TEAM_COLS + 1u);
shared float subgroup_sums[SPLIT > 1u ? WG / SUBGROUP : 1u][SPLIT > 1u ? SUMS : 1u];

struct Column {
  uint g, n, b_at;  // product, column, B's offset of its row
  bool live;
};

// Column c of team `team` in column tile `tile`.
Column column_of(uint tile, uint team, uint c, uint b_batch) {
  Column col;
  if (GLU != 0u) {
    col.g = c / OUTS;
    col.n = (tile * TEAMS + team) * OUTS + c % OUTS;
  } else {
    col.g = group_of(tile);
    col.n = (tile - p.tile0[col.g]) * TEAMS * TEAM_COLS + team * TEAM_COLS + c;
  }
  col.live = col.n < p.N[col.g];
  col.b_at = b_batch + p.b_offset[col.g] + col.n * p.b_col_stride[col.g];
  return col;
}

float acc[ROWS][TEAM_COLS];
float ss[ROWS];  // NORM_A: sums of x²

// This invocation's share of the products: k (or k / 4 with VEC4) from `first` in steps of TEAM.
void walk_k(Column cols[TEAM_COLS], uint first, uint a_at, uint rows) {
  if (VEC4 != 0u) {
    const uint a_row4 = p.a_row_stride / 4u, k4_end = p.K / 4u, a4_at = a_at / 4u;
    for (uint k4_first = first; k4_first < k4_end; k4_first += TEAM * UNROLL) {
      vec4 bs[UNROLL][TEAM_COLS];  // issued together: UNROLL x TEAM_COLS loads on their way at once
      for (uint u = 0u; u < UNROLL; ++u) {
        const uint k4 = k4_first + u * TEAM;
        for (uint c = 0u; c < TEAM_COLS; ++c)
          bs[u][c] = k4 < k4_end && cols[c].live ? b4[cols[c].b_at / 4u + k4] : vec4(0.0f);
      }
      for (uint u = 0u; u < UNROLL; ++u) {
        const uint k4 = k4_first + u * TEAM;
        if (k4 >= k4_end) break;
        const vec4 w = NORM_A != 0u ? norm_w4[k4] : vec4(1.0f);
        for (uint r = 0u; r < ROWS; ++r) {
          if (r >= rows) break;
          vec4 x = a4[a4_at + r * a_row4 + k4];
          if (NORM_A != 0u) {
            ss[r] += dot(x, x);
            x *= w;
          }
          for (uint c = 0u; c < TEAM_COLS; ++c) acc[r][c] += dot(x, bs[u][c]);
        }
      }
    }
    return;
  }
  for (uint k = first; k < p.K; k += TEAM) {
    float bs[TEAM_COLS];
    for (uint c = 0u; c < TEAM_COLS; ++c) bs[c] = cols[c].live ? uintBitsToFloat(b_data[cols[c].b_at + k]) : 0.0f;
    const float w = NORM_A != 0u ? uintBitsToFloat(norm_w[k]) : 1.0f;
    for (uint r = 0u; r < ROWS; ++r) {
      if (r >= rows) break;
      float x = uintBitsToFloat(a_data[a_at + r * p.a_row_stride + k * p.a_col_stride]);
      if (NORM_A != 0u) {
        ss[r] += x * x;
        x *= w;
      }
      for (uint c = 0u; c < TEAM_COLS; ++c) acc[r][c] += x * bs[c];
    }
  }
}

// The team's sums, in every invocation of the team's first subgroup.
void team_sums(uint subgroup, uint lane) {
  for (uint r = 0u; r < ROWS; ++r) {
    for (uint c = 0u; c < TEAM_COLS; ++c) acc[r][c] = subgroupAdd(acc[r][c]);
    if (NORM_A != 0u) ss[r] = subgroupAdd(ss[r]);
  }
  if (SPLIT == 1u) return;
  if (lane == 0u) {
    for (uint r = 0u; r < ROWS; ++r) {
      for (uint c = 0u; c < TEAM_COLS; ++c) subgroup_sums[subgroup][r * TEAM_COLS + c] = acc[r][c];
      subgroup_sums[subgroup][ROWS * TEAM_COLS + r] = ss[r];
    }
  }
  barrier();
  const uint first = subgroup - subgroup % SPLIT;
  for (uint r = 0u; r < ROWS; ++r) {
    for (uint c = 0u; c < TEAM_COLS; ++c) {
      float sum = 0.0f;
      for (uint s = 0u; s < SPLIT; ++s) sum += subgroup_sums[first + s][r * TEAM_COLS + c];
      acc[r][c] = sum;
    }
    float sq = 0.0f;
    for (uint s = 0u; s < SPLIT; ++s) sq += subgroup_sums[first + s][ROWS * TEAM_COLS + r];
    ss[r] = sq;
  }
}

// acc[r][c] for an index known only at run time (the arrays stay in registers).
float sum_at(uint r, uint c) {
  float v = 0.0f;
  for (uint rr = 0u; rr < ROWS; ++rr)
    for (uint cc = 0u; cc < TEAM_COLS; ++cc)
      if (rr == r && cc == c) v = acc[rr][cc];
  return v;
}

// NORM_A: row r's 1/sqrt(mean(x²) + eps); 1 otherwise.
float row_scale(uint r) {
  if (NORM_A == 0u) return 1.0f;
  float sq = 0.0f;
  for (uint rr = 0u; rr < ROWS; ++rr)
    if (rr == r) sq = ss[rr];
  return norm_rstd(sq, p.K, NORM_EPS);
}

// Column c of the team's (constant indices: the array stays in registers).
Column pick(Column cols[TEAM_COLS], uint c) {
  Column col = cols[0];
  for (uint i = 1u; i < TEAM_COLS; ++i)
    if (i == c) col = cols[i];
  return col;
}

// The epilogue's bias and residual for output j (row j / OUTS, column j % OUTS), loaded before the
// K loop so that their latency hides behind the loads of B rather than follow them.
struct Operands {
  float bias, residual;
};
Operands operands(Column cols[TEAM_COLS], uint bt, uint m0, uint rows, uint j) {
  const Column col = pick(cols, j % OUTS);
  if (j >= rows * OUTS || !col.live || GLU != 0u) return Operands(0.0f, 0.0f);
  return Operands(bias_at(col.n), residual_at(bt, m0 + j / OUTS, col.n));
}

// Outputs j = lane, lane + SUBGROUP, ... of the team (the first with its operands in `first`).
void store(Column cols[TEAM_COLS], uint bt, uint m0, uint rows, uint lane, Operands first) {
  for (uint j = lane; j < rows * OUTS; j += SUBGROUP) {
    const uint r = j / OUTS, o = j % OUTS, gm = m0 + r;
    const Column col = pick(cols, o);
    if (!col.live) continue;
    const float scale = row_scale(r);
    if (GLU != 0u) {
      const float gate = sum_at(r, o) * scale, up = sum_at(r, o + OUTS) * scale;
      store_c(0u, bt, gm, col.n, gate, 0u);
      store_c(1u, bt, gm, col.n, up, 0u);
      glu_data[(bt * p.M + gm) * p.N[0] + col.n] = floatBitsToUint(silu_p(gate) * up);
      continue;
    }
    const Operands f = j == lane ? first : operands(cols, bt, m0, rows, j);
    c_data[c_index(col.g, bt, gm, col.n)] = floatBitsToUint(epilogue_of(sum_at(r, o) * scale, f.bias, f.residual));
  }
}

void main() {
  // The tiles assume the subgroup size the device reports (Vulkan's rule for SPIR-V before 1.6
  // without a varying size); a driver that ran another would compute wrong columns: say so.
  if (gl_SubgroupSize != SUBGROUP) {
    if (gl_LocalInvocationID.x == 0u) report(STATUS_SUBGROUP_SIZE, 0xffffffffu, int(gl_SubgroupSize), SUBGROUP);
    return;
  }
  const uint subgroup = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint team = subgroup / SPLIT, first = (subgroup % SPLIT) * SUBGROUP + lane;
  const uint tiles = p.tile0[p.groups], row_blocks = (p.M + ROWS - 1u) / ROWS;
  for (uint bt = gl_WorkGroupID.z; bt < p.batch; bt += gl_NumWorkGroups.z) {
    uint a_base, b_batch;
    STRIDED_OFFSET(a_base, bt, p.batch_rank, p.batch_shape, p.a_batch_stride)
    STRIDED_OFFSET(b_batch, bt, p.batch_rank, p.batch_shape, p.b_batch_stride)
    a_base += p.a_offset;
    for (uint rb = gl_WorkGroupID.y; rb < row_blocks; rb += gl_NumWorkGroups.y) {
      const uint m0 = rb * ROWS, rows = min(ROWS, p.M - m0);
      for (uint tile = gl_WorkGroupID.x; tile < tiles; tile += gl_NumWorkGroups.x) {
        Column cols[TEAM_COLS];
        for (uint c = 0u; c < TEAM_COLS; ++c) cols[c] = column_of(tile, team, c, b_batch);
        for (uint r = 0u; r < ROWS; ++r) {
          ss[r] = 0.0f;
          for (uint c = 0u; c < TEAM_COLS; ++c) acc[r][c] = 0.0f;
        }
        const bool stores = subgroup % SPLIT == 0u;  // the team's first subgroup
        Operands pre = Operands(0.0f, 0.0f);
        if (stores) pre = operands(cols, bt, m0, rows, lane);
        walk_k(cols, first, a_base + m0 * p.a_row_stride, rows);
        team_sums(subgroup, lane);
        if (stores) store(cols, bt, m0, rows, lane, pre);
        if (SPLIT > 1u) barrier();  // subgroup_sums is read before the next tile writes it
      }
    }
  }
}
