#version 450
// Attention forward, one workgroup per query row: scores for a tile of WG keys (one key per
// invocation, 16-byte loads where D % 4 == 0), then an online-softmax update of the row's
// running max m, sum l and output. The output's P·V sums are split over the tile's keys:
// with Dv % 4 == 0 an invocation owns 4 elements (16-byte loads of V), so that Dv / 4 invocations
// cover a key and WG / (Dv / 4) slices walk the keys side by side (16 for Dv = 64; else Dv and
// WG / Dv). The slices meet at the end of the row, so a decoding step's single row walks 141
// keys 9 deep (Dv = 64) instead of 36. Never stores the score matrix; writes lse = m + log(l) after the output for the backward pass.
// With KEY_SPLIT, several workgroups share a row's keys (flash-decoding): each keeps m, l and its
// unnormalised sums for its range, and the last to finish rescales and adds them. See
// attention_abi.hpp (Attention).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

layout(constant_id = 1) const uint HAS_POSITION = 0u;
// The head dims, fixed per pipeline: the dot products unroll and their loads overlap.
layout(constant_id = 2) const uint D = 64u;
layout(constant_id = 3) const uint DV = 64u;
layout(std430, set = 0, binding = 2) readonly buffer Q { uint q[]; };
layout(std430, set = 0, binding = 3) readonly buffer K { uint k[]; };
layout(std430, set = 0, binding = 4) readonly buffer V { uint v[]; };
layout(std430, set = 0, binding = 5) readonly buffer Position { uint position_data[]; };
layout(std430, set = 0, binding = 6) writeonly buffer O { uint o[]; };
layout(constant_id = 4) const uint KEY_SPLIT = 0u;
// V rows a slice loads before the tile's score reductions (the vec4 path).
const uint V_EARLY = 4u;
// KEY_SPLIT: each split's m, l and Dv sums; the splits of a row that have stored theirs. Coherent:
// the last split reads what the others wrote in this dispatch.
layout(std430, set = 0, binding = 7) coherent buffer Partials { float part[]; };
layout(std430, set = 0, binding = 8) coherent buffer RowCounts { uint row_count[]; };
layout(std430, set = 0, binding = 3) readonly buffer K4 { vec4 k4[]; };
layout(std430, set = 0, binding = 4) readonly buffer V4 { vec4 v4[]; };
#include "attention_common.glsl"

shared float q_row[256];
shared float prob[WG];
#include "attention_slices.glsl"
shared vec4 slice_sum4[DV % 4u == 0u ? WG : 1u];

// merge_slices for 4 elements an invocation: element t (t < DV) of the row, from the slices'
// vec4s (invocation u of a slice owns elements 4u .. 4u + 3). Every invocation calls it.
float merge_slices4(uint t, uint lanes, uint slices, vec4 acc) {
  slice_sum4[t] = acc;
  barrier();
  float total = 0.0f;
  if (t < DV)
    for (uint sl = 0u; sl < slices; ++sl) total += slice_sum4[sl * lanes + t / 4u][t % 4u];
  barrier();
  return total;
}

shared bool split_is_last;
shared float split_weight[64], split_l[64];  // kAttentionMaxKeySplits

// KEY_SPLIT: the keys [lo, hi) of this workgroup's split among `used` splits of the row's
// visible keys (every split of the row computes the same `used`; at least one, so that a row
// that sees no key still gets its zeros).
void split_keys(uint split, inout uint lo, inout uint hi, out uint used) {
  const uint n = hi - lo, chunk = max(max(p.split_min_keys, 1u), (n + p.key_splits - 1u) / p.key_splits);
  used = max(1u, (n + chunk - 1u) / chunk);
  lo = min(hi, lo + split * chunk);
  hi = min(hi, lo + chunk);
}

