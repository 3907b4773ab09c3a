#version 450
// Split-K's second pass for a group of products (a layer's q, k and v projections) whose first
// two go through the rotary embedding next: it adds the partial sums of every element, stores C
// as matmul_split_sum.comp does, and for an element of a rotated product also adds up its
// partner's (the other half of the head dim) and stores x cos + rotate_half(x) sin at binding
// 9 (part 0) or 10 (part 1) -- the rotary needs no dispatch of its own. Tail of the params:
// the product each part rotates and the parts as rotary.comp takes them (kernel_abi.hpp).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#include "rotary_common.glsl"
struct SumRotary { uint product[2], pad0, pad1; RotaryPart part[2]; };
#define MATMUL_PARAMS_TAIL SumRotary r;
#include "matmul_common.glsl"
#define ROTARY_PART(k) r.part[k]
#include "rotary_index.glsl"

layout(std430, set = 0, binding = 7) readonly buffer Cos { float cos_t[]; };
layout(std430, set = 0, binding = 8) readonly buffer Sin { float sin_t[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Y0 { float y0[]; };
layout(std430, set = 0, binding = 10) writeonly buffer Y1 { float y1[]; };

void main() {
  for (uint i = gl_GlobalInvocationID.x; i < p.split_stride; i += gl_NumWorkGroups.x * WG) {
    const float x = split_sum(i);
    c_data[i] = floatBitsToUint(x);
    for (uint k = 0u; k < 2u; ++k) {
      const uint first = p.c_offset[r.product[k]];
      if (i < first || i - first >= r.part[k].n) continue;
      const uint e = i - first;
      uint partner_at, c_at, s_at;
      float sign;
      rotary_element(k, e, false, partner_at, c_at, s_at, sign);
      const float y = x * cos_t[c_at] + sign * split_sum(first + partner_at) * sin_t[s_at];
      if (k == 0u) y0[e] = y;
      else y1[e] = y;
    }
  }
}
