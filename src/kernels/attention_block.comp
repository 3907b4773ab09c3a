#version 450
// Attention forward for many query rows (prefill, training), exact f32: a workgroup per block of
// BR query rows of one (batch, head). Each tile of BC keys and their values is staged in shared
// memory once for the block's rows, where the per-row kernel (attention.comp) reads every key
// once per row and reduces each tile over its whole workgroup. TPR = WG / BR invocations share a
// row: invocation t holds the row's scores of keys t % TPR + u·TPR and its output's 4-element
// vectors t % TPR + o·TPR; the online softmax's running max m and sum l are the row's, kept by
// each of its invocations alike. Shared memory is read 16 bytes at a time (head dims padded to
// a multiple of 4 with zeros): the kernel is bound by those reads. Same contract, bindings and
// results as attention.comp (attention_abi.hpp, Attention and AttentionBlock), lse included.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint HAS_POSITION = 0u;
layout(constant_id = 2) const uint D = 64u;   // <= kAttentionBlockMaxHeadDim, as DV
layout(constant_id = 3) const uint DV = 64u;
layout(constant_id = 4) const uint BC = 64u;  // keys a tile: 16, 32 or 64, as shared memory allows
layout(std430, set = 0, binding = 2) readonly buffer Q { uint q[]; };
layout(std430, set = 0, binding = 3) readonly buffer K { uint k[]; };
layout(std430, set = 0, binding = 4) readonly buffer V { uint v[]; };
layout(std430, set = 0, binding = 5) readonly buffer Position { uint position_data[]; };
layout(std430, set = 0, binding = 6) writeonly buffer O { uint o[]; };
#include "attention_common.glsl"

const uint BR = 16u, TPR = WG / BR;  // rows a block, invocations a row
const uint SPT = BC / TPR;           // scores an invocation
const uint D4 = (D + 3u) / 4u, DV4 = (DV + 3u) / 4u, OPT = (DV4 + TPR - 1u) / TPR;  // in vec4s
const uint KP = D4 + 1u;  // q and k rows padded by 16 bytes: a quarter subgroup's 16-byte reads of
                          // consecutive keys hit distinct banks
shared vec4 q_s[BR * KP];  // the block's q rows, scaled
shared vec4 k_s[BC * KP];
shared vec4 v_s[BC * DV4];
shared vec4 s_s[BR * BC / 4u];  // the tile's scores
shared vec4 e_s[BR * BC / 4u];  // exp(score - m)