// KEY_SPLIT, after a split stored its part of row `row` (slot: the row's first split): counts it
// in; the last of the row's `used` splits rescales every split's sums to the largest max and
// adds them (each output element's splits in a fixed order: the same result whichever finished
// last), stores the output and the log-sum-exp, and resets the count. CUDA's threadFenceReduction
// pattern, as split_finish. The splits' maxima and sums are read an invocation a split, their
// outputs by WG / Dv groups of invocations side by side: a handful of loads in flight each.
void finish_split(uint t, uint row, uint slot, uint counter, uint used) {
  memoryBarrierBuffer();
  barrier();
  if (t == 0u) split_is_last = atomicAdd(row_count[counter], 1u) == used - 1u;
  barrier();
  if (!split_is_last) return;
  memoryBarrierBuffer();
  float m_s = -F_INF, l_s = 0.0f;
  if (t < used) {
    m_s = part[slot + t * (DV + 2u)];
    l_s = part[slot + t * (DV + 2u) + 1u];
    split_weight[t] = m_s;
  }
  barrier();
  float m = -F_INF;
  for (uint s = 0u; s < used; ++s) m = max_nan(m, split_weight[s]);
  barrier();
  const float w = m_s == -F_INF ? 0.0f : exp_diff(m_s, m);  // an empty split adds nothing
  if (t < used) {
    split_weight[t] = w;
    split_l[t] = w * l_s;
  }
  barrier();
  float l = 0.0f;
  for (uint s = 0u; s < used; ++s) l += split_l[s];
  const uint groups = WG / DV, group = t / DV, e = t % DV;
  float total = 0.0f;
  if (group < groups)
    for (uint s = group; s < used; s += groups) total += split_weight[s] * part[slot + s * (DV + 2u) + 2u + e];
  total = merge_slices(t, DV, total);
  if (t < DV) o[row * DV + t] = floatBitsToUint(l > 0.0f ? total / l : 0.0f);
  if (t == 0u) {
    o[p.lse_offset + row] = floatBitsToUint(l > 0.0f ? m + log_p(l) : -F_INF);
    row_count[counter] = 0u;
  }
}

