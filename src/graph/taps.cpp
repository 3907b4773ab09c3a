#include "graph/taps.hpp"

#include <functional>
#include <numeric>
#include <string>

#include "graph/op_args.hpp"
#include "meganeura/error.hpp"

namespace meganeura::graph {

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}

std::vector<int32_t> tap_map(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& dilation, const std::vector<int64_t>& sizes,
                             const std::vector<int64_t>& out, const std::vector<int64_t>& before) {
  const int64_t taps = product(kernel), positions = product(out), padding_index = product(sizes);
  std::vector<int32_t> map(static_cast<size_t>(taps * positions));
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t o = 0; o < positions; ++o) {
      int64_t flat = 0, t_rest = t, o_rest = o, step = 1;
      for (size_t d = kernel.size(); d-- > 0;) {
        const int64_t td = t_rest % kernel[d], od = o_rest % out[d];
        t_rest /= kernel[d];
        o_rest /= out[d];
        const int64_t at = od * stride[d] + td * dilation[d] - (before.empty() ? 0 : before[d]);
        if (at < 0 || at >= sizes[d]) {
          flat = padding_index;
          break;
        }
        flat += at * step;
        step *= sizes[d];
      }
      map[static_cast<size_t>(t * positions + o)] = static_cast<int32_t>(flat);
    }
  return map;
}

std::vector<int32_t> across_batch(const std::vector<int32_t>& map, int64_t taps, int64_t positions, int64_t batch,
                                  int64_t sample) {
  if (batch * sample >= INT32_MAX)
    throw ShapeError("a window map over " + std::to_string(batch) + " samples of " + std::to_string(sample) +
                     " elements: past 2^31 indices (split the batch)");
  std::vector<int32_t> out(static_cast<size_t>(taps * batch * positions));
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t o = 0; o < positions; ++o) {
        const int32_t at = map[static_cast<size_t>(t * positions + o)];
        out[static_cast<size_t>((t * batch + b) * positions + o)] =
            at == sample ? static_cast<int32_t>(batch * sample) : at + static_cast<int32_t>(b * sample);
      }
  return out;
}

Tensor window_gather(Tensor x, Tensor map, int64_t axis, float fill) {
  Attrs a;
  a.axis = axis;
  a.window_padding = true;
  a.scalar = fill;
  return build(Op::Gather, {{"x", x}, {"indices", map}}, std::move(a));
}

Tensor window_scatter_add(Tensor base, Tensor map, Tensor updates, int64_t axis) {
  Attrs a;
  a.axis = axis;
  a.window_padding = true;
  return build(Op::ScatterAdd, {{"base", base}, {"indices", map}, {"updates", updates}}, std::move(a));
}

}  // namespace meganeura::graph
