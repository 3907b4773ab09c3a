// Reductions, and the losses that are a map then a reduction.
#include <algorithm>

#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

constexpr uint32_t kReduceAloneMax = 64;
// On a GPU, a reduction of 9..64 elements folds one invocation an output only where there are
// enough outputs to fill the device that way: attention's backward sums 64 values for each of
// 1152 (token, head) rows of SmolLM2-135M, and one invocation a row (5 workgroups, each
// invocation reading its own strided row) cost 0.4 ms of the training step. On a CPU
// implementation any reduction does, once its outputs fill two workgroups (a conv's weight
// gradient summed over a batch of 128: 299 -> 9 ms on lavapipe).
constexpr uint32_t kReduceAloneMinOutputs = 65536, kReduceAloneAlwaysMax = 8, kCpuAloneMinOutputs = 512;

// Whether each output of a reduction is folded by one invocation alone, in order.
static bool folds_alone(const LowerOptions& options, uint32_t n_red, uint32_t n_out) {
  if (options.cpu_device) return n_red <= kReduceAloneMax || n_out >= kCpuAloneMinOutputs;
  return n_red <= kReduceAloneAlwaysMax || (n_red <= kReduceAloneMax && n_out >= kReduceAloneMinOutputs);
}

// A reduction of `x` (and `b`, for two-input maps) over `axes` of `shape`.
static void reduce_call(Emitter& e, int id, int x, int b, const Shape& shape, const std::vector<int64_t>& axes,
                        uint32_t op, uint32_t map, float scale) {
  Strides contig = contiguous_strides(shape);
  Shape kept, red;
  Strides kept_st, red_st;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool r = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    (r ? red : kept).push_back(shape[d]);
    (r ? red_st : kept_st).push_back(contig[d]);
  }
  std::vector<Strides> ks = {kept_st}, rs = {red_st};
  collapse(kept, ks);
  collapse(red, rs);
  ReduceParams p{};
  p.n_out = u32(numel(kept), "reduction outputs");
  p.n_red = u32(numel(red), "reduction length");
  p.kept_rank = static_cast<uint32_t>(kept.size());
  p.red_rank = static_cast<uint32_t>(red.size());
  p.scale = scale;
  for (size_t d = 0; d < kept.size(); ++d) {
    p.kept_shape[d] = u32(kept[d], "dimension");
    p.kept_stride[d] = u32(ks[0][d], "stride");
  }
  for (size_t d = 0; d < red.size(); ++d) {
    p.red_shape[d] = u32(red[d], "dimension");
    p.red_stride[d] = u32(rs[0][d], "stride");
  }
  // Short reductions, one invocation an output: a workgroup an output would spend its barriers
  // on a handful of values (a weight's gradient summed over a batch of 2 was a million
  // workgroups of two values each: 60 s a step on lavapipe).
  const bool alone = folds_alone(e.options(), p.n_red, p.n_out);
  KernelCall& c = e.call(Kernel::Reduce, id, alone ? "one invocation an output" : "");
  c.spec = {op, map, alone ? 1u : 0u};
  c.tensors = {{x, false}, {b, false}, {id, true}};
  c.groups = {std::min<uint32_t>(alone ? (p.n_out + kWorkgroupSize - 1) / kWorkgroupSize : p.n_out, kMaxGroups), 1, 1};
  Emitter::set_params(c, p);
}

void emit_reduce(Emitter& e, int id, int map) {
  const Node& n = e.node(id);
  int x = n.inputs[0];
  if (map >= 0) {  // sum/mean of a * b, or sum/mean/max of |a|: that node is the reduction's map
    const Node& m = e.node(map);
    const Shape& s = m.shape;
    int64_t n_red = 1;
    for (int64_t a : n.attrs.axes) n_red *= s[static_cast<size_t>(a)];
    const float scale = n.op == Op::Mean ? 1.0f / static_cast<float>(n_red) : 1.0f;
    const int b = m.op == Op::Mul ? m.inputs[1] : m.inputs[0];
    return reduce_call(e, id, m.inputs[0], b, s, n.attrs.axes, n.op == Op::Max ? RED_MAX : RED_SUM,
                       m.op == Op::Mul ? MAP_MUL : MAP_ABS, scale);
  }
  const Shape& s = e.node(x).shape;
  const std::vector<int64_t>& axes = n.attrs.axes;
  int64_t n_red = 1;
  for (int64_t a : axes) n_red *= s[static_cast<size_t>(a)];
  std::vector<int64_t> all(s.size());
  for (size_t d = 0; d < s.size(); ++d) all[d] = static_cast<int64_t>(d);
  float inv_all = 1.0f / static_cast<float>(numel(s));
  switch (n.op) {
    case Op::Sum: return reduce_call(e, id, x, x, s, axes, RED_SUM, MAP_NONE, 1.0f);
    case Op::Mean: return reduce_call(e, id, x, x, s, axes, RED_SUM, MAP_NONE, 1.0f / static_cast<float>(n_red));
    case Op::Max: return reduce_call(e, id, x, x, s, axes, RED_MAX, MAP_NONE, 1.0f);
    case Op::ArgMax: return reduce_call(e, id, x, x, s, axes, RED_ARGMAX, MAP_NONE, 1.0f);
    case Op::MseLoss: return reduce_call(e, id, x, n.inputs[1], s, all, RED_SUM, MAP_SQDIFF, inv_all);
    case Op::BinaryCrossEntropy: return reduce_call(e, id, x, n.inputs[1], s, all, RED_SUM, MAP_BCE, inv_all);
    case Op::BinaryCrossEntropyWithLogits:
      return reduce_call(e, id, x, n.inputs[1], s, all, RED_SUM, MAP_BCE_LOGITS, inv_all);
    default: throw Error("internal: " + std::string(op_name(n.op)) + " is not a reduction");
  }
}

}  // namespace meganeura::lower
