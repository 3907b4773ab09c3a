#version 450
// Elementwise: unary/binary/compare/where/convert/copy/fill over a strided, broadcast index space.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elementwise_ops.glsl"

layout(constant_id = 1) const uint OP = 0u;
layout(constant_id = 2) const uint DT_IN = 0u;   // input 0 (compares: both inputs; WHERE: cond)
layout(constant_id = 3) const uint DT_IN1 = 0u;  // carried for the ABI; no op reads it today
layout(constant_id = 4) const uint DT_OUT = 0u;  // CONVERT's target

const uint ARITY = OP == EW_WHERE ? 3u : (OP == EW_FILL ? 0u : (OP >= EW_ADD && OP != EW_ERF ? 2u : 1u));  // FILL reads nothing
const bool IS_COMPARE = OP >= EW_EQ && OP <= EW_GE;

struct ElementwiseParams {
  uint n, rank, out_offset, in_offset[3];
  float scalar;
  uint pad;
  uint shape[8];
  uint out_stride[8];
  uint in_stride[24];
};
PARAMS_BLOCK { ElementwiseParams p; };

// Inputs are always bindings 2..4 (unused ones are bound to input 0) and the output binding 5,
// so one descriptor layout serves every arity and inputs stay readonly for the sync checker.
layout(std430, set = 0, binding = 2) readonly buffer T0 { uint t0[]; };
layout(std430, set = 0, binding = 3) readonly buffer T1 { uint t1[]; };
layout(std430, set = 0, binding = 4) readonly buffer T2 { uint t2[]; };
layout(std430, set = 0, binding = 5) writeonly buffer T3 { uint t3[]; };

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += gl_NumWorkGroups.x * WG) {
    // One unravel serves the output and every input.
    uint o = p.out_offset, i0 = p.in_offset[0], i1 = p.in_offset[1], i2 = p.in_offset[2];
    uint rem = i;
    for (int d = int(p.rank) - 1; d >= 0; --d) {
      uint n_d = p.shape[d];
      uint c = d > 0 ? rem % n_d : rem;
      rem /= n_d;
      o += c * p.out_stride[d];
      i0 += c * p.in_stride[d];
      if (ARITY > 1u) i1 += c * p.in_stride[8 + d];
      if (ARITY > 2u) i2 += c * p.in_stride[16 + d];
    }
    uint a = ARITY > 0u ? t0[i0] : 0u;
    uint r;
    if (OP == EW_FILL) r = floatBitsToUint(p.scalar);
    else if (OP == EW_COPY) r = a;
    else if (OP == EW_CONVERT) r = ew_convert(a, DT_IN, DT_OUT);
    else if (OP == EW_WHERE) r = ew_truthy(a, DT_IN) ? t1[i1] : t2[i2];
    else if (IS_COMPARE) r = ew_compare(OP, a, t1[i1], DT_IN);
    else if (ARITY == 2u) r = floatBitsToUint(ew_binary(OP, uintBitsToFloat(a), uintBitsToFloat(t1[i1])));
    else r = floatBitsToUint(ew_unary(OP, uintBitsToFloat(a), p.scalar));

    t3[o] = r;
  }
}
