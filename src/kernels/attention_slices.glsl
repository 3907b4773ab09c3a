// Shared by the per-row attention kernels (attention.comp, attention_backward.comp): their tile
// loops split a row's sums over WG / dim slices (invocation t: element t % dim of slice t / dim),
// so that a head dim of 64 has four times the invocations walking the tile; the slices meet here
// at the end of the row. Include after common.glsl.
shared float slice_sum[WG];

// The row's total of element t (for invocations t < dim; 0 elsewhere). Every invocation calls it.
float merge_slices(uint t, uint dim, float acc) {
  slice_sum[t] = acc;
  barrier();
  float total = 0.0f;
  if (t < dim)
    for (uint sl = 0u; sl < WG / dim; ++sl) total += slice_sum[sl * dim + t];
  barrier();
  return total;
}
