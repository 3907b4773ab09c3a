// Rotary's bindings 2..7 and one element of its one or two parts, shared by rotary.comp and
// rotary_append.comp (kernel_abi.hpp, Rotary). Included after rotary_index.glsl and a params
// block `p` with `parts` and `part[2]`.
layout(std430, set = 0, binding = 2) readonly buffer X0 { float x0[]; };
layout(std430, set = 0, binding = 3) readonly buffer X1 { float x1[]; };
layout(std430, set = 0, binding = 4) readonly buffer Cos { float cos_t[]; };
layout(std430, set = 0, binding = 5) readonly buffer Sin { float sin_t[]; };
layout(std430, set = 0, binding = 6) writeonly buffer Y0 { float y0[]; };
layout(std430, set = 0, binding = 7) writeonly buffer Y1 { float y1[]; };

// The elements of both parts: invocation i works on element i of part 0, then of part 1.
uint rotary_elements() { return p.part[0].n + (p.parts > 1u ? p.part[1].n : 0u); }

// Element i of the parts (i < rotary_elements()): rotated, stored in its part's y and returned;
// `k` and `e` say which part and which of its elements.
float rotate_element(uint i, bool transposed, out uint k, out uint e) {
  k = i < p.part[0].n ? 0u : 1u;
  e = k == 0u ? i : i - p.part[0].n;
  uint partner_at, c_at, s_at;
  float sign;
  rotary_element(k, e, transposed, partner_at, c_at, s_at, sign);
  const float x = k == 0u ? x0[e] : x1[e], partner = k == 0u ? x0[partner_at] : x1[partner_at];
  const float y = x * cos_t[c_at] + sign * partner * sin_t[s_at];
  if (k == 0u) y0[e] = y;
  else y1[e] = y;
  return y;
}
