// Where element e of rotary part k finds its cos, sin and partner, for the rotary kernels. Included
// after the params block, with ROTARY_PART(k) naming part k in it (p.part[k], r.part[k]): read in
// place from the uniform block, not copied into a local struct, whose arrays indexed at run time
// went through local memory (a 2 MB rotary took 11-13 us on an H200).

// Part k's cos at c_at, sin at s_at for its element e, and e's index along the last axis (`last`).
void rotary_at(uint k, uint e, out uint c_at, out uint s_at, out uint last) {
  c_at = ROTARY_PART(k).cos_offset;
  s_at = ROTARY_PART(k).sin_offset;
  last = 0u;
  uint rem = e;
  const int rank = int(ROTARY_PART(k).rank);
  for (int d = rank - 1; d >= 0; --d) {
    const uint n_d = ROTARY_PART(k).shape[d];
    const uint c = d > 0 ? rem % n_d : rem;
    if (d == rank - 1) last = c;
    rem /= n_d;
    c_at += c * ROTARY_PART(k).cos_stride[d];
    s_at += c * ROTARY_PART(k).sin_stride[d];
  }
}

// Element e of a part: where its partner (the other half of the head dim) is, where its cos and
// sin are (TRANSPOSED: sin at the partner's place), and the sign the partner takes, so that
// y = x * cos_t[c_at] + sign * x[partner_at] * sin_t[s_at] (rotary_parts.glsl,
// matmul_split_sum_rotary.comp).
void rotary_element(uint k, uint e, bool transposed, out uint partner_at, out uint c_at, out uint s_at,
                    out float sign) {
  uint last;
  rotary_at(k, e, c_at, s_at, last);
  const uint h = ROTARY_PART(k).shape[ROTARY_PART(k).rank - 1u] / 2u;
  const bool lo = last < h;
  partner_at = lo ? e + h : e - h;
  sign = lo != transposed ? -1.0f : 1.0f;
  if (transposed) {
    const uint stride = ROTARY_PART(k).sin_stride[ROTARY_PART(k).rank - 1u];
    s_at = lo ? s_at + h * stride : s_at - h * stride;
  }
}
