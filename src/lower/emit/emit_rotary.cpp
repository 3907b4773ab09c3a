// Rotary embedding: one dispatch per rotary node, or per pair of them (a layer's q and k) that
// share cos and sin, with the KV cache appends cache_appends_in_rotary gave it (RotaryAppend).
// See kernel_abi.hpp (Rotary, RotaryAppend).
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

namespace {

// A RotaryAppend call: the rotary's parts and bindings (2..7) as Rotary's, then the group's
// appends (rotary_append.comp).
void emit_rotary_appends(Emitter& e, const DispatchGroup& g, int id, const RotaryParams& rotary,
                         std::vector<Access> tensors, int64_t rotated, const std::string& what) {
  RotaryAppendParams p{};
  p.parts = rotary.parts;
  p.part[0] = rotary.part[0];
  p.part[1] = rotary.part[1];
  std::string label = what;
  int rows = -1, position = -1, caches[2] = {-1, -1};
  for (const Fused& f : g.extras) {
    if (f.as != FusedAs::Append) continue;
    const Node& w = e.node(f.node);
    const IndexParams ip = cache_write_params(e, f.node);
    if (p.appends >= 2 || (position >= 0 && w.inputs[2] != position))
      throw Error("internal: a rotary's cache appends must be at most two, at one position");
    p.append[p.appends] = {f.slot, ip.outer, ip.len, ip.inner, ip.n_idx, ip.node, {}};
    if (f.slot == kAppendFromRows) {
      rows = w.inputs[1];
      p.copied = u32(numel(e.node(rows).shape), "cache rows");
    }
    position = w.inputs[2];
    caches[p.appends++] = f.node;
    label += (label.empty() ? "appends %" : p.appends == 1 ? ", appends %" : ", %") + std::to_string(f.node);
  }
  KernelCall& c = e.call(Kernel::RotaryAppend, id, label);
  // Unused bindings take scratch words: never a tensor this call reads or writes otherwise.
  tensors.insert(tensors.end(), {{rows >= 0 ? rows : e.scratch(4), false},
                                 {position, false},
                                 {caches[0], true},
                                 {caches[1] >= 0 ? caches[1] : e.scratch(4), true}});
  c.tensors = std::move(tensors);
  c.groups = {groups_for(rotated + p.copied), 1, 1};
  Emitter::set_params(c, p);
}

}  // namespace

void emit_rotary(Emitter& e, int id, int partner, const DispatchGroup* group) {
  const Node& n = e.node(id);
  const bool transposed = n.attrs.count != 0;
  std::string what = transposed ? "transposed" : "";
  if (partner >= 0) what += (what.empty() ? "with %" : ", with %") + std::to_string(partner);
  RotaryParams p{};
  p.parts = partner >= 0 ? 2 : 1;
  p.part[0] = rotary_part(e, id);
  if (partner >= 0) p.part[1] = rotary_part(e, partner);
  const int x1 = partner >= 0 ? e.node(partner).inputs[0] : n.inputs[0];
  // Alone, binding 7 takes a scratch word: never a tensor this call reads (the sync checker).
  const int y1 = partner >= 0 ? partner : e.scratch(4);
  std::vector<Access> tensors = {{n.inputs[0], false}, {x1, false}, {n.inputs[1], false},
                                 {n.inputs[2], false}, {id, true},  {y1, true}};
  const int64_t rotated = int64_t{p.part[0].n} + (partner >= 0 ? int64_t{p.part[1].n} : 0);
  if (group && group->extra(FusedAs::Append) >= 0)
    return emit_rotary_appends(e, *group, id, p, std::move(tensors), rotated, what);
  KernelCall& c = e.call(Kernel::Rotary, id, what);
  c.tensors = std::move(tensors);
  c.spec = {transposed ? 1u : 0u};
  c.groups = {groups_for(rotated), 1, 1};
  Emitter::set_params(c, p);
}

}  // namespace meganeura::lower
