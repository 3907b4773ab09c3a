#version 450
// CacheWrite: state[(o*len + pos + s)*inner + i] = rows[(o*n_idx + s)*inner + i] for the n_idx
// rows s, pos = position[0] read on the device (a KV cache append whose place changes every
// step of one recorded command buffer). pos < 0 or pos + n_idx > len reports to the status
// block (value pos, limit len - n_idx) and writes nothing. A 32-bit copy (any 32-bit dtype).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

struct IndexParams { uint outer, len, inner, n_idx, node, pad[3]; };
PARAMS_BLOCK { IndexParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Rows { uint rows[]; };
layout(std430, set = 0, binding = 3) readonly buffer Position { int position[]; };
layout(std430, set = 0, binding = 4) writeonly buffer State { uint state[]; };

void main() {
  int pos = position[0];
  if (pos < 0 || pos > int(p.len) - int(p.n_idx)) {
    if (gl_GlobalInvocationID.x == 0u) report(STATUS_INDEX_OUT_OF_RANGE, p.node, pos, p.len - p.n_idx);
    return;
  }
  uint total = p.outer * p.n_idx * p.inner;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * WG) {
    uint i = e % p.inner, os = e / p.inner;
    uint s = os % p.n_idx, o = os / p.n_idx;
    state[(o * p.len + uint(pos) + s) * p.inner + i] = rows[e];
  }
}
