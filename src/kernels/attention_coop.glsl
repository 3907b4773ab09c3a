#version 450
// Attention forward on tensor cores (GL_NV_cooperative_matrix), the contract of Attention in
// attention_abi.hpp, for D == Dv, D a multiple of 16, D <= 128. Operands are staged as f16, each
// block scaled by a power of two into f16's range (coop_stage.glsl); products accumulate in f32;
// the softmax runs in f32.
//
// A workgroup is 8 subgroups of 32; subgroup w owns query rows 16w .. 16w+15 of the workgroup's
// block of 128 and keeps its Q fragments and its output accumulators in registers. Keys come in
// tiles of 32, staged in shared memory by the whole workgroup. Two passes over the keys, so the
// accumulators never need a per-row rescale (a cooperative matrix cannot scale its rows):
//   1. S = Q·Kᵀ per tile; each row's running max m and sum l (online softmax, scalars);
//   2. S again, P = exp(S·scale − m) / l rounded to f16, O += P·V.
// Each row's scores pass through a per-subgroup scratch where two invocations own a row (16
// columns each) and meet by a subgroup shuffle. Writes the output and lse = m + log(l).
#extension GL_GOOGLE_include_directive : require
#include "coop_fragments.glsl"
#include "common.glsl"
#include "coop_stage.glsl"

#include "attention_coop_forward.glsl"

const uint D_MAX = 128u, FRAGS_MAX = D_MAX / 16u;  // head dims up to 128: 8 fragments
const uint FRAGS = HEAD_DIM / 16u;
const uint KT = 32u;                                 // keys per tile
const uint KV_STRIDE = D_MAX + 8u;                   // f16 row of a K or V tile (16-byte padding)
const uint S_STRIDE = KT + 4u, P_STRIDE = KT + 8u;   // f32 score row, f16 probability row
shared float16_t k_tile[KT * KV_STRIDE];             // k_tile[key][d]
shared float16_t v_tile[KT * KV_STRIDE];             // v_tile[key][d]
shared float s_tile[8u * 16u * S_STRIDE];            // per subgroup: 16 rows x 32 scores
shared float16_t p_tile[8u * 16u * P_STRIDE];        // per subgroup: 16 rows x 32 (also Q staging)

