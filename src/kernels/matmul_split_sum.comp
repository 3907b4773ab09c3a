#version 450
// Split-K's second pass (one product, groups = 1): C = epilogue(sum over the splits of the
// partial sums the first pass left in scratch, bound at binding 2 in place of A). The scratch
// holds `splits` copies of C's layout, split_stride elements apart. One invocation per element
// of C, grid-stride.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#include "matmul_common.glsl"

void main() {
  uint MN = p.M * p.N[0], total = p.batch * MN;
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    float sum = 0.0f;
    for (uint s = 0u; s < p.splits; ++s) sum += uintBitsToFloat(a_data[s * p.split_stride + i]);
    uint bt = i / MN, m = (i % MN) / p.N[0], n = i % p.N[0];
    c_data[i] = floatBitsToUint(epilogue(sum, bt, m, n));
  }
}
