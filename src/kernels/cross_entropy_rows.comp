#version 450
// Cross-entropy, per row: scratch[r] = logsumexp(row) - row[label], scratch[rows + r] = 1 (valid);
// ignored or out-of-range labels give zeros (out-of-range also reports to the status block).
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

struct CrossEntropyParams { uint rows, classes; int ignore_index; uint node; };
PARAMS_BLOCK { CrossEntropyParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Logits { uint logits[]; };
layout(std430, set = 0, binding = 3) readonly buffer Labels { uint labels[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Scratch { uint scratch[]; };

void main() {
  uint t = gl_LocalInvocationID.x;
  for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
    int label = int(labels[r]);
    bool ignored = label == p.ignore_index;
    bool valid = !ignored && label >= 0 && uint(label) < p.classes;  // uniform over the workgroup
    if (!valid) {
      if (t == 0u) {
        if (!ignored) report(STATUS_INDEX_OUT_OF_RANGE, p.node, label, p.classes);
        scratch[r] = 0u;
        scratch[p.rows + r] = 0u;
      }
      continue;
    }
    uint base = r * p.classes;
    float m, ones, rest;
    ROW_MAX_LSE(m, ones, rest, logits, base, 1u, p.classes)
    if (t == 0u) {
      // (max - x[label]) + log(sum): both terms >= 0, no cancellation.
      float loss = (m - uintBitsToFloat(logits[base + uint(label)])) + log1p_p((ones - 1.0f) + rest);
      scratch[r] = floatBitsToUint(loss);
      scratch[p.rows + r] = floatBitsToUint(1.0f);
    }
  }
}
