// The training ops (op_list.hpp, graph/train_ops.hpp): the step's scalars, gradient
// accumulation, global-norm clipping and the optimizer updates, each alone or over a pack
// (fuse/update_packs.cpp: packs = {parameters, gradients or sums, state1, state2} for updates,
// {sums, gradients} for accumulation).
#include "graph/train_ops.hpp"
#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

using namespace kernels;
using graph::UpdateAlgo;

static_assert(static_cast<uint32_t>(UpdateAlgo::SGD) == OPT_SGD &&
              static_cast<uint32_t>(UpdateAlgo::Adam) == OPT_ADAM &&
              static_cast<uint32_t>(UpdateAlgo::AdamW) == OPT_ADAMW);

namespace {

float value(const Node& n, size_t i) { return static_cast<float>(n.attrs.values[i]); }

void emit_step_scalars(Emitter& e, int id) {
  const Node& n = e.node(id);
  KernelCall& c = e.call(Kernel::StepScalars, id, "");
  c.tensors = {{n.inputs[0], true}, {n.inputs[1], false}, {id, true}};
  Emitter::set_params(c, StepParams{});
}

// "update 3 parameters (1024 bytes)" for a pack, "update lm_head.weight" for one parameter.
std::string what(const Emitter& e, const char* verb, const DispatchGroup& grp, uint64_t bytes) {
  if (grp.packs.empty()) return std::string(verb) + " " + e.node(e.node(grp.nodes[0]).inputs[0]).name;
  return std::string(verb) + " " + std::to_string(grp.nodes.size()) + " parameters (" + std::to_string(bytes) +
         " bytes)";
}

void emit_accumulate(Emitter& e, const DispatchGroup& grp) {
  const int id = grp.nodes[0];
  const bool packed = !grp.packs.empty();
  const int sum = packed ? grp.packs[0] : id, grad = packed ? grp.packs[1] : e.node(id).inputs[1];
  const uint64_t bytes = e.lowered().tensors[static_cast<size_t>(sum)].bytes;
  const Shape s{static_cast<int64_t>(bytes / 4)};
  const Strides st = contiguous_strides(s);
  e.elementwise(id, EW_ADD, s, {{sum, 0, st}, {grad, 0, st}}, {sum, 0, st}, {DT_F32, DT_F32, DT_F32}, 0,
                what(e, "accumulate", grp, bytes));
}

// Each gradient's sum of squares into one vector, then the clipping factor into the hyper block.
void emit_clip(Emitter& e, int id) {
  const Node& n = e.node(id);
  const size_t count = n.inputs.size() - 1;
  const int sums = e.scratch(count * 4);
  for (size_t i = 0; i < count; ++i) {
    const int grad = n.inputs[i + 1];
    ReduceParams rp{};
    rp.n_out = 1;
    rp.n_red = u32(numel(e.node(grad).shape), "gradient size");
    rp.red_rank = 1;
    rp.red_shape[0] = rp.n_red;
    rp.red_stride[0] = 1;
    rp.scale = 1.0f;
    rp.out_offset = static_cast<uint32_t>(i);
    KernelCall& c = e.call(Kernel::Reduce, id, "sum of squares of %" + std::to_string(grad));
    c.spec = {RED_SUM, MAP_SQUARE};
    c.tensors = {{grad, false}, {grad, false}, {sums, true}};
    Emitter::set_params(c, rp);
  }
  ClipParams cp{static_cast<uint32_t>(count), static_cast<float>(n.attrs.scalar), {}};
  KernelCall& c = e.call(Kernel::ClipScale, id, "max norm " + std::to_string(n.attrs.scalar));
  c.tensors = {{sums, false}, {id, true}};
  Emitter::set_params(c, cp);
}

void emit_update(Emitter& e, const DispatchGroup& grp) {
  const int id = grp.nodes[0];
  const Node& n = e.node(id);
  const bool packed = !grp.packs.empty();
  // Bindings: the parameter, the gradient (or sum), the states (the parameter where it has none).
  std::vector<int> t = packed ? grp.packs : std::vector<int>(n.inputs.begin(), n.inputs.end());
  if (!packed) t.erase(t.begin() + 2);  // the hyper block
  const int param = t[0], source = t[1];
  const int s1 = t.size() > 2 ? t[2] : param, s2 = t.size() > 3 ? t[3] : s1;
  const uint64_t bytes = e.lowered().tensors[static_cast<size_t>(param)].bytes;
  const bool zero_grad = n.attrs.values[graph::kUpdateZeroGrad] != 0;
  OptimizerParams p{};
  p.n = u32(packed ? static_cast<int64_t>(bytes / 4) : numel(n.shape), "parameter size");
  p.lr_scale = value(n, graph::kUpdateLrScale);
  p.grad_scale = value(n, graph::kUpdateGradScale);
  p.weight_decay = value(n, graph::kUpdateWeightDecay);
  p.momentum = value(n, graph::kUpdateMomentum);
  p.beta1 = value(n, graph::kUpdateBeta1);
  p.beta2 = value(n, graph::kUpdateBeta2);
  p.eps = value(n, graph::kUpdateEps);
  KernelCall& c = e.call(Kernel::Optimizer, id, what(e, "update", grp, bytes));
  c.spec = {static_cast<uint32_t>(n.attrs.values[graph::kUpdateAlgo]), p.momentum != 0.0f ? 1u : 0u,
            n.attrs.values[graph::kUpdateNesterov] != 0 ? 1u : 0u, zero_grad ? 1u : 0u};
  c.tensors = {{param, true}, {source, zero_grad}, {s1, true}, {s2, true}, {n.inputs[2], false}};
  c.groups = {groups_for(p.n), 1, 1};
  Emitter::set_params(c, p);
}

}  // namespace

void emit_training(Emitter& e, const DispatchGroup& grp) {
  const int id = grp.nodes[0];
  switch (e.node(id).op) {
    case Op::StepScalars: return emit_step_scalars(e, id);
    case Op::Accumulate: return emit_accumulate(e, grp);
    case Op::ClipGradNorm: return emit_clip(e, id);
    case Op::OptimizerUpdate: return emit_update(e, grp);
    default: throw Error("internal: " + std::string(op_name(e.node(id).op)) + " is not a training op");
  }
}

}  // namespace meganeura::lower
