#version 450
// Attention forward on tensor cores for short query blocks (decoding, short sequences): the
// contract of Attention in attention_abi.hpp, for D == Dv, D a multiple of 16, D <= 64. Where
// attention_coop.glsl gives each subgroup 16 query rows of a 128-row block (few workgroups when
// Sq is small), this kernel gives a workgroup 32 query rows and splits the KEYS among its
// subgroups: subgroup w takes rows 16·(w / 4) .. +15 and, in each 64-key chunk staged in shared
// memory, keys 16·(w % 4) .. +15. Two passes as attention_coop.glsl (statistics, then P·V); the
// four subgroups of a row group merge their statistics after pass 1 and their outputs at the end
// through shared memory. f16 operands scaled per block into f16's range (coop_stage.glsl), f32
// accumulation and softmax.
#extension GL_GOOGLE_include_directive : require
#include "coop_fragments.glsl"
#include "common.glsl"
#include "coop_stage.glsl"

#include "attention_coop_forward.glsl"

const uint D_MAX = 64u, FRAGS_MAX = D_MAX / 16u, FRAGS = HEAD_DIM / 16u;
const uint ROWS = 32u, CHUNK = 64u;         // query rows per workgroup, keys per staged chunk
const uint STRIDE = D_MAX + 8u;             // f16 row of Q, K, V in shared memory
const uint S_STRIDE = 20u, P_STRIDE = 24u;  // per subgroup: 16 x 16 scores (f32), probabilities (f16)
shared float16_t q_rows[ROWS * STRIDE];
shared float16_t k_chunk[CHUNK * STRIDE];
shared float16_t v_chunk[CHUNK * STRIDE];
shared float s_tile[8u * 16u * S_STRIDE];
shared float16_t p_tile[8u * 16u * P_STRIDE];
shared float part_m[8u * 16u], part_l[8u * 16u];  // pass 1's statistics per subgroup and row
shared int part_exp[8u];                           // each subgroup's accumulator exponent