void main() {
  const uint t = gl_LocalInvocationID.x, r = t / TPR, c0 = t % TPR;
  const uint bh = gl_WorkGroupID.y, h = bh % p.hq, b = bh / p.hq;
  const uint kv = b * p.hkv + h / (p.hq / p.hkv);
  const uint q_first = first_row(bh, p.hq, p.sq), q_step = row_step(p.hq);
  const uint kv_first = first_row(kv, p.hkv, p.sk), kv_step = row_step(p.hkv);
  const int base = query_base();
  for (uint i0 = gl_WorkGroupID.x * BR; i0 < p.sq; i0 += gl_NumWorkGroups.x * BR) {
    const uint rows = min(BR, p.sq - i0), i = i0 + r;
    for (uint e = t; e < BR * D4 * 4u; e += WG) {
      uint rr = e / (D4 * 4u), x = e % (D4 * 4u);
      q_s[rr * KP + x / 4u][x % 4u] =
          rr < rows && x < D ? uintBitsToFloat(q[(q_first + (i0 + rr) * q_step) * D + x]) * p.scale : 0.0f;
    }
    uint lo = 0u, hi = 0u, block_lo, block_hi, unused;
    if (r < rows) visible_keys(i, base, lo, hi);
    // Both ends of a row's keys grow with the row: the block's keys run from its first row's
    // first to its last row's last.
    visible_keys(i0, base, block_lo, unused);
    visible_keys(i0 + rows - 1u, base, unused, block_hi);
    float m = -F_INF, l = 0.0f;
    vec4 acc[OPT];
    for (uint j = 0u; j < OPT; ++j) acc[j] = vec4(0.0f);
    for (uint j0 = block_lo; j0 < block_hi; j0 += BC) {
      for (uint e = t; e < BC * D4 * 4u; e += WG) {
        uint cc = e / (D4 * 4u), x = e % (D4 * 4u), j = j0 + cc;
        k_s[cc * KP + x / 4u][x % 4u] = j < block_hi && x < D ? uintBitsToFloat(k[(kv_first + j * kv_step) * D + x]) : 0.0f;
      }
      for (uint e = t; e < BC * DV4 * 4u; e += WG) {
        uint cc = e / (DV4 * 4u), x = e % (DV4 * 4u), j = j0 + cc;
        v_s[cc * DV4 + x / 4u][x % 4u] = j < block_hi && x < DV ? uintBitsToFloat(v[(kv_first + j * kv_step) * DV + x]) : 0.0f;
      }
      barrier();
      float s[SPT];
      for (uint u = 0u; u < SPT; ++u) s[u] = 0.0f;
      for (uint x = 0u; x < D4; ++x) {
        vec4 qx = q_s[r * KP + x];
        for (uint u = 0u; u < SPT; ++u) s[u] += dot(qx, k_s[(c0 + u * TPR) * KP + x]);
      }
      for (uint u = 0u; u < SPT; ++u) {
        uint cc = c0 + u * TPR, j = j0 + cc;
        if (j < lo || j >= hi) s[u] = -F_INF;
        s_s[(r * BC + cc) / 4u][cc % 4u] = s[u];
      }
      barrier();
      vec4 tile_max4 = vec4(-F_INF);
      for (uint c4 = 0u; c4 < BC / 4u; ++c4) {
        vec4 x = s_s[r * BC / 4u + c4];
        tile_max4 = vec4(max_nan(tile_max4.x, x.x), max_nan(tile_max4.y, x.y), max_nan(tile_max4.z, x.z),
                         max_nan(tile_max4.w, x.w));
      }
      const float tile_max = max_nan(max_nan(tile_max4.x, tile_max4.y), max_nan(tile_max4.z, tile_max4.w));
      // A row that has seen no key yet (m_new = -inf) keeps l = 0 and its zero output.
      const float m_new = max_nan(m, tile_max);
      const bool none = m_new == -F_INF;
      for (uint u = 0u; u < SPT; ++u) {
        uint cc = c0 + u * TPR;
        e_s[(r * BC + cc) / 4u][cc % 4u] = none ? 0.0f : exp_diff(s[u], m_new);
      }
      const float alpha = none ? 1.0f : exp_diff(m, m_new);  // 0 while m = -inf
      barrier();
      vec4 tile_sum4 = vec4(0.0f);
      for (uint j = 0u; j < OPT; ++j) acc[j] *= alpha;
      for (uint c4 = 0u; c4 < BC / 4u; ++c4) {
        vec4 e4 = e_s[r * BC / 4u + c4];
        tile_sum4 += e4;
        for (uint j = 0u; j < OPT; ++j) {
          uint d4 = c0 + j * TPR;
          if (d4 >= DV4) break;
          acc[j] += e4.x * v_s[(c4 * 4u) * DV4 + d4] + e4.y * v_s[(c4 * 4u + 1u) * DV4 + d4] +
                    e4.z * v_s[(c4 * 4u + 2u) * DV4 + d4] + e4.w * v_s[(c4 * 4u + 3u) * DV4 + d4];
        }
      }
      l = l * alpha + ((tile_sum4.x + tile_sum4.y) + (tile_sum4.z + tile_sum4.w));
      m = m_new;
      barrier();  // the next tile rewrites k_s, v_s, s_s and e_s
    }
    if (r < rows) {
      const uint row = q_first + i * q_step;
      for (uint j = 0u; j < OPT; ++j) {
        uint d4 = c0 + j * TPR;
        if (d4 >= DV4) break;
        vec4 out4 = hi > lo ? acc[j] / l : vec4(0.0f);
        for (uint c = 0u; c < 4u && d4 * 4u + c < DV; ++c) o[row * DV + d4 * 4u + c] = floatBitsToUint(out4[c]);
      }
      if (c0 == 0u) o[p.lse_offset + row] = floatBitsToUint(hi > lo ? m + log_p(l) : -F_INF);
    }
    barrier();  // the next block rewrites q_s
  }
}