void main() {
  uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint bh = gl_WorkGroupID.y, h = bh % p.hq, b = bh / p.hq;
  const uint kv_first = first_row(b * p.hkv + h / (p.hq / p.hkv), p.hkv, p.sk), kv_step = row_step(p.hkv);
  const uint q_first = first_row(bh, p.hq, p.sq), q_step = row_step(p.hq);
  const int base = query_base();
  uint s_at = warp * 16u * S_STRIDE, p_at = warp * 16u * P_STRIDE;

  for (uint block = gl_WorkGroupID.x; block * 128u < p.sq; block += gl_NumWorkGroups.x) {
    uint row0 = block * 128u + warp * 16u;  // this subgroup's first query row
    // Keys any row of the block sees: lo grows and hi grows with the row.
    uint block_lo, block_hi, unused;
    visible_keys(block * 128u, base, block_lo, unused);
    visible_keys(min(block * 128u + 127u, p.sq - 1u), base, unused, block_hi);
    // The row and 16 columns of the score tile this invocation owns, and its row's keys.
    uint my_row = lane / 2u, my_col0 = (lane % 2u) * 16u, qi = row0 + my_row;
    uint lo = 0u, hi = 0u;
    if (qi < p.sq) visible_keys(qi, base, lo, hi);

    // Q fragments, scaled by 2^eq, staged 32 columns at a time through this subgroup's scratch.
    FRAG16 qf[FRAGS_MAX];
    int eq;
    LOAD_ROWS(qf, eq, q, q_first, q_step, row0, p.sq)

    float m = -F_INF, l = 0.0f;
    for (uint pass = 0u; pass < 2u; ++pass) {
      FRAG32 acc[FRAGS_MAX];
      for (uint f = 0u; f < FRAGS_MAX; ++f) acc[f] = FRAG32(0.0f);
      // acc holds O times 2^acc_exp; min_v, min_p: the smallest V and P exponents so far.
      int acc_exp = 0, min_v = STAGE_EXP_LIMIT, min_p = STAGE_EXP_LIMIT;
      for (uint j0 = block_lo - block_lo % KT; j0 < block_hi; j0 += KT) {
        barrier();  // the previous tile is consumed
        int ek, ev;
        STAGE_KV(k_tile, ek, v_tile, ev, min_v + STAGE_GROWTH, KT, KV_STRIDE, kv_first, kv_step, j0, pass == 1u)
        min_v = min(min_v, ev);
        barrier();
        // S = Q·Kᵀ for 16 rows x 32 keys: Kᵀ(d, key) is k_tile read column-major.
        for (uint half_ = 0u; half_ < 2u; ++half_) {
          FRAG32 s = FRAG32(0.0f);
          for (uint f = 0u; f < FRAGS; ++f) {
            FRAG16 kf;
            coopMatLoadNV(kf, k_tile, (half_ * 16u) * KV_STRIDE + f * 16u, KV_STRIDE, true);
            s = coopMatMulAddNV(qf[f], kf, s);
          }
          UNSCALE_FRAGMENT(s, eq + ek)
          coopMatStoreNV(s, s_tile, s_at + half_ * 16u, S_STRIDE, false);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        if (pass == 0u) {  // online max and sum of this row's visible scores
          float tile_max = -F_INF;
          for (uint c = 0u; c < 16u; ++c) {
            uint j = j0 + my_col0 + c;
            if (j >= lo && j < hi) tile_max = max_nan(tile_max, s_tile[s_at + my_row * S_STRIDE + my_col0 + c] * p.scale);
          }
          tile_max = max_nan(tile_max, subgroupShuffleXor(tile_max, 1u));
          float m_new = max_nan(m, tile_max), sum = 0.0f;
          for (uint c = 0u; c < 16u; ++c) {
            uint j = j0 + my_col0 + c;
            if (j >= lo && j < hi) sum += exp_diff(s_tile[s_at + my_row * S_STRIDE + my_col0 + c] * p.scale, m_new);
          }
          sum += subgroupShuffleXor(sum, 1u);
          l = m == -F_INF ? sum : l * exp_diff(m, m_new) + sum;  // no key seen yet: nothing to rescale
          m = m_new;
        } else {  // P = exp(S·scale − m) / l in f16, then O += P·V
          float inv_l = l > 0.0f ? 1.0f / l : 0.0f, pr[16];
          for (uint c = 0u; c < 16u; ++c) {
            uint j = j0 + my_col0 + c;
            pr[c] = (j >= lo && j < hi) ? exp_diff(s_tile[s_at + my_row * S_STRIDE + my_col0 + c] * p.scale, m) * inv_l : 0.0f;
          }
          int ep;
          STAGE_P(pr, 16u, ep, min_p + STAGE_GROWTH)
          min_p = min(min_p, ep);
          RESCALE_ACCUMULATORS(acc, acc_exp, ep + ev)
          subgroupMemoryBarrierShared();
          subgroupBarrier();
          for (uint kc = 0u; kc < KT; kc += 16u) {
            FRAG16 pf;
            coopMatLoadNV(pf, p_tile, p_at + kc, P_STRIDE, false);
            for (uint f = 0u; f < FRAGS; ++f) {
              FRAG16 vf;
              coopMatLoadNV(vf, v_tile, kc * KV_STRIDE + f * 16u, KV_STRIDE, false);
              acc[f] = coopMatMulAddNV(pf, vf, acc[f]);
            }
          }
        }
        subgroupBarrier();  // s_tile and p_tile are rewritten by the next tile
      }
      if (pass == 1u) {  // the output, through the score scratch
        STORE_ACCUMULATOR_ROWS(acc, acc_exp, FRAGS, o, q_first * HEAD_DIM, row0, p.sq, q_step * HEAD_DIM, 1.0f, s_tile, s_at, S_STRIDE)
        if (lane % 2u == 0u && qi < p.sq) o[p.lse_offset + q_first + qi * q_step] = floatBitsToUint(hi > lo ? m + log_p(l) : -F_INF);
      }
    }
  }
}
