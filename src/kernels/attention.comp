#version 450
// Attention forward, one workgroup per query row: scores for a tile of WG keys (one key per
// invocation), then an online-softmax update of the row's running max m, sum l and output
// (invocation t owns output element t; Dv <= 256 = WG). Never stores the score matrix; writes
// lse = m + log(l) after the output for the backward pass. See kernel_abi.hpp (Attention).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

struct AttentionParams { uint hq, hkv, sq, sk, d, dv, causal, lse_offset; float scale; uint pad0, pad1, pad2; };
layout(std430, set = 0, binding = 0) readonly buffer Params { AttentionParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Q { uint q[]; };
layout(std430, set = 0, binding = 3) readonly buffer K { uint k[]; };
layout(std430, set = 0, binding = 4) readonly buffer V { uint v[]; };
layout(std430, set = 0, binding = 5) writeonly buffer O { uint o[]; };

shared float q_row[256];
shared float prob[WG];

// Keys 0 .. visible-1 are seen by query i (causal: j <= i + sk - sq, aligned to the end).
uint visible_keys(uint i) {
  if (p.causal == 0u) return p.sk;
  int last = int(i) + int(p.sk) - int(p.sq);  // the last key seen; < 0: none
  return uint(clamp(last + 1, 0, int(p.sk)));
}

void main() {
  uint t = gl_LocalInvocationID.x;
  uint bh = gl_WorkGroupID.y, h = bh % p.hq, b = bh / p.hq;
  uint kv = b * p.hkv + h / (p.hq / p.hkv);
  uint k_base = kv * p.sk * p.d, v_base = kv * p.sk * p.dv;
  for (uint i = gl_WorkGroupID.x; i < p.sq; i += gl_NumWorkGroups.x) {
    uint row = bh * p.sq + i;
    for (uint x = t; x < p.d; x += WG) q_row[x] = uintBitsToFloat(q[row * p.d + x]);
    barrier();
    uint visible = visible_keys(i);
    float m = -F_INF, l = 0.0f, acc = 0.0f;
    for (uint j0 = 0u; j0 < visible; j0 += WG) {
      uint j = j0 + t;
      float s = -F_INF;
      if (j < visible) {
        float dot_qk = 0.0f;
        for (uint x = 0u; x < p.d; ++x) dot_qk += q_row[x] * uintBitsToFloat(k[k_base + j * p.d + x]);
        s = dot_qk * p.scale;
      }
      float m_new = max_nan(m, wg_max(s));  // finite unless a score is NaN: key j0 is visible
      float e = j < visible ? exp_diff(s, m_new) : 0.0f;
      prob[t] = e;
      float tile_sum = wg_sum(e);  // its barriers also publish prob[]
      float alpha = exp_diff(m, m_new);  // 0 on the first tile (m = -inf)
      l = l * alpha + tile_sum;
      if (t < p.dv) {
        float a = acc * alpha;
        uint n = min(WG, visible - j0);
        for (uint jj = 0u; jj < n; ++jj) a += prob[jj] * uintBitsToFloat(v[v_base + (j0 + jj) * p.dv + t]);
        acc = a;
      }
      m = m_new;
      barrier();  // prob[] is rewritten by the next tile
    }
    if (t < p.dv) o[row * p.dv + t] = floatBitsToUint(visible > 0u ? acc / l : 0.0f);
    if (t == 0u) o[p.lse_offset + row] = floatBitsToUint(visible > 0u ? m + log_p(l) : -F_INF);
    barrier();  // q_row is rewritten by the next row
  }
}
