// Index ops (gather, scatter_add, one_hot) and the fused cross-entropy. Kernels that read
// indices check them and report the first bad one through the status block.
#include <bit>

#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

static int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

IndexParams cache_write_params(const Emitter& e, int id) {
  const Node& n = e.node(id);
  const Shape& rows = e.node(n.inputs[1]).shape;
  IndexParams p{};
  p.node = static_cast<uint32_t>(id);
  p.outer = u32(prod(rows, 0, rows.size() - 2), "cache outer");
  p.len = u32(n.shape[n.shape.size() - 2], "cache slots");
  p.inner = u32(rows.back(), "cache row");
  p.n_idx = u32(rows[rows.size() - 2], "cache rows written");
  return p;
}

void emit_index(Emitter& e, int id) {
  const Node& n = e.node(id);
  IndexParams p{};
  p.node = static_cast<uint32_t>(id);
  switch (n.op) {
    case Op::Gather: {
      const Shape& x = e.node(n.inputs[0]).shape;
      auto ax = static_cast<size_t>(n.attrs.axis);
      p.outer = u32(prod(x, 0, ax), "gather outer");
      p.len = u32(x[ax], "gather length");
      p.inner = u32(prod(x, ax + 1, x.size()), "gather inner");
      p.n_idx = u32(numel(e.node(n.inputs[1]).shape), "index count");
      KernelCall& c = e.call(Kernel::Gather, id, "");
      c.spec = {dtype_code(e.node(n.inputs[1]).dtype), n.attrs.window_padding ? 1u : 0u,
                std::bit_cast<uint32_t>(static_cast<float>(n.attrs.scalar))};
      c.tensors = {{n.inputs[0], false}, {n.inputs[1], false}, {id, true}};
      c.groups = {groups_for(numel(n.shape)), 1, 1};
      Emitter::set_params(c, p);
      return;
    }
    case Op::CacheWrite: {  // the output is the state itself (an alias): only the rows are written
      p = cache_write_params(e, id);
      const Shape& rows = e.node(n.inputs[1]).shape;
      KernelCall& c = e.call(Kernel::CacheWrite, id, "");
      c.tensors = {{n.inputs[1], false}, {n.inputs[2], false}, {id, true}};
      c.groups = {groups_for(numel(rows)), 1, 1};
      Emitter::set_params(c, p);
      return;
    }
    case Op::ScatterAdd: {  // out = base (unless it is the base's bytes: lower.cpp), then out += updates at the indices
      Operand base{n.inputs[0], 0, contiguous_strides(n.shape)}, out{id, 0, contiguous_strides(n.shape)};
      if (e.lowered().tensors[static_cast<size_t>(id)].alias_of != n.inputs[0])
        e.elementwise(id, EW_COPY, n.shape, {base}, out, {DT_U32, DT_U32, DT_U32}, 0, "copy base");
      auto ax = static_cast<size_t>(n.attrs.axis);
      p.outer = u32(prod(n.shape, 0, ax), "scatter outer");
      p.len = u32(n.shape[ax], "scatter length");
      p.inner = u32(prod(n.shape, ax + 1, n.shape.size()), "scatter inner");
      p.n_idx = u32(numel(e.node(n.inputs[1]).shape), "index count");
      if (p.n_idx == 0) return;
      KernelCall& c = e.call(Kernel::ScatterAdd, id, "add updates");
      c.spec = {dtype_code(e.node(n.inputs[1]).dtype), n.attrs.window_padding ? 1u : 0u};
      c.tensors = {{n.inputs[2], false}, {n.inputs[1], false}, {id, true}};
      c.groups = {groups_for(numel(e.node(n.inputs[2]).shape)), 1, 1};
      Emitter::set_params(c, p);
      return;
    }
    case Op::OneHot: {
      p.outer = 1;
      p.inner = 1;
      p.len = u32(n.attrs.count, "one_hot classes");
      p.n_idx = u32(numel(e.node(n.inputs[0]).shape), "index count");
      KernelCall& c = e.call(Kernel::OneHot, id, "");
      c.spec = {dtype_code(e.node(n.inputs[0]).dtype)};
      c.tensors = {{n.inputs[0], false}, {id, true}};
      c.groups = {groups_for(numel(n.shape)), 1, 1};
      Emitter::set_params(c, p);
      return;
    }
    case Op::CrossEntropy: {  // per-row loss into scratch, then one workgroup averages it
      const Shape& logits = e.node(n.inputs[0]).shape;
      CrossEntropyParams cp{};
      cp.classes = u32(logits.back(), "classes");
      cp.rows = u32(numel(logits) / std::max<int64_t>(logits.back(), 1), "rows");
      cp.ignore_index = static_cast<int32_t>(n.attrs.ignore_index);
      cp.node = static_cast<uint32_t>(id);
      int scratch = e.scratch(uint64_t{2} * cp.rows * 4);
      KernelCall& rows = e.call(Kernel::CrossEntropyRows, id, "rows");
      rows.tensors = {{n.inputs[0], false}, {n.inputs[1], false}, {scratch, true}};
      rows.groups = {std::min<uint32_t>(std::max<uint32_t>(cp.rows, 1), kMaxGroups), 1, 1};
      Emitter::set_params(rows, cp);
      KernelCall& fin = e.call(Kernel::CrossEntropyFinish, id, "mean");
      fin.tensors = {{scratch, false}, {id, true}};
      Emitter::set_params(fin, cp);
      return;
    }
    default: throw Error("internal: " + std::string(op_name(n.op)) + " is not an index op");
  }
}

}  // namespace meganeura::lower
