#include "train/optimizer_calls.hpp"

#include <algorithm>
#include <string>

#include "lower/emit/emitter.hpp"
#include "meganeura/error.hpp"
#include "train/update_packs.hpp"
#include "util/env.hpp"

namespace meganeura::train {

using namespace kernels;

namespace {

int add_tensor(lower::Lowered& low, uint64_t bytes, lower::Role role) {
  lower::TensorDesc t;
  t.bytes = std::max<uint64_t>(bytes, 4);
  t.role = role;
  low.tensors.push_back(t);
  return static_cast<int>(low.tensors.size()) - 1;
}

lower::KernelCall& add_call(lower::Lowered& low, Kernel k, std::string label) {
  lower::KernelCall c;
  c.kernel = k;
  c.label = std::move(label);
  low.calls.push_back(std::move(c));
  return low.calls.back();
}

struct OptimizerShape {
  uint32_t algo;
  OptimizerParams p;
  std::vector<std::string> states;
};

OptimizerShape optimizer_shape(const Optimizer& o) {
  OptimizerShape s{};
  if (const auto* sgd = std::get_if<SGD>(&o)) {
    s.algo = OPT_SGD;
    s.p.weight_decay = sgd->weight_decay;
    s.p.momentum = sgd->momentum;
    if (sgd->momentum != 0.0f) s.states = {"momentum"};
  } else {  // Adam and AdamW share their fields
    std::visit(
        [&](const auto& a) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(a)>, SGD>) {
            s.algo = std::is_same_v<std::decay_t<decltype(a)>, AdamW> ? OPT_ADAMW : OPT_ADAM;
            s.p.weight_decay = a.weight_decay;
            s.p.beta1 = a.beta1;
            s.p.beta2 = a.beta2;
            s.p.eps = a.eps;
          }
        },
        o);
    s.states = {"m", "v"};
  }
  return s;
}

// What one update dispatch covers: a pack of parameters (update_packs.hpp) or one alone.
struct Target {
  int param, grad;  // tensors (a pack's, or the parameter's and its gradient's storage)
  uint64_t bytes;
  float lr_scale;
  std::vector<size_t> members;    // indices into the ParamGrad list
  std::vector<uint64_t> offset;   // each member's byte offset in the target's tensors
  bool packed() const { return members.size() > 1 || offset[0] != 0; }
};

// A tensor of member k's bytes at its place in `root` (the root itself when alone).
int member_view(lower::Lowered& low, const Target& t, size_t k, int root, uint64_t bytes) {
  if (!t.packed()) return root;
  lower::TensorDesc d;
  d.bytes = bytes;
  d.role = low.tensors[static_cast<size_t>(root)].role;
  d.alias_of = root;
  d.alias_offset = t.offset[k];
  low.tensors.push_back(d);
  return static_cast<int>(low.tensors.size()) - 1;
}

}  // namespace

uint64_t update_pack_bytes(uint64_t largest_buffer) {
  const uint64_t mib =
      util::env_number("MEGANEURA_UPDATE_PACK_MIB", uint64_t{1} << 20, 4, "a number of MiB (0: as large as a buffer)");
  return mib == 0 ? largest_buffer : std::min(mib << 20, largest_buffer);
}

