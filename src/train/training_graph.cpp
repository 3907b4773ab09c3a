#include "train/training_graph.hpp"

#include <algorithm>

#include "meganeura/autodiff.hpp"
#include "meganeura/error.hpp"
#include "runtime/optimize_options.hpp"
#include "trace/trace.hpp"

namespace meganeura::train {

TrainingGraph build_training_graph(const Graph& user_graph, Tensor loss, const TrainConfig& config,
                                   const optimize::Limits& limits) {
  if (&loss.graph() != &user_graph) throw Error("build_session: the loss is a tensor of another graph");
  if (!loss.shape().empty() || loss.dtype() != f32)
    throw ShapeError("build_session: the loss must be a rank-0 f32 tensor, got " + shape_str(loss.shape()) + " " +
                     std::string(dtype_name(loss.dtype())) + " (reduce it with mean or sum)");
  if (config.accumulation_steps < 1) throw Error("build_session: accumulation_steps must be at least 1");
  // Fuse the forward pass first, so autodiff differentiates the fused ops (silu, rms_norm,
  // softmax, ... have fused backward rules) instead of keeping their primitives alive.
  TrainingGraph out;
  const bool optimizing = runtime::optimizing(config.optimize);
  out.optimized = optimizing;
  int loss_id = loss.id();
  std::unique_ptr<Graph> g;
  if (optimizing) {
    trace::Scope phase("optimize forward");
    std::vector<int> kept;
    g = optimize::optimize(user_graph, &out.forward_report, {loss_id}, &kept, limits);
    runtime::log_optimize(out.forward_report.to_string());
    loss_id = kept[0];
  } else {
    g = user_graph.clone();
  }
  const int forward_nodes = g->size();

  // Parameters the loss does not depend on get no gradient and no update at all (PyTorch's
  // optimizers skip a parameter whose grad is None: no weight decay, no momentum).
  std::vector<bool> feeds_loss(static_cast<size_t>(forward_nodes), false);
  feeds_loss[static_cast<size_t>(loss_id)] = true;
  for (int id = loss_id; id >= 0; --id)
    if (feeds_loss[static_cast<size_t>(id)])
      for (int in : g->node(id).inputs) feeds_loss[static_cast<size_t>(in)] = true;

  std::vector<std::string> names;
  std::vector<Tensor> trainable;
  for (int id = 0; id < forward_nodes; ++id) {
    const Node& n = g->node(id);
    if (n.op != Op::Parameter) continue;
    names.push_back(n.name);
    if (!feeds_loss[static_cast<size_t>(id)] || !n.trainable) continue;
    if (std::find(config.frozen.begin(), config.frozen.end(), n.name) != config.frozen.end()) continue;
    if (n.dtype != f32)
      throw DTypeError("parameter \"" + n.name + "\" is " + std::string(dtype_name(n.dtype)) +
                       ": training updates f32 parameters (keep master weights in f32, or freeze it)");
    trainable.emplace_back(g.get(), id);
  }
  auto known = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) != names.end(); };
  for (const auto& list : {config.frozen, [&] {
                             std::vector<std::string> v;
                             for (auto& [k, m] : config.lr_multipliers) v.push_back(k);
                             return v;
                           }()})
    for (const std::string& name : list)
      if (!known(name)) {
        std::string all;
        for (auto& n : names) all += (all.empty() ? "\"" : ", \"") + n + "\"";
        throw NameError("TrainConfig names parameter \"" + name +
                        "\", which the graph does not have; its parameters are: " + all);
      }

  Tensor l{g.get(), loss_id};
  std::vector<Tensor> grads = [&] {
    trace::Scope phase("autodiff", {{"parameters", static_cast<int64_t>(trainable.size())}});
    return gradients(l, trainable);
  }();
  g->output(kTrainingLossOutput, l);
  std::vector<int> grad_ids;
  for (const Tensor& t : grads) grad_ids.push_back(t.id());
  std::vector<int> param_ids;
  for (const Tensor& t : trainable) param_ids.push_back(t.id());
  int forward_end = forward_nodes;
  if (optimizing) {
    // Then the whole training graph, forward and backward, goes through the e-graph again. Its nodes are
    // renumbered: the outputs' nodes come first, so they still end the forward pass.
    trace::Scope phase("optimize");
    std::vector<int> kept;
    std::unique_ptr<Graph> opt = optimize::optimize(*g, &out.report, grad_ids, &kept, limits);
    runtime::log_optimize(out.report.to_string());
    forward_end = 0;
    for (auto& [name, id] : opt->outputs()) forward_end = std::max(forward_end, id + 1);
    for (int& id : param_ids) {
      const std::string& name = g->node(id).name;
      for (int j = 0; j < opt->size(); ++j)
        if (opt->node(j).op == Op::Parameter && opt->node(j).name == name) id = j;
    }
    grad_ids = kept;
    g = std::move(opt);
  }
  out.graph = std::move(g);
  out.params = std::move(param_ids);
  out.grads = std::move(grad_ids);
  out.forward_end = forward_end;
  return out;
}

}  // namespace meganeura::train
