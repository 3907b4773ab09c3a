#version 450
// Cross-entropy backward, first step: count[0] = number of labels != ignore_index (f32; exact up
// to 2^24 rows), the mean's denominator. One workgroup.
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

struct CrossEntropyParams { uint rows, classes; int ignore_index; uint node; };
PARAMS_BLOCK { CrossEntropyParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Labels { uint labels[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Count { uint count[]; };

void main() {
  if (gl_WorkGroupID.x != 0u) return;  // uniform per workgroup, so barriers stay valid
  float n;
  ROW_SUM(n, p.rows, int(labels[l_]) != p.ignore_index ? 1.0f : 0.0f)
  if (gl_LocalInvocationID.x == 0u) count[0] = floatBitsToUint(n);
}