void main() {
  uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint group = warp / 4u, slice = warp % 4u;  // row group, key slice
  uint bh = gl_WorkGroupID.y, h = bh % p.hq, b = bh / p.hq;
  const uint kv_first = first_row(b * p.hkv + h / (p.hq / p.hkv), p.hkv, p.sk), kv_step = row_step(p.hkv);
  const uint q_first = first_row(bh, p.hq, p.sq), q_step = row_step(p.hq);
  uint s_at = warp * 16u * S_STRIDE, p_at = warp * 16u * P_STRIDE;
  const int base = query_base();
  uint my_row = lane / 2u, my_col0 = (lane % 2u) * 8u;  // two invocations per 16-key score row

  for (uint block = gl_WorkGroupID.x; block * ROWS < p.sq; block += gl_NumWorkGroups.x) {
    uint row0 = block * ROWS, qi = row0 + group * 16u + my_row;
    uint lo = 0u, hi = 0u;
    if (qi < p.sq) visible_keys(qi, base, lo, hi);
    uint block_lo, block_hi, unused;
    visible_keys(row0, base, block_lo, unused);
    visible_keys(min(row0 + ROWS - 1u, p.sq - 1u), base, unused, block_hi);

    barrier();  // the previous block is done with q_rows
    int eq, unused_exp;
    STAGE_TILES(q_rows, q, eq, STAGE_EXP_LIMIT, q_rows, q, unused_exp, STAGE_EXP_LIMIT, false, ROWS, STRIDE, q_first, q_step, row0, p.sq)
    barrier();
    FRAG16 qf[FRAGS_MAX];
    for (uint f = 0u; f < FRAGS; ++f) coopMatLoadNV(qf[f], q_rows, group * 16u * STRIDE + f * 16u, STRIDE, false);

    float m = -F_INF, l = 0.0f;  // pass 1: this subgroup's keys; after the merge: the row's
    FRAG32 acc[FRAGS_MAX];
    for (uint f = 0u; f < FRAGS_MAX; ++f) acc[f] = FRAG32(0.0f);
    int acc_exp = 0;  // acc holds this subgroup's share of O times 2^acc_exp
    for (uint pass = 0u; pass < 2u; ++pass) {
      int min_v = STAGE_EXP_LIMIT, min_p = STAGE_EXP_LIMIT;  // the smallest exponents so far
      for (uint j0 = block_lo - block_lo % CHUNK; j0 < block_hi; j0 += CHUNK) {
        barrier();
        int ek, ev;
        STAGE_KV(k_chunk, ek, v_chunk, ev, min_v + STAGE_GROWTH, CHUNK, STRIDE, kv_first, kv_step, j0, pass == 1u)
        min_v = min(min_v, ev);
        barrier();
        // S = Q·Kᵀ for this subgroup's 16 rows and 16 keys (Kᵀ: k_chunk read column-major).
        FRAG32 s = FRAG32(0.0f);
        for (uint f = 0u; f < FRAGS; ++f) {
          FRAG16 kf;
          coopMatLoadNV(kf, k_chunk, slice * 16u * STRIDE + f * 16u, STRIDE, true);
          s = coopMatMulAddNV(qf[f], kf, s);
        }
        UNSCALE_FRAGMENT(s, eq + ek)
        coopMatStoreNV(s, s_tile, s_at, S_STRIDE, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        uint jb = j0 + slice * 16u + my_col0;  // this invocation's first key
        if (pass == 0u) {
          float tile_max = -F_INF;
          for (uint c = 0u; c < 8u; ++c)
            if (jb + c >= lo && jb + c < hi) tile_max = max_nan(tile_max, s_tile[s_at + my_row * S_STRIDE + my_col0 + c] * p.scale);
          tile_max = max_nan(tile_max, subgroupShuffleXor(tile_max, 1u));
          float m_new = max_nan(m, tile_max), sum = 0.0f;
          for (uint c = 0u; c < 8u; ++c)
            if (jb + c >= lo && jb + c < hi) sum += exp_diff(s_tile[s_at + my_row * S_STRIDE + my_col0 + c] * p.scale, m_new);
          sum += subgroupShuffleXor(sum, 1u);
          l = m == -F_INF ? sum : l * exp_diff(m, m_new) + sum;
          m = m_new;
        } else {
          float inv_l = l > 0.0f ? 1.0f / l : 0.0f, pr[8];
          for (uint c = 0u; c < 8u; ++c)
            pr[c] = (jb + c >= lo && jb + c < hi) ? exp_diff(s_tile[s_at + my_row * S_STRIDE + my_col0 + c] * p.scale, m) * inv_l : 0.0f;
          int ep;
          STAGE_P(pr, 8u, ep, min_p + STAGE_GROWTH)
          min_p = min(min_p, ep);
          RESCALE_ACCUMULATORS(acc, acc_exp, ep + ev)
          subgroupMemoryBarrierShared();
          subgroupBarrier();
          FRAG16 pf;
          coopMatLoadNV(pf, p_tile, p_at, P_STRIDE, false);
          for (uint f = 0u; f < FRAGS; ++f) {
            FRAG16 vf;
            coopMatLoadNV(vf, v_chunk, slice * 16u * STRIDE + f * 16u, STRIDE, false);
            acc[f] = coopMatMulAddNV(pf, vf, acc[f]);
          }
        }
        subgroupBarrier();
      }
      if (pass == 0u) {  // merge the four key slices' statistics of each row
        if (lane % 2u == 0u) {
          part_m[warp * 16u + my_row] = m;
          part_l[warp * 16u + my_row] = l;
        }
        barrier();
        float mm = -F_INF, ll = 0.0f;
        for (uint s2 = 0u; s2 < 4u; ++s2) mm = max_nan(mm, part_m[(group * 4u + s2) * 16u + my_row]);
        for (uint s2 = 0u; s2 < 4u; ++s2) {
          float ms = part_m[(group * 4u + s2) * 16u + my_row];
          if (ms != -F_INF) ll += part_l[(group * 4u + s2) * 16u + my_row] * exp_diff(ms, mm);
        }
        m = mm;
        l = ll;
      }
    }

    // Output: the four slices' partial products summed, 16 columns at a time, each brought back
    // from its own exponent.
    if (subgroupElect()) part_exp[warp] = acc_exp;
    for (uint f = 0u; f < FRAGS; ++f) {
      barrier();
      coopMatStoreNV(acc[f], s_tile, s_at, S_STRIDE, false);
      barrier();
      if (slice == 0u) {
        for (uint e = lane; e < 256u; e += gl_SubgroupSize) {
          uint r = e / 16u, c = e % 16u, row = row0 + group * 16u + r;
          float sum = 0.0f;
          for (uint s2 = 0u; s2 < 4u; ++s2)
            sum += stage_unscale(s_tile[(group * 4u + s2) * 16u * S_STRIDE + r * S_STRIDE + c], part_exp[group * 4u + s2]);
          if (row < p.sq) o[(q_first + row * q_step) * HEAD_DIM + f * 16u + c] = floatBitsToUint(sum);
        }
      }
    }
    if (slice == 0u && lane % 2u == 0u && qi < p.sq) o[p.lse_offset + q_first + qi * q_step] = floatBitsToUint(hi > lo ? m + log_p(l) : -F_INF);
  }
}