void append_optimizer_calls(const Graph& g, lower::Lowered& low, const std::vector<ParamGrad>& params,
                            Session::Impl::Training& tr, uint64_t max_pack_bytes) {
  const TrainConfig& cfg = tr.config;
  const int accumulate = std::max(cfg.accumulation_steps, 1);
  tr.hyper = add_tensor(low, sizeof(Hyper), lower::Role::Input);
  const lower::LowerOptions no_matmuls;  // the optimizer emits elementwise calls only
  lower::Emitter e(g, low, no_matmuls);
  const std::vector<uint32_t> f32s = {DT_F32, DT_F32, DT_F32};

  std::vector<float> lr_scale;
  std::vector<int> grad_of;  // each gradient's own storage (read_grad reads it; alive to the end)
  for (const ParamGrad& pg : params) {
    auto mult = cfg.lr_multipliers.find(g.node(pg.param).name);
    lr_scale.push_back(mult == cfg.lr_multipliers.end() ? 1.0f : mult->second);
    grad_of.push_back(low.root(pg.grad));
    low.tensors[static_cast<size_t>(grad_of.back())].output = true;
  }
  const UpdatePlan plan = pack_updates(g, low, params, lr_scale, max_pack_bytes);
  std::vector<Target> targets;
  for (const UpdatePack& pack : plan.packs)
    targets.push_back({pack.params, pack.grads, pack.bytes, pack.lr_scale, pack.members, pack.offset});
  for (size_t i : plan.alone)
    targets.push_back({params[i].param, grad_of[i], low.tensors[static_cast<size_t>(params[i].param)].bytes, lr_scale[i], {i}, {0}});
  auto bytes_of = [&](size_t i) { return low.tensors[static_cast<size_t>(params[i].param)].bytes; };
  auto label_of = [&](const Target& t) {
    return t.packed() ? std::to_string(t.members.size()) + " parameters (" + std::to_string(t.bytes) + " bytes)"
                      : g.node(params[t.members[0]].param).name;
  };

  // The gradient each update reads: this step's, or the sum over the accumulation window.
  std::vector<int> source(targets.size());
  std::vector<int> member_source(params.size());
  for (size_t k = 0; k < targets.size(); ++k) {
    Target& t = targets[k];
    source[k] = t.grad;
    if (accumulate > 1) {
      source[k] = add_tensor(low, t.bytes, lower::Role::State);
      const Shape s{static_cast<int64_t>(t.bytes / 4)};
      lower::Strides st = lower::contiguous_strides(s);
      e.elementwise(params[t.members[0]].grad, EW_ADD, s, {{source[k], 0, st}, {t.grad, 0, st}}, {source[k], 0, st}, f32s, 0,
                    "accumulate " + label_of(t));
    }
    for (size_t m = 0; m < t.members.size(); ++m)
      member_source[t.members[m]] =
          accumulate > 1 ? member_view(low, t, m, source[k], bytes_of(t.members[m])) : grad_of[t.members[m]];
  }

  if (cfg.clip_grad_norm > 0) {  // each tensor's sum of squares into one vector, then the scale
    int sums = add_tensor(low, params.size() * 4, lower::Role::Scratch);
    for (size_t i = 0; i < params.size(); ++i) {
      ReduceParams rp{};
      rp.n_out = 1;
      rp.n_red = lower::u32(numel(g.node(params[i].param).shape), "parameter size");
      rp.red_rank = 1;
      rp.red_shape[0] = rp.n_red;
      rp.red_stride[0] = 1;
      rp.scale = 1.0f;
      rp.out_offset = static_cast<uint32_t>(i);
      lower::KernelCall& c = add_call(low, Kernel::Reduce, "sum of squares of d " + g.node(params[i].param).name);
      c.spec = {RED_SUM, MAP_SQUARE};
      c.tensors = {{member_source[i], false}, {member_source[i], false}, {sums, true}};
      lower::Emitter::set_params(c, rp);
    }
    // The sums hold N gradients when accumulating; the update uses their mean, so clip the mean:
    // |sum| / N <= max  <=>  |sum| <= N * max.
    ClipParams cp{static_cast<uint32_t>(params.size()), cfg.clip_grad_norm * static_cast<float>(accumulate), {}};
    lower::KernelCall& c = add_call(low, Kernel::ClipScale, "clip gradients to global norm " + std::to_string(cfg.clip_grad_norm));
    c.tensors = {{sums, false}, {tr.hyper, true}};
    lower::Emitter::set_params(c, cp);
  }

  OptimizerShape shape = optimizer_shape(cfg.optimizer);
  bool nesterov = std::holds_alternative<SGD>(cfg.optimizer) && std::get<SGD>(cfg.optimizer).nesterov;
  tr.params.resize(params.size());
  for (size_t k = 0; k < targets.size(); ++k) {
    const Target& t = targets[k];
    std::vector<int> states;
    for (size_t s = 0; s < shape.states.size(); ++s) states.push_back(add_tensor(low, t.bytes, lower::Role::State));
    for (size_t m = 0; m < t.members.size(); ++m) {
      const size_t i = t.members[m];
      Session::Impl::Training::Param tp{g.node(params[i].param).name, grad_of[i], {}};
      for (size_t s = 0; s < states.size(); ++s)
        tp.state.emplace_back(shape.states[s], member_view(low, t, m, states[s], bytes_of(i)));
      if (accumulate > 1) tp.state.emplace_back("grad_sum", member_source[i]);  // checkpoints keep a partial window
      tr.params[i] = std::move(tp);
    }
    OptimizerParams op = shape.p;
    op.n = lower::u32(t.bytes / 4, "parameter size");
    op.lr_scale = t.lr_scale;
    op.grad_scale = 1.0f / static_cast<float>(accumulate);
    lower::KernelCall& c = add_call(low, Kernel::Optimizer, "update " + label_of(t));
    c.spec = {shape.algo, op.momentum != 0.0f ? 1u : 0u, nesterov ? 1u : 0u, accumulate > 1 ? 1u : 0u};
    int s1 = states.empty() ? t.param : states[0];
    int s2 = states.size() < 2 ? s1 : states[1];
    c.tensors = {{t.param, true}, {source[k], accumulate > 1}, {s1, true}, {s2, true}, {tr.hyper, false}};
    c.groups = {lower::groups_for(op.n), 1, 1};
    lower::Emitter::set_params(c, op);
  }
}

}  // namespace meganeura::train
