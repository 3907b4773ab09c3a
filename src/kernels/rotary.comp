#version 450
// Rotary position embedding of one or two tensors in one dispatch (a layer's q and k): part k
// holds y = x cos + rotate_half(x) sin, rotate_half(x) = (-x2, x1) over the last axis (halves
// of D); TRANSPOSED, its transpose (the gradient): y = x cos + (x2 s2, -x1 s1). x and y are
// contiguous; cos and sin broadcast over x's shape by their strides. Invocation i works on
// element i of part 0, then of part 1. See kernel_abi.hpp (Rotary).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint TRANSPOSED = 0u;

#include "rotary_common.glsl"

struct RotaryParams { uint parts, pad0, pad1, pad2; RotaryPart part[2]; };
PARAMS_BLOCK { RotaryParams p; };
#define ROTARY_PART(k) p.part[k]
#include "rotary_index.glsl"
#include "rotary_parts.glsl"

void main() {
  const uint total = rotary_elements();
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint k, e;
    rotate_element(i, TRANSPOSED != 0u, k, e);
  }
}