void main() {
  uint t = gl_LocalInvocationID.x;
  uint bh = gl_WorkGroupID.y, h = bh % p.hq, b = bh / p.hq;
  uint kv = b * p.hkv + h / (p.hq / p.hkv);
  const uint q_first = first_row(bh, p.hq, p.sq), q_step = row_step(p.hq);
  const uint kv_first = first_row(kv, p.hkv, p.sk), kv_step = row_step(p.hkv);
  const int base = query_base();
  const bool vec_v = DV % 4u == 0u;
  const uint lanes = vec_v ? DV / 4u : DV;  // invocations a key (dv <= 256 = WG)
  const uint slices = WG / lanes, d_out = t % lanes, slice = t / lanes;
  const bool vec_k = D % 4u == 0u;
  const uint splits = KEY_SPLIT != 0u ? p.key_splits : 1u, split = gl_WorkGroupID.x % splits;
  for (uint i = gl_WorkGroupID.x / splits; i < p.sq; i += gl_NumWorkGroups.x / splits) {
    uint row = q_first + i * q_step;
    uint lo, hi, used = 1u;
    visible_keys(i, base, lo, hi);
    if (KEY_SPLIT != 0u) {
      split_keys(split, lo, hi, used);
      if (split >= used) continue;  // uniform: the whole workgroup skips the row
    }
    for (uint x = t; x < D; x += WG) q_row[x] = uintBitsToFloat(q[row * D + x]);
    barrier();
    float m = -F_INF, l = 0.0f, acc = 0.0f;
    vec4 acc4 = vec4(0.0f);
    for (uint j0 = lo; j0 < hi; j0 += WG) {
      uint j = j0 + t;
      float s = -F_INF;
      if (j < hi) {
        float dot_qk = 0.0f;
        if (vec_k) {
          uint at = (kv_first + j * kv_step) * D / 4u;
          for (uint x = 0u; x < D; x += 4u)
            dot_qk += dot(vec4(q_row[x], q_row[x + 1u], q_row[x + 2u], q_row[x + 3u]), k4[at + x / 4u]);
        } else {
          for (uint x = 0u; x < D; ++x) dot_qk += q_row[x] * uintBitsToFloat(k[(kv_first + j * kv_step) * D + x]);
        }
        s = dot_qk * p.scale;
      }
      // The first V rows of this slice's keys, loaded now: they do not depend on the scores, so
      // their latency overlaps the reductions below (a decoding step's row is a chain of
      // latencies, not of bandwidth).
      const uint n = min(WG, hi - j0), at4 = (kv_first + j0 * kv_step) * DV / 4u + d_out, step4 = kv_step * DV / 4u;
      vec4 v_early[V_EARLY];
      for (uint u = 0u; u < V_EARLY; ++u) {
        const uint jj = slice + u * slices;
        v_early[u] = vec_v && slice < slices && jj < n ? v4[at4 + jj * step4] : vec4(0.0f);
      }
      float m_new = max_nan(m, wg_max(s));  // finite unless a score is NaN: key j0 is visible
      float e = j < hi ? exp_diff(s, m_new) : 0.0f;
      prob[t] = e;
      float tile_sum = wg_sum(e);  // its barriers also publish prob[]
      float alpha = exp_diff(m, m_new);  // 0 on the first tile (m = -inf)
      l = l * alpha + tile_sum;
      if (slice < slices && vec_v) {
        vec4 a = acc4 * alpha, b2 = vec4(0.0f), c2 = vec4(0.0f), e2 = vec4(0.0f);  // four loads in flight
        uint jj = slice;
        const uint at = at4, step = step4;
        for (uint u = 0u; u < V_EARLY; ++u, jj += slices)
          if (jj < n) a += prob[jj] * v_early[u];
        for (; jj + 3u * slices < n; jj += 4u * slices) {
          a += prob[jj] * v4[at + jj * step];
          b2 += prob[jj + slices] * v4[at + (jj + slices) * step];
          c2 += prob[jj + 2u * slices] * v4[at + (jj + 2u * slices) * step];
          e2 += prob[jj + 3u * slices] * v4[at + (jj + 3u * slices) * step];
        }
        for (; jj < n; jj += slices) a += prob[jj] * v4[at + jj * step];
        acc4 = a + (b2 + c2 + e2);
      } else if (slice < slices) {
        float a = acc * alpha, b2 = 0.0f, c2 = 0.0f, e2 = 0.0f;  // four chains: four loads in flight
        uint jj = slice, at = (kv_first + j0 * kv_step) * DV + d_out, step = kv_step * DV;
        for (; jj + 3u * slices < n; jj += 4u * slices) {
          a += prob[jj] * uintBitsToFloat(v[at + jj * step]);
          b2 += prob[jj + slices] * uintBitsToFloat(v[at + (jj + slices) * step]);
          c2 += prob[jj + 2u * slices] * uintBitsToFloat(v[at + (jj + 2u * slices) * step]);
          e2 += prob[jj + 3u * slices] * uintBitsToFloat(v[at + (jj + 3u * slices) * step]);
        }
        for (; jj < n; jj += slices) a += prob[jj] * uintBitsToFloat(v[at + jj * step]);
        acc = a + (b2 + c2 + e2);
      }
      m = m_new;
      barrier();  // prob[] is rewritten by the next tile
    }
    float total = vec_v ? merge_slices4(t, lanes, slices, acc4) : merge_slices(t, DV, acc);
    if (KEY_SPLIT != 0u && used > 1u) {
      const uint counter = i * gl_NumWorkGroups.y + bh, slot = counter * splits * (DV + 2u);
      const uint mine = slot + split * (DV + 2u);
      if (t < DV) part[mine + 2u + t] = total;
      if (t == 0u) {
        part[mine] = m;  // -inf for the one split of a row that sees no key
        part[mine + 1u] = l;
      }
      finish_split(t, row, slot, counter, used);
    } else {
      if (t < DV) o[row * DV + t] = floatBitsToUint(hi > lo ? total / l : 0.0f);
      if (t == 0u) o[p.lse_offset + row] = floatBitsToUint(hi > lo ? m + log_p(l) : -F_INF);
    }
    barrier();  // q_row is rewritten by the next row
  }
}
