#version 450
// Cross-entropy backward, fused: d logits[r,c] = (softmax(row r)[c] - (c == label)) * dloss / count,
// one workgroup per row, without a one-hot or softmax tensor. Ignored rows get zeros; labels out
// of range report to the status block (as CrossEntropyRows) and get zeros. count: the labels that
// count, read from binding 5 (CrossEntropyCount's), or with COUNT_HERE summed by each workgroup
// (few labels against long rows: no dispatch before this one).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

layout(constant_id = 1) const uint COUNT_HERE = 0u;

struct CrossEntropyParams { uint rows, classes; int ignore_index; uint node; };
PARAMS_BLOCK { CrossEntropyParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Logits { uint logits[]; };
layout(std430, set = 0, binding = 3) readonly buffer Labels { uint labels[]; };
layout(std430, set = 0, binding = 4) readonly buffer DLoss { uint dloss[]; };
layout(std430, set = 0, binding = 5) readonly buffer Count { uint count[]; };
layout(std430, set = 0, binding = 6) writeonly buffer DLogits { uint dlogits[]; };

void main() {
  uint t = gl_LocalInvocationID.x;
  float n;
  if (COUNT_HERE != 0u) {
    ROW_SUM(n, p.rows, int(labels[l_]) != p.ignore_index ? 1.0f : 0.0f)
  } else {
    n = uintBitsToFloat(count[0]);
  }
  float scale = uintBitsToFloat(dloss[0]) / n;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    uint base = r * p.classes;
    int label = int(labels[r]);
    bool ignored = label == p.ignore_index;
    bool valid = !ignored && label >= 0 && uint(label) < p.classes;  // uniform over the workgroup
    if (!valid) {
      if (t == 0u && !ignored) report(STATUS_INDEX_OUT_OF_RANGE, p.node, label, p.classes);
      for (uint j = t; j < p.classes; j += WG) dlogits[base + j] = 0u;
      continue;
    }
    float m, ones, rest;
    ROW_MAX_LSE(m, ones, rest, logits, base, 1u, p.classes)
    float s = ones + rest;
    for (uint j = t; j < p.classes; j += WG) {
      float v = uintBitsToFloat(logits[base + j]);
      float g;
      if (j != uint(label)) g = exp_diff(v, m) / s;
      // p - 1 = -(s - 1)/s at a row maximum (its term is exactly 1): keeps full precision when
      // the label's probability is near 1. Elsewhere p <= 1/2 and p - 1 does not cancel.
      else if (v == m) g = -((ones - 1.0f) + rest) / s;
      else g = exp_diff(v, m) / s - 1.0f;
      dlogits[base + j] = floatBitsToUint(g * scale);
    }
  }
}
