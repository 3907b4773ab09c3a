// Lowering: walks the graph in order, gives every live node a tensor (views alias their
// source) and emits the kernel calls of its archetype.
#include <algorithm>
#include <cstdio>

#include "kernels/log_topic.hpp"
#include "lower/emit.hpp"
#include "lower/fuse_elementwise.hpp"
#include "lower/horizontal.hpp"
#include "lower/pairs.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

uint32_t dtype_code(DType t) {
  switch (t) {
    case DType::f32: return kernels::DT_F32;
    case DType::i32: return kernels::DT_I32;
    case DType::u32: return kernels::DT_U32;
    case DType::f16:
    case DType::bf16: break;
  }
  throw DTypeError("internal: 16-bit dtype reached a 32-bit kernel");
}

static std::string describe(const Graph& g, int id) {
  const Node& n = g.node(id);
  std::string s = std::string(op_name(n.op)) + " %" + std::to_string(id);
  for (size_t i = 0; i < n.inputs.size(); ++i) s.append(i ? "," : " ").append(shape_str(g.node(n.inputs[i]).shape));
  s += " -> " + shape_str(n.shape);
  if (!n.name.empty() && n.op != Op::Input && n.op != Op::Parameter) s += " (" + n.name + ")";
  return s;
}

KernelCall& Emitter::call(kernels::Kernel k, int node, std::string what) {
  KernelCall c;
  c.kernel = k;
  c.node = node;
  c.label = describe(g_, node);
  if (!what.empty()) c.label.append(" [").append(what).append("]");
  out_.calls.push_back(std::move(c));
  return out_.calls.back();
}

KernelCall& Emitter::generated_call(kernels::GeneratedKernel k, int node, std::string label) {
  auto same = std::find_if(out_.generated.begin(), out_.generated.end(),
                           [&](const kernels::GeneratedKernel& x) { return x.source == k.source; });
  KernelCall c;
  c.kernel = kernels::Kernel::Elementwise;  // not used: `generated` names the kernel
  c.generated = static_cast<int>(same - out_.generated.begin());
  c.node = node;
  c.label = std::move(label);
  if (same == out_.generated.end()) out_.generated.push_back(std::move(k));
  out_.calls.push_back(std::move(c));
  return out_.calls.back();
}

static int add_unnamed(Lowered& out, uint64_t bytes, Role role) {
  TensorDesc t;
  t.bytes = std::max<uint64_t>(bytes, 4);
  t.role = role;
  out.tensors.push_back(t);
  return static_cast<int>(out.tensors.size()) - 1;
}

int Emitter::scratch(uint64_t bytes) { return add_unnamed(out_, bytes, Role::Scratch); }
int Emitter::state(uint64_t bytes) { return add_unnamed(out_, bytes, Role::State); }

// Marks every node some output depends on.
std::vector<bool> reaching(const Graph& g, const std::vector<int>& roots) {
  std::vector<bool> live(static_cast<size_t>(g.size()), false);
  for (int id : roots) live[static_cast<size_t>(id)] = true;
  for (int id = g.size() - 1; id >= 0; --id)
    if (live[static_cast<size_t>(id)])
      for (int in : g.node(id).inputs) live[static_cast<size_t>(in)] = true;
  return live;
}

static std::vector<bool> live_nodes(const Graph& g, const std::vector<int>& keep) {
  std::vector<int> roots = keep;
  for (auto& [name, id] : g.outputs()) roots.push_back(id);
  return reaching(g, roots);
}

// The elementwise groups that run as one generated kernel (none when fusion is off).
static Fusion fusion(const Graph& g, const std::vector<int>& keep, const std::vector<bool>& live, bool on) {
  if (!on || !fusion_allowed_by_env()) return {std::vector<FusionGroup>{}, std::vector<int>(static_cast<size_t>(g.size()), -1)};
  std::vector<bool> pinned(static_cast<size_t>(g.size()), false);  // their values must be stored
  for (auto& [name, id] : g.outputs()) pinned[static_cast<size_t>(id)] = true;
  for (int id : keep) pinned[static_cast<size_t>(id)] = true;
  Fusion f = find_fusion_groups(g, live, pinned);
  if (kernels::log_topic("fuse")) {
    size_t fused = 0;
    for (const FusionGroup& grp : f.groups) fused += grp.members.size();
    std::fprintf(stderr, "meganeura: fuse: %zu elementwise nodes in %zu generated kernels (%zu dispatches fewer)\n", fused,
                 f.groups.size(), fused - f.groups.size());
    for (const FusionGroup& grp : f.groups) {
      std::string ops;
      for (int m : grp.members) ops.append(ops.empty() ? "" : ",").append(op_name(g.node(m).op));
      std::fprintf(stderr, "meganeura: fuse:   %s = fused[%s] reading %zu tensors\n", g.label(grp.root).c_str(), ops.c_str(),
                   grp.inputs.size());
    }
  }
  return f;
}

