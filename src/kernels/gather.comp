#version 450
// Gather: out[(o*n_idx + j)*inner + i] = x[(o*len + idx[j])*inner + i], a bit copy (any 32-bit
// dtype). Out-of-range indices report to the status block and write 0. WINDOW_PADDING (spec 2,
// a convolution's or pooling's window map): an index equal to len is a padding tap and reads
// FILL (spec 3, its bits: 0 for conv, -infinity for max pooling), unreported.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint IDX_DTYPE = 1u;
layout(constant_id = 2) const uint WINDOW_PADDING = 0u;
layout(constant_id = 3) const uint FILL = 0u;

struct IndexParams { uint outer, len, inner, n_idx, node, pad[3]; };
PARAMS_BLOCK { IndexParams p; };
layout(std430, set = 0, binding = 2) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 3) readonly buffer Idx { uint idx[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out { uint out_data[]; };

void main() {
  uint total = p.outer * p.n_idx * p.inner;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * WG) {
    uint i = e % p.inner, oj = e / p.inner;
    uint j = oj % p.n_idx, o = oj / p.n_idx;
    uint v = checked_index(idx[j], IDX_DTYPE, p.len);
    if (WINDOW_PADDING != 0u && idx[j] == p.len) {
      out_data[e] = FILL;
    } else if (v == BAD_INDEX) {
      if (o == 0u && i == 0u) report(STATUS_INDEX_OUT_OF_RANGE, p.node, int(idx[j]), p.len);
      out_data[e] = 0u;
    } else {
      out_data[e] = x[(o * p.len + v) * p.inner + i];
    }
  }
}
