// The Emitter's calls and tensors, and the strided elementwise call most emitters build on.
#include "lower/emit/emitter.hpp"

#include <algorithm>

#include "lower/node_facts.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;

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

bool Emitter::written_in_place(int tensor) const {
  if (written_roots_.empty()) {
    written_roots_.assign(out_.tensors.size(), false);
    for (int id = 0; id < g_.size(); ++id)
      if (writes_in_place(g_.node(id).op)) written_roots_[static_cast<size_t>(out_.root(g_.node(id).inputs[0]))] = true;
  }
  const auto root = static_cast<size_t>(out_.root(tensor));
  return root < written_roots_.size() && written_roots_[root];
}

int Emitter::scratch(uint64_t bytes) { return add_unnamed(out_, bytes, Role::Scratch); }
int Emitter::state(uint64_t bytes) { return add_unnamed(out_, bytes, Role::State); }

void Emitter::elementwise(int node, uint32_t op, const Shape& shape, std::vector<Operand> inputs, Operand out,
                          std::vector<uint32_t> dtypes, float scalar, std::string what) {
  Shape s = shape;
  std::vector<Strides> st;
  for (auto& in : inputs) st.push_back(in.strides);
  st.push_back(out.strides);
  collapse(s, st);
  if (s.size() > kMaxKernelRank)
    throw ShapeError("internal: elementwise rank " + std::to_string(s.size()) + " after collapsing");
  ElementwiseParams p{};
  p.n = u32(numel(s), "elementwise element count");
  p.rank = static_cast<uint32_t>(s.size());
  p.out_offset = u32(out.offset, "output offset");
  p.scalar = scalar;
  for (size_t d = 0; d < s.size(); ++d) {
    p.shape[d] = u32(s[d], "dimension");
    p.out_stride[d] = u32(st.back()[d], "stride");
    for (size_t k = 0; k < inputs.size(); ++k) p.in_stride[k * kMaxKernelRank + d] = u32(st[k][d], "stride");
  }
  KernelCall& c = call(Kernel::Elementwise, node, std::move(what));
  for (size_t k = 0; k < inputs.size(); ++k) {
    p.in_offset[k] = u32(inputs[k].offset, "input offset");
    c.tensors.push_back({inputs[k].tensor, false});
  }
  while (c.tensors.size() < kElementwiseInputs) c.tensors.push_back({inputs[0].tensor, false});
  c.tensors.push_back({out.tensor, true});
  dtypes.resize(3, DT_F32);
  c.spec = {op, dtypes[0], dtypes[1], dtypes[2]};
  c.groups = {groups_for(p.n), 1, 1};
  set_params(c, p);
}

}  // namespace meganeura::lower
