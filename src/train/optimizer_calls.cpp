#include "train/optimizer_calls.hpp"

#include "lower/emit.hpp"

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

}  // namespace

void append_optimizer_calls(const Graph& g, lower::Lowered& low, const std::vector<ParamGrad>& params,
                            Session::Impl::Training& tr) {
  const TrainConfig& cfg = tr.config;
  const int accumulate = std::max(cfg.accumulation_steps, 1);
  tr.hyper = add_tensor(low, sizeof(Hyper), lower::Role::Input);
  const lower::LowerOptions no_matmuls;  // the optimizer emits elementwise calls only
  lower::Emitter e(g, low, no_matmuls);
  const std::vector<uint32_t> f32s = {DT_F32, DT_F32, DT_F32};

  // The gradient each update reads: this step's, or the sum over the accumulation window.
  std::vector<int> source;
  for (const ParamGrad& pg : params) {
    int grad = low.root(pg.grad);
    low.tensors[static_cast<size_t>(grad)].output = true;  // alive to the end: read_grad reads it
    if (accumulate == 1) {
      source.push_back(grad);
      continue;
    }
    const Shape& s = g.node(pg.param).shape;
    int acc = add_tensor(low, low.tensors[static_cast<size_t>(pg.param)].bytes, lower::Role::State);
    lower::Strides st = lower::contiguous_strides(s);
    e.elementwise(pg.grad, EW_ADD, s, {{acc, 0, st}, {grad, 0, st}}, {acc, 0, st}, f32s, 0, "accumulate");
    source.push_back(acc);
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
      c.tensors = {{source[i], false}, {source[i], false}, {sums, true}};
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
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = g.node(params[i].param);
    Session::Impl::Training::Param tp{p.name, low.root(params[i].grad), {}};
    for (const std::string& name : shape.states)
      tp.state.emplace_back(name, add_tensor(low, low.tensors[static_cast<size_t>(params[i].param)].bytes, lower::Role::State));
    OptimizerParams op = shape.p;
    op.n = lower::u32(numel(p.shape), "parameter size");
    auto mult = cfg.lr_multipliers.find(p.name);
    op.lr_scale = mult == cfg.lr_multipliers.end() ? 1.0f : mult->second;
    op.grad_scale = 1.0f / static_cast<float>(accumulate);
    lower::KernelCall& c = add_call(low, Kernel::Optimizer, "update " + p.name);
    c.spec = {shape.algo, op.momentum != 0.0f ? 1u : 0u, nesterov ? 1u : 0u, accumulate > 1 ? 1u : 0u};
    int s1 = tp.state.empty() ? params[i].param : tp.state[0].second;
    int s2 = tp.state.size() < 2 ? s1 : tp.state[1].second;
    c.tensors = {{params[i].param, true}, {source[i], accumulate > 1}, {s1, true}, {s2, true}, {tr.hyper, false}};
    c.groups = {lower::groups_for(op.n), 1, 1};
    lower::Emitter::set_params(c, op);
    if (accumulate > 1) tp.state.emplace_back("grad_sum", source[i]);  // checkpoints keep a partial window
    tr.params.push_back(std::move(tp));
  }
}

}  // namespace meganeura::train
