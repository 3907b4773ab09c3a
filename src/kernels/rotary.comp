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
layout(std430, set = 0, binding = 2) readonly buffer X0 { float x0[]; };
layout(std430, set = 0, binding = 3) readonly buffer X1 { float x1[]; };
layout(std430, set = 0, binding = 4) readonly buffer Cos { float cos_t[]; };
layout(std430, set = 0, binding = 5) readonly buffer Sin { float sin_t[]; };
layout(std430, set = 0, binding = 6) writeonly buffer Y0 { float y0[]; };
layout(std430, set = 0, binding = 7) writeonly buffer Y1 { float y1[]; };

void main() {
  uint total = p.part[0].n + (p.parts > 1u ? p.part[1].n : 0u);
  for (uint i = gl_GlobalInvocationID.x; i < total; i += gl_NumWorkGroups.x * WG) {
    uint k = i < p.part[0].n ? 0u : 1u, e = k == 0u ? i : i - p.part[0].n, partner_at, c_at, s_at;
    float sign;
    rotary_element(p.part[k], e, TRANSPOSED != 0u, partner_at, c_at, s_at, sign);
    float x = k == 0u ? x0[e] : x1[e], partner = k == 0u ? x0[partner_at] : x1[partner_at];
    float y = x * cos_t[c_at] + sign * partner * sin_t[s_at];
    if (k == 0u) y0[e] = y;
    else y1[e] = y;
  }
}
