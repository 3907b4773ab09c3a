#include "train/update_graph.hpp"

#include <algorithm>

#include "graph/train_ops.hpp"
#include "meganeura/error.hpp"

namespace meganeura::train {

using graph::ScheduleKind;
using graph::UpdateAlgo;

namespace {

float step_count(int64_t n, const char* what) {
  if (n < 0 || static_cast<double>(n) >= graph::kMaxStepCount)
    throw Error(std::string("TrainConfig: ") + what + " = " + std::to_string(n) + " is out of range (0 to 16777215)");
  return static_cast<float>(n);
}

// The optimizer's part of optimizer_update's values, and the states it keeps.
struct OptimizerShape {
  std::vector<double> values = std::vector<double>(graph::kUpdateValues, 0.0);
  std::vector<std::string> states;
};

OptimizerShape optimizer_shape(const Optimizer& o) {
  OptimizerShape s;
  if (const auto* sgd = std::get_if<SGD>(&o)) {
    s.values[graph::kUpdateAlgo] = static_cast<double>(UpdateAlgo::SGD);
    s.values[graph::kUpdateWeightDecay] = sgd->weight_decay;
    s.values[graph::kUpdateMomentum] = sgd->momentum;
    s.values[graph::kUpdateNesterov] = sgd->nesterov ? 1 : 0;
    if (sgd->momentum != 0.0f) s.states = {"momentum"};
    return s;
  }
  std::visit(
      [&](const auto& a) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(a)>, SGD>) {  // Adam and AdamW share their fields
          const bool adamw = std::is_same_v<std::decay_t<decltype(a)>, AdamW>;
          s.values[graph::kUpdateAlgo] = static_cast<double>(adamw ? UpdateAlgo::AdamW : UpdateAlgo::Adam);
          s.values[graph::kUpdateWeightDecay] = a.weight_decay;
          s.values[graph::kUpdateBeta1] = a.beta1;
          s.values[graph::kUpdateBeta2] = a.beta2;
          s.values[graph::kUpdateEps] = a.eps;
        }
      },
      o);
  s.states = {"m", "v"};
  return s;
}

}  // namespace

std::vector<float> step_settings(const TrainConfig& config) {
  std::vector<float> v(graph::kStepValues, 0.0f);
  v[graph::kStepLr] = std::visit([](const auto& o) { return o.lr; }, config.optimizer);
  if (const auto* step = std::get_if<StepLR>(&config.schedule)) {
    v[graph::kStepSchedule] = static_cast<float>(ScheduleKind::StepLR);
    v[graph::kStepA] = step_count(step->step_size, "StepLR::step_size");
    v[graph::kStepC] = step->gamma;
  } else if (const auto* cos = std::get_if<Cosine>(&config.schedule)) {
    v[graph::kStepSchedule] = static_cast<float>(ScheduleKind::Cosine);
    v[graph::kStepA] = step_count(cos->warmup_steps, "Cosine::warmup_steps");
    v[graph::kStepB] = step_count(cos->total_steps, "Cosine::total_steps");
    v[graph::kStepC] = cos->min_ratio;
  }
  std::visit(
      [&](const auto& o) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(o)>, SGD>) {
          v[graph::kStepBeta1] = o.beta1;
          v[graph::kStepBeta2] = o.beta2;
        }
      },
      config.optimizer);
  v[graph::kStepAccumulate] = step_count(std::max(config.accumulation_steps, 1), "accumulation_steps");
  return v;
}

UpdateGraph append_update_graph(Graph& g, const std::vector<int>& params, const std::vector<int>& grads,
                                const TrainConfig& config) {
  UpdateGraph u;
  auto scope = g.scope("optimizer");
  const int accumulate = std::max(config.accumulation_steps, 1);
  Tensor counters = g.state("meganeura.step_counters", {graph::kCounterWords}, u32);
  const std::vector<float> settings = step_settings(config);
  Tensor settings_tensor = g.constant(settings, {graph::kStepValues});
  Tensor hyper = g.add(Op::StepScalars, {counters, settings_tensor});
  u.counters = counters.id();
  u.settings = settings_tensor.id();
  u.roots.push_back(hyper.id());

  // The gradient each update reads: this step's, or the sum over the accumulation window.
  std::vector<Tensor> sources;
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = g.node(params[i]);
    u.params.push_back({p.name, grads[i], {}});
    Tensor source{&g, grads[i]};
    if (accumulate > 1) {
      Tensor sum = g.state("optimizer." + p.name + ".grad_sum", p.shape);
      source = g.add(Op::Accumulate, {sum, source});
      u.params.back().state.emplace_back("grad_sum", sum.id());  // checkpoints keep a partial window
    }
    sources.push_back(source);
  }
  if (config.clip_grad_norm > 0 && !sources.empty()) {
    // The sums hold N gradients when accumulating; the update uses their mean, so clip the mean:
    // |sum| / N <= max  <=>  |sum| <= N * max.
    Attrs clip;
    clip.scalar = static_cast<double>(config.clip_grad_norm) * accumulate;
    std::vector<Tensor> in{hyper};
    in.insert(in.end(), sources.begin(), sources.end());
    hyper = g.add(Op::ClipGradNorm, in, clip);
  }

  const OptimizerShape shape = optimizer_shape(config.optimizer);
  for (size_t i = 0; i < params.size(); ++i) {
    UpdateGraph::Param& param = u.params[i];
    Attrs a;
    a.values = shape.values;
    auto mult = config.lr_multipliers.find(param.name);
    a.values[graph::kUpdateLrScale] = mult == config.lr_multipliers.end() ? 1.0f : mult->second;
    a.values[graph::kUpdateGradScale] = 1.0f / static_cast<float>(accumulate);
    a.values[graph::kUpdateZeroGrad] = accumulate > 1 ? 1 : 0;
    std::vector<Tensor> in{Tensor{&g, params[i]}, sources[i], hyper};
    std::vector<std::pair<std::string, int>> states;
    for (const std::string& s : shape.states) {
      Tensor state = g.state("optimizer." + param.name + "." + s, g.node(params[i]).shape);
      in.push_back(state);
      states.emplace_back(s, state.id());
    }
    param.state.insert(param.state.begin(), states.begin(), states.end());
    u.roots.push_back(g.add(Op::OptimizerUpdate, in, a).id());
  }
  return u;
}

}  // namespace meganeura::train
