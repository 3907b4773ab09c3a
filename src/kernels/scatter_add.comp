#version 450
// ScatterAdd: out[(o*len + idx[j])*inner + i] += updates[(o*n_idx + j)*inner + i], f32, atomic.
// The float add is a compare-and-swap loop on the bits: portable, no float-atomics extension.
// WINDOW_PADDING (spec 2, a convolution's window map): an index equal to len is a padding tap
// and adds nothing, unreported.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint IDX_DTYPE = 1u;
layout(constant_id = 2) const uint WINDOW_PADDING = 0u;

struct IndexParams { uint outer, len, inner, n_idx, node, pad[3]; };
PARAMS_BLOCK { IndexParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Updates { uint updates[]; };
layout(std430, set = 0, binding = 3) readonly buffer Idx { uint idx[]; };
layout(std430, set = 0, binding = 4) buffer Out { uint out_data[]; };

void main() {
  uint total = p.outer * p.n_idx * p.inner;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * WG) {
    uint i = e % p.inner, oj = e / p.inner;
    uint j = oj % p.n_idx, o = oj / p.n_idx;
    if (WINDOW_PADDING != 0u && idx[j] == p.len) continue;
    uint v = checked_index(idx[j], IDX_DTYPE, p.len);
    if (v == BAD_INDEX) {
      if (o == 0u && i == 0u) report(STATUS_INDEX_OUT_OF_RANGE, p.node, int(idx[j]), p.len);
      continue;
    }
    uint dst = (o * p.len + v) * p.inner + i;
    float u = uintBitsToFloat(updates[e]);
    uint seen = out_data[dst];
    while (true) {
      uint expected = seen;
      seen = atomicCompSwap(out_data[dst], expected, floatBitsToUint(uintBitsToFloat(expected) + u));
      if (seen == expected) break;
    }
  }
}
