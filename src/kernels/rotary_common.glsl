// Shared by the rotary kernels (rotary.comp, rotary_append.comp, matmul_split_sum_rotary.comp):
// one part of a rotary call (x's shape collapsed with its last axis D kept; cos/sin strides over
// it, kernel_abi.hpp RotaryPart) and where its element e finds cos and sin.
struct RotaryPart {
  uint n, rank, cos_offset, sin_offset;
  uint shape[8], cos_stride[8], sin_stride[8];
};

// cos at c_at, sin at s_at, and e's index along the last axis (`last`).
void rotary_at(RotaryPart part, uint e, out uint c_at, out uint s_at, out uint last) {
  c_at = part.cos_offset;
  s_at = part.sin_offset;
  last = 0u;
  uint rem = e;
  for (int d = int(part.rank) - 1; d >= 0; --d) {
    uint n_d = part.shape[d];
    uint c = d > 0 ? rem % n_d : rem;
    if (d == int(part.rank) - 1) last = c;
    rem /= n_d;
    c_at += c * part.cos_stride[d];
    s_at += c * part.sin_stride[d];
  }
}

// Element e of a part: where its partner (the other half of the head dim) is, where its cos and
// sin are (TRANSPOSED: sin at the partner's place), and the sign the partner takes, so that
// y = x * cos_t[c_at] + sign * x[partner_at] * sin_t[s_at] (rotary_parts.glsl,
// matmul_split_sum_rotary.comp).
void rotary_element(RotaryPart part, uint e, bool transposed, out uint partner_at, out uint c_at, out uint s_at,
                    out float sign) {
  uint last;
  rotary_at(part, e, c_at, s_at, last);
  const uint h = part.shape[part.rank - 1u] / 2u;
  const bool lo = last < h;
  partner_at = lo ? e + h : e - h;
  sign = lo != transposed ? -1.0f : 1.0f;
  if (transposed) {
    const uint stride = part.sin_stride[part.rank - 1u];
    s_at = lo ? s_at + h * stride : s_at - h * stride;
  }
}