// A reshape, or a permute that moves only dimensions of size 1 (a [1, 1, H, D] query turned
// [1, H, 1, D] when decoding): every element stays where it was, so the node is a view.
bool is_view(const Graph& g, const Node& n) {
  if (n.op == Op::Reshape) return true;
  if (n.op != Op::Permute) return false;
  const Shape& in = g.node(n.inputs[0]).shape;
  int64_t last = -1;
  for (int64_t axis : n.attrs.axes) {
    if (in[static_cast<size_t>(axis)] == 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

// A scatter_add whose base nothing else reads (a computed tensor, not kept) adds its updates into
// the base's bytes: no copy of the base (a tied embedding's gradient, 113 MB in SmolLM2).
static void run_scatters_in_place(const Graph& g, const std::vector<bool>& live, const NodeUses& uses, const Fusion& fused,
                                  Lowered& out) {
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.op != Op::ScatterAdd || !live[static_cast<size_t>(id)] || fused.group_of[static_cast<size_t>(id)] >= 0) continue;
    const auto base = static_cast<size_t>(n.inputs[0]);
    const TensorDesc& b = out.tensors[base];
    if (b.role == Role::Intermediate && b.alias_of < 0 && !b.output && !uses.kept[base] && uses.readers[base].size() == 1 &&
        fused.group_of[base] < 0 && !is_view(g, g.node(n.inputs[0])) && g.node(n.inputs[0]).dtype == n.dtype)
      out.tensors[static_cast<size_t>(id)].alias_of = n.inputs[0];
  }
}

Lowered lower(const Graph& g, const std::vector<int>& keep, const LowerOptions& options) {
  if (g.outputs().empty()) throw Error("the graph has no outputs: mark results with Graph::output(name, tensor)");
  Lowered out;
  out.tensors.resize(static_cast<size_t>(g.size()));
  std::vector<bool> live = live_nodes(g, keep);
  for (auto& [name, id] : g.outputs()) out.tensors[static_cast<size_t>(id)].output = true;
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    TensorDesc& t = out.tensors[static_cast<size_t>(id)];
    t.node = id;
    t.bytes = std::max<uint64_t>((static_cast<uint64_t>(numel(n.shape)) * dtype_size(n.dtype) + 3) / 4 * 4, 4);
    if (n.op == Op::Attention) t.bytes += static_cast<uint64_t>(attention_lse_rows(n.shape)) * 4;
    if (n.op == Op::Input) t.role = Role::Input;
    else if (n.op == Op::Parameter) t.role = Role::Parameter;
    else if (n.op == Op::Constant) t.role = Role::Constant;
    else if (n.op == Op::State) t.role = Role::State;
    if (is_view(g, n) && live[static_cast<size_t>(id)]) t.alias_of = n.inputs[0];  // same bytes, new shape
    if (n.op == Op::CacheWrite) t.alias_of = n.inputs[0];  // written in place: the state's own bytes
  }
  std::vector<int> group_of;
  std::vector<MatMulGroup> groups;
  if (options.fuse && horizontal_fusion_enabled()) groups = group_matmuls(g, live, out, group_of);
  const Fusion fused = fusion(g, keep, live, options.fuse);
  const NodeUses uses = node_uses(g, live, keep);
  run_scatters_in_place(g, live, uses, fused, out);
  Fusions f = find_fusions(g, live, uses, out, groups, group_of, fused.group_of, options);
  find_product_sums(g, live, uses, out, group_of, fused.group_of, options, f);
  const std::vector<int>& partner = f.partner;
  Emitter e(g, out, options);
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (!live[static_cast<size_t>(id)] || op_kind(n.op) == OpKind::Leaf || is_view(g, n)) continue;
    if (numel(n.shape) == 0) continue;  // nothing to compute
    if (int sum = f.sum_of[static_cast<size_t>(id)]; sum >= 0) {
      emit_product_sum(e, id, f.sums[static_cast<size_t>(sum)]);
      continue;
    }
    if (f.in_sum[static_cast<size_t>(id)]) continue;  // in a sum of products
    if (!group_of.empty() && group_of[static_cast<size_t>(id)] >= 0) {
      const MatMulGroup& grp = groups[static_cast<size_t>(group_of[static_cast<size_t>(id)])];
      if (grp.members[0] != id) continue;  // the group runs at its first member
      std::vector<uint32_t> b_offsets, c_offsets;
      for (int m : grp.members) {
        b_offsets.push_back(static_cast<uint32_t>(out.tensors[static_cast<size_t>(g.node(m).inputs[1])].alias_offset / 4));
        c_offsets.push_back(static_cast<uint32_t>(out.tensors[static_cast<size_t>(m)].alias_offset / 4));
      }
      const auto grp_index = static_cast<size_t>(group_of[static_cast<size_t>(id)]);
      MatMulFusions mf;
      mf.glu = f.glu_of_group[grp_index];
      mf.rotary = f.rotary_of_group[grp_index];
      mf.norm_a = f.norm_a_of[static_cast<size_t>(id)];
      emit_matmul_products(e, grp.members, grp.weights, grp.outputs, b_offsets, c_offsets, mf);
      continue;
    }
    if (int grp = fused.group_of[static_cast<size_t>(id)]; grp >= 0) {  // computed by its group's kernel
      const FusionGroup& group = fused.groups[static_cast<size_t>(grp)];
      if (group.root == id) emit_fused(e, group);
      continue;
    }
    if (int nb = f.norm_of_add[static_cast<size_t>(id)]; nb >= 0) {
      emit_norm_backward(e, nb, id);
      continue;
    }
    switch (n.op) {  // autodiff's fused backward ops, whatever their kind
      case Op::RmsNormBackward: case Op::LayerNormBackward:
        if (partner[static_cast<size_t>(id)] == kEmittedWithPartner) continue;  // with the add reading it
        emit_backward(e, id);
        continue;
      case Op::SoftmaxBackward: case Op::LogSoftmaxBackward:
      case Op::RmsNormWeightGrad: case Op::LayerNormWeightGrad: case Op::CrossEntropyBackward: case Op::SliceBackward:
        emit_backward(e, id);
        continue;
      case Op::Attention: case Op::AttentionBackward:
        if (partner[static_cast<size_t>(id)] != kEmittedWithPartner) emit_attention(e, id, partner[static_cast<size_t>(id)]);
        continue;
      case Op::Rotary:
        if (partner[static_cast<size_t>(id)] != kEmittedWithPartner) emit_rotary(e, id, partner[static_cast<size_t>(id)]);
        continue;
      case Op::RmsNorm: case Op::LayerNorm: case Op::SwiGlu: case Op::Mul: case Op::Abs:
        if (partner[static_cast<size_t>(id)] == kEmittedWithPartner) continue;  // with its matmul or reduction
        break;
      default: break;
    }
    switch (op_kind(n.op)) {
      case OpKind::Unary:
      case OpKind::Binary:
      case OpKind::Compare:
      case OpKind::Select:
      case OpKind::Convert: emit_elementwise(e, id); break;
      case OpKind::Movement: emit_movement(e, id); break;
      case OpKind::Contract: {
        MatMulFusions mf;
        mf.norm = partner[static_cast<size_t>(id)];
        mf.norm_a = f.norm_a_of[static_cast<size_t>(id)];
        emit_matmul(e, id, mf);
        break;
      }
      case OpKind::Reduce: emit_reduce(e, id, f.map_of_reduce[static_cast<size_t>(id)]); break;
      case OpKind::Row: emit_row(e, id); break;
      case OpKind::Index: emit_index(e, id); break;
      case OpKind::Loss:
        if (n.op == Op::CrossEntropy) emit_index(e, id);
        else emit_reduce(e, id);
        break;
      case OpKind::Leaf: break;
    }
  }
  // A tensor that is an output keeps the bytes of everything it views alive to the end.
  for (auto& [name, id] : g.outputs()) out.tensors[static_cast<size_t>(out.root(id))].output = true;
  for (int id : keep) out.tensors[static_cast<size_t>(out.root(id))].output = true;
  return out;
}

}  // namespace meganeura::lower
