#version 450
// Cross-entropy, final: out[0] = sum(loss) / sum(valid), by one workgroup (0/0 = NaN, as PyTorch
// gives when every label is ignored).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

struct CrossEntropyParams { uint rows, classes; int ignore_index; uint node; };
PARAMS_BLOCK { CrossEntropyParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Scratch { uint scratch[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { uint out_data[]; };

void main() {
  if (gl_WorkGroupID.x != 0u) return;  // uniform per workgroup, so barriers stay valid
  uint t = gl_LocalInvocationID.x;
  float s = 0.0f, c = 0.0f, n = 0.0f, cn = 0.0f;
  for (uint r = t; r < p.rows; r += WG) {
    kahan_add(s, c, uintBitsToFloat(scratch[r]));
    kahan_add(n, cn, uintBitsToFloat(scratch[p.rows + r]));
  }
  s = wg_sum(s);
  n = wg_sum(n);
  if (t == 0u) out_data[0] = floatBitsToUint(n == 0.0f ? F_NAN : s / n);
}
