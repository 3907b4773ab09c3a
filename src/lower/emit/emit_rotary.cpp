// Rotary embedding: one dispatch per rotary node, or per pair of them (a layer's q and k) that
// share cos and sin. See kernel_abi.hpp (Rotary).
#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

// One part of a call: x's shape collapsed (its last axis kept), cos/sin strides over it.
RotaryPart rotary_part(const Emitter& e, int id) {
  const Node& n = e.node(id);
  std::vector<Strides> st = {contiguous_strides(n.shape), broadcast_strides(e.node(n.inputs[1]).shape, n.shape),
                             broadcast_strides(e.node(n.inputs[2]).shape, n.shape)};
  Shape s = n.shape;
  collapse_but_last(s, st);  // the kernel pairs the halves of the last axis
  if (s.size() > kMaxKernelRank)
    throw ShapeError("internal: rotary rank " + std::to_string(s.size()) + " after collapsing");
  RotaryPart p{};
  p.n = u32(numel(n.shape), "rotary element count");
  p.rank = static_cast<uint32_t>(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    p.shape[i] = u32(s[i], "dimension");
    p.cos_stride[i] = u32(st[1][i], "stride");
    p.sin_stride[i] = u32(st[2][i], "stride");
  }
  return p;
}

void emit_rotary(Emitter& e, int id, int partner) {
  const Node& n = e.node(id);
  const bool transposed = n.attrs.count != 0;
  std::string what = transposed ? "transposed" : "";
  if (partner >= 0) what += (what.empty() ? "with %" : ", with %") + std::to_string(partner);
  KernelCall& c = e.call(Kernel::Rotary, id, what);
  RotaryParams p{};
  p.parts = partner >= 0 ? 2 : 1;
  p.part[0] = rotary_part(e, id);
  if (partner >= 0) p.part[1] = rotary_part(e, partner);
  const int x1 = partner >= 0 ? e.node(partner).inputs[0] : n.inputs[0];
  // Alone, binding 7 takes a scratch word: never a tensor this call reads (the sync checker).
  const int y1 = partner >= 0 ? partner : e.scratch(4);
  c.tensors = {{n.inputs[0], false}, {x1, false}, {n.inputs[1], false}, {n.inputs[2], false}, {id, true}, {y1, true}};
  c.spec = {transposed ? 1u : 0u};
  c.groups = {groups_for(int64_t{p.part[0].n} + (partner >= 0 ? int64_t{p.part[1].n} : 0)), 1, 1};
  Emitter::set_params(c, p);
}

}  // namespace meganeura::lower
