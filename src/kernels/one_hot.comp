#version 450
// OneHot: out[j*len + c] = (idx[j] == c) ? 1 : 0 (f32); an out-of-range index reports to the status
// block and leaves its row all zero.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint IDX_DTYPE = 1u;

struct IndexParams { uint outer, len, inner, n_idx, node, pad[3]; };
PARAMS_BLOCK { IndexParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Idx { uint idx[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { uint out_data[]; };

void main() {
  uint total = p.n_idx * p.len;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * WG) {
    uint c = e % p.len, j = e / p.len;
    uint v = checked_index(idx[j], IDX_DTYPE, p.len);
    if (v == BAD_INDEX && c == 0u) report(STATUS_INDEX_OUT_OF_RANGE, p.node, int(idx[j]), p.len);
    out_data[e] = floatBitsToUint(v == c ? 1.0f : 0.0f);
  }
}
