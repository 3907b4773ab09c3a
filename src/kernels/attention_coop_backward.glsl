#version 450
// Attention backward on tensor cores (GL_NV_cooperative_matrix), the contract of
// AttentionBackward in attention_abi.hpp, for D == Dv, D a multiple of 16, D <= 128. As the
// forward (attention_coop.glsl): f16 operands scaled per block into f16's range (coop_stage.glsl),
// f32 accumulation and softmax, 8 subgroups of 32
// per workgroup, each owning 16 rows, 32-row tiles of the other side staged in shared memory.
// With p = exp(s·scale − lse) (the forward's lse: exact, no rescaling) and ds = p (dp − delta):
//   WHICH = d q: rows are queries; per key tile  S = Q·Kᵀ, dP = dO·Vᵀ, dQ += dS·K (·scale);
//   WHICH = d k: rows are keys;    per query tile Sᵀ = K·Qᵀ, dPᵀ = V·dOᵀ, dK += dSᵀ·Q (·scale);
//   WHICH = d v: rows are keys;    per query tile Sᵀ = K·Qᵀ, dV += Pᵀ·dO;
// the key-side gradients sum over every query head of the k/v head's group.
#extension GL_GOOGLE_include_directive : require
#include "coop_fragments.glsl"
#include "common.glsl"

layout(constant_id = 1) const uint WHICH = 0u;
layout(constant_id = 2) const uint HAS_POSITION = 0u;
layout(constant_id = 3) const uint HEAD_DIM = 64u;
const uint GRAD_Q = 0u, GRAD_K = 1u, GRAD_V = 2u;

