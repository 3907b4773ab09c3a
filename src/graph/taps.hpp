// The index maps of sliding windows (convolutions, max pooling): which element of an input each
// kernel tap of each output position reads, for gathers and scatters through constant indices.
#pragma once

#include <cstdint>
#include <vector>

#include "meganeura/graph.hpp"

namespace meganeura::graph {

// The flat index, in a row-major layout of `sizes`, that tap t (row-major over `kernel`) of output
// position o (row-major over `out`) reads: o * stride + t * dilation - before along each
// dimension (`before`: the padding ahead of each, none where empty). A tap that lands in the
// padding, outside `sizes`, reads the padding index product(sizes) (window_gather's fill). Rows
// are the taps, columns the positions ([taps, positions]).
std::vector<int32_t> tap_map(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& dilation, const std::vector<int64_t>& sizes,
                             const std::vector<int64_t>& out, const std::vector<int64_t>& before = {});

// A [taps, positions] map over one sample of `sample` elements, repeated for `batch` samples
// laid end to end: [taps, batch * positions], sample b's columns offset by b * sample, and the
// padding index `sample` becomes batch * sample. Throws ShapeError where an index would not fit
// 32 bits.
std::vector<int32_t> across_batch(const std::vector<int32_t>& map, int64_t taps, int64_t positions, int64_t batch,
                                  int64_t sample);

// gather and scatter_add through a window map whose padding taps (the index equal to the axis's
// length, as tap_map writes them) read `fill` and add nothing (Attrs::window_padding): a
// convolution (fill 0) or a max pooling (-infinity) reads its input unpadded, with no pad (a
// copy of the input) before it.
Tensor window_gather(Tensor x, Tensor map, int64_t axis, float fill = 0.0f);
Tensor window_scatter_add(Tensor base, Tensor map, Tensor updates, int64_t axis);

int64_t product(const std::vector<int64_t>& v);

}  // namespace meganeura::graph
