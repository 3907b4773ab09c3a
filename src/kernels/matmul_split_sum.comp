#version 450
// Split-K's second pass: C = epilogue(sum over the splits of the partial sums the first pass
// left in scratch, bound at binding 2 in place of A). The scratch holds `splits` copies of C's
// layout, split_stride elements apart (C's whole extent; with several products, their packed
// outputs, gaps included, and no epilogue). One invocation per element, grid-stride.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#include "matmul_common.glsl"

void main() {
  uint MN = p.M * p.N[0];
  for (uint i = gl_GlobalInvocationID.x; i < p.split_stride; i += gl_NumWorkGroups.x * WG) {
    float sum = split_sum(i);
    if (p.groups == 1u) sum = epilogue(sum, i / MN, (i % MN) / p.N[0], i % p.N[0]);
    c_data[i] = floatBitsToUint(sum);
  }
}