layout(std430, set = 0, binding = 2) readonly buffer Q { uint q[]; };
layout(std430, set = 0, binding = 3) readonly buffer K { uint k[]; };
layout(std430, set = 0, binding = 4) readonly buffer V { uint v[]; };
layout(std430, set = 0, binding = 5) readonly buffer O { uint o[]; };  // only its lse is read
layout(std430, set = 0, binding = 6) readonly buffer DO { uint dout[]; };
layout(std430, set = 0, binding = 7) readonly buffer Delta { uint delta[]; };
layout(std430, set = 0, binding = 8) readonly buffer Position { uint position_data[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Grad { uint grad[]; };
#include "attention_common.glsl"

const uint D_MAX = 128u, FRAGS_MAX = D_MAX / 16u, FRAGS = HEAD_DIM / 16u;
const uint T = 32u;                                  // rows of the other side per tile
const uint TILE_STRIDE = D_MAX + 8u;
const uint S_STRIDE = T + 4u, P_STRIDE = T + 8u;
shared float16_t tile_a[T * TILE_STRIDE];  // d q: K; d k / d v: Q   ([row][d])
shared float16_t tile_b[T * TILE_STRIDE];  // d q: V; d k / d v: dO  ([row][d])
shared float s_tile[8u * 16u * S_STRIDE];  // per subgroup: 16 x 32 f32 (scores, dp; the output)
shared float16_t p_tile[8u * 16u * P_STRIDE];  // per subgroup: 16 x 32 f16 (p or ds; staging)

float f(uint word) { return uintBitsToFloat(word); }

#include "coop_stage.glsl"

// 16 x 32 product of this subgroup's A fragments with the T rows of `tile` (read as the
// transposed B: column-major), staged at exponents adding up to E, into its score scratch.
#define PRODUCT_T(a_frags, tile, E)                                                    \
  for (uint half_ = 0u; half_ < 2u; ++half_) {                                         \
    FRAG32 s_ = FRAG32(0.0f);                                                          \
    for (uint f_ = 0u; f_ < FRAGS; ++f_) {                                             \
      FRAG16 b_;                                                                       \
      coopMatLoadNV(b_, tile, (half_ * 16u) * TILE_STRIDE + f_ * 16u, TILE_STRIDE, true); \
      s_ = coopMatMulAddNV(a_frags[f_], b_, s_);                                       \
    }                                                                                  \
    UNSCALE_FRAGMENT(s_, E)                                                            \
    coopMatStoreNV(s_, s_tile, s_at + half_ * 16u, S_STRIDE, false);                   \
  }                                                                                    \
  subgroupMemoryBarrierShared();                                                       \
  subgroupBarrier();

// acc += (this subgroup's 16 x 32 p_tile) · (the T rows of `tile`, row-major B), acc brought to
// the exponent E of that product first.
#define ACCUMULATE(acc, tile, E)                                                       \
  RESCALE_ACCUMULATORS(acc, acc_exp, E)                                                \
  subgroupMemoryBarrierShared();                                                       \
  subgroupBarrier();                                                                   \
  for (uint kc_ = 0u; kc_ < T; kc_ += 16u) {                                           \
    FRAG16 a_;                                                                         \
    coopMatLoadNV(a_, p_tile, p_at + kc_, P_STRIDE, false);                            \
    for (uint f_ = 0u; f_ < FRAGS; ++f_) {                                             \
      FRAG16 b_;                                                                       \
      coopMatLoadNV(b_, tile, kc_ * TILE_STRIDE + f_ * 16u, TILE_STRIDE, false);       \
      acc[f_] = coopMatMulAddNV(a_, b_, acc[f_]);                                      \
    }                                                                                  \
  }

void main() {
  uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  uint s_at = warp * 16u * S_STRIDE, p_at = warp * 16u * P_STRIDE;
  uint my_row = lane / 2u, my_col0 = (lane % 2u) * 16u;  // two invocations per scratch row
  const int base = query_base();
  const bool by_query = WHICH == GRAD_Q;
  uint rows = by_query ? p.sq : p.sk;
  uint heads_y = gl_WorkGroupID.y;  // d q: b*Hq + h; d k / d v: b*Hkv + h
  uint group = p.hq / p.hkv;
  const uint q_step = row_step(p.hq), kv_step = row_step(p.hkv);

  for (uint block = gl_WorkGroupID.x; block * 128u < rows; block += gl_NumWorkGroups.x) {
    uint row0 = block * 128u + warp * 16u;
    FRAG32 acc[FRAGS_MAX];
    for (uint f_ = 0u; f_ < FRAGS_MAX; ++f_) acc[f_] = FRAG32(0.0f);
    float pr[16], ds[16];
    // acc holds the gradient times 2^acc_exp; min_*: the smallest exponents so far of the
    // accumulated products' blocks (coop_stage.glsl); ea, eb: the staged tiles', erow*: this
    // subgroup's rows'.
    int acc_exp = 0, min_tile = STAGE_EXP_LIMIT, min_p = STAGE_EXP_LIMIT, ea, eb, erow_a, erow_b;

    if (by_query) {
      uint bh = heads_y, h = bh % p.hq, b = bh / p.hq;
      uint kv_first = first_row(b * p.hkv + h / group, p.hkv, p.sk), q_first = first_row(bh, p.hq, p.sq);
      FRAG16 qf[FRAGS_MAX], dof[FRAGS_MAX];
      LOAD_ROWS(qf, erow_a, q, q_first, q_step, row0, p.sq)
      LOAD_ROWS(dof, erow_b, dout, q_first, q_step, row0, p.sq)
      uint qi = row0 + my_row, lo = 0u, hi = 0u;
      float lse = 0.0f, dl = 0.0f;
      if (qi < p.sq) {
        visible_keys(qi, base, lo, hi);
        lse = f(o[p.lse_offset + q_first + qi * q_step]);
        dl = f(delta[q_first + qi * q_step]);
      }
      uint block_lo, block_hi, unused;
      visible_keys(block * 128u, base, block_lo, unused);
      visible_keys(min(block * 128u + 127u, p.sq - 1u), base, unused, block_hi);
      for (uint j0 = block_lo - block_lo % T; j0 < block_hi; j0 += T) {
        barrier();
        STAGE_TILES(tile_a, k, ea, min_tile + STAGE_GROWTH, tile_b, v, eb, STAGE_EXP_LIMIT, true, T, TILE_STRIDE, kv_first, kv_step, j0, p.sk)
        min_tile = min(min_tile, ea);
        barrier();
        PRODUCT_T(qf, tile_a, erow_a + ea)  // S = Q·Kᵀ
        for (uint c = 0u; c < 16u; ++c) {
          uint j = j0 + my_col0 + c;
          pr[c] = (j >= lo && j < hi) ? exp_diff(s_tile[s_at + my_row * S_STRIDE + my_col0 + c] * p.scale, lse) : 0.0f;
        }
        subgroupBarrier();
        PRODUCT_T(dof, tile_b, erow_b + eb)  // dP = dO·Vᵀ
        for (uint c = 0u; c < 16u; ++c) ds[c] = pr[c] * (s_tile[s_at + my_row * S_STRIDE + my_col0 + c] - dl);
        int eds;
        STAGE_P(ds, 16u, eds, min_p + STAGE_GROWTH)
        min_p = min(min_p, eds);
        ACCUMULATE(acc, tile_a, eds + ea)  // dQ += dS·K
        subgroupBarrier();
      }
    } else {
      uint bkv = heads_y, hk = bkv % p.hkv, b = bkv / p.hkv;
      uint kv_first = first_row(bkv, p.hkv, p.sk);
      FRAG16 kf[FRAGS_MAX], vf[FRAGS_MAX];
      LOAD_ROWS(kf, erow_a, k, kv_first, kv_step, row0, p.sk)
      if (WHICH == GRAD_K) { LOAD_ROWS(vf, erow_b, v, kv_first, kv_step, row0, p.sk) }
      uint j = row0 + my_row;  // this invocation's key
      for (uint gi = 0u; gi < group; ++gi) {
        uint q_first = first_row(b * p.hq + hk * group + gi, p.hq, p.sq);
        for (uint i0 = 0u; i0 < p.sq; i0 += T) {
          barrier();
          // d k accumulates products with Q (tile a), d v with dO (tile b): that one's exponent is capped.
          int cap_a = WHICH == GRAD_K ? min_tile + STAGE_GROWTH : STAGE_EXP_LIMIT;
          int cap_b = WHICH == GRAD_V ? min_tile + STAGE_GROWTH : STAGE_EXP_LIMIT;
          STAGE_TILES(tile_a, q, ea, cap_a, tile_b, dout, eb, cap_b, true, T, TILE_STRIDE, q_first, q_step, i0, p.sq)
          min_tile = min(min_tile, WHICH == GRAD_K ? ea : eb);
          barrier();
          PRODUCT_T(kf, tile_a, erow_a + ea)  // Sᵀ = K·Qᵀ
          for (uint c = 0u; c < 16u; ++c) {
            uint i = i0 + my_col0 + c, lo = 0u, hi = 0u;
            if (i < p.sq) visible_keys(i, base, lo, hi);
            pr[c] = (j >= lo && j < hi) ? exp_diff(s_tile[s_at + my_row * S_STRIDE + my_col0 + c] * p.scale,
                                                   f(o[p.lse_offset + q_first + i * q_step])) : 0.0f;
          }
          subgroupBarrier();
          int ep;
          if (WHICH == GRAD_V) {
            STAGE_P(pr, 16u, ep, min_p + STAGE_GROWTH)
            min_p = min(min_p, ep);
            ACCUMULATE(acc, tile_b, ep + eb)  // dV += Pᵀ·dO
          } else {
            PRODUCT_T(vf, tile_b, erow_b + eb)  // dPᵀ = V·dOᵀ
            for (uint c = 0u; c < 16u; ++c) {
              uint i = i0 + my_col0 + c;
              float dl = i < p.sq ? f(delta[q_first + i * q_step]) : 0.0f;
              ds[c] = pr[c] * (s_tile[s_at + my_row * S_STRIDE + my_col0 + c] - dl);
            }
            STAGE_P(ds, 16u, ep, min_p + STAGE_GROWTH)
            min_p = min(min_p, ep);
            ACCUMULATE(acc, tile_a, ep + ea)  // dK += dSᵀ·Q
          }
          subgroupBarrier();
        }
      }
    }

    // The gradient rows, through the score scratch.
    float scale = WHICH == GRAD_V ? 1.0f : p.scale;
    uint out_step = by_query ? q_step : kv_step;
    STORE_ACCUMULATOR_ROWS(acc, acc_exp, FRAGS, grad, first_row(heads_y, by_query ? p.hq : p.hkv, rows) * HEAD_DIM, row0, rows,
                           out_step * HEAD_DIM, scale, s_tile, s_at, S_STRIDE)
  }
}
