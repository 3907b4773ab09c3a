// The training loop: epochs of shuffled batches with a progress bar, evaluation on the test set
// after each epoch, and curves written as CSV and SVG.
#include "meganeura/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <span>

#include "runtime/session_impl.hpp"
#include "train/curves.hpp"
#include "train/train_session.hpp"
#include "util/progress.hpp"

namespace meganeura {

namespace {

// The loader's batches must fill the graph's inputs exactly; otherwise the first set_input would
// report a bare element count that does not say the batch size is what differs.
void check_batch_dimension(const std::map<std::string, Session::Impl::Named, std::less<>>& inputs,
                           const std::string& input, int64_t batch_size) {
  const Shape& shape = inputs.find(input)->second.shape;
  if (!shape.empty() && shape[0] == batch_size) return;
  const std::string graph_batch = shape.empty() ? "missing (a scalar)" : std::to_string(shape[0]);
  throw SizeError("Trainer: TrainerOptions::batch_size is " + std::to_string(batch_size) +
                  " but the graph's batch dimension is " + graph_batch + ": input \"" + input + "\" has shape " +
                  shape_str(shape) +
                  " (make batch_size equal to the graph's first dimension, or build the graph with batch " +
                  std::to_string(batch_size) + ")");
}

}  // namespace

Trainer::Trainer(Session& session, TrainerOptions options) : session_(&session), opts_(std::move(options)) {
  if (!session.is_training()) throw Error("Trainer needs a training session (build_session)");
  const std::vector<std::string> inputs = session.input_names();
  for (const std::string& name : {opts_.input, opts_.labels})
    if (std::find(inputs.begin(), inputs.end(), name) == inputs.end()) {
      std::string known;
      for (const std::string& n : inputs) known += (known.empty() ? "\"" : ", \"") + n + "\"";
      throw NameError("Trainer: the session has no input \"" + name +
                      "\" (TrainerOptions::input/labels); its inputs are: " + known);
    }
  for (const std::string& name : {opts_.input, opts_.labels})
    check_batch_dimension(session.impl_->inputs, name, opts_.batch_size);
  if (Session* eval = opts_.eval_session) {
    if (eval->is_training()) throw Error("TrainerOptions::eval_session must be an inference session");
    const std::vector<std::string> eval_inputs = eval->input_names();
    if (std::find(eval_inputs.begin(), eval_inputs.end(), opts_.input) == eval_inputs.end())
      throw NameError("Trainer: the eval session has no input \"" + opts_.input + "\"");
    check_batch_dimension(eval->impl_->inputs, opts_.input, opts_.batch_size);
  }
}

static double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Cross-entropy of one row of logits at `label`, in double: log-sum-exp minus the label's logit.
static double row_cross_entropy(std::span<const float> row, int32_t label) {
  const double top = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (float v : row) sum += std::exp(static_cast<double>(v) - top);
  return top + std::log(sum) - static_cast<double>(row[static_cast<size_t>(label)]);
}

// The training session's parameters and buffers into the eval session, by the eval session's names.
static void copy_parameters(const Session& from, Session& to) {
  for (const std::string& name : to.parameter_names()) to.set_parameter(name, from.read_parameter(name));
}

EpochStats Trainer::evaluate(const data::Dataset& test) {
  data::DataLoader loader(test, {.batch_size = opts_.batch_size, .shuffle = false, .last_batch = data::LastBatch::Pad});
  loader.start_epoch(0);
  data::Batch b;
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  Session* eval = opts_.eval_session;
  if (eval) copy_parameters(*session_, *eval);
  Session& scorer = eval ? *eval : *session_;  // whose logits score the test set
  while (loader.next(b)) {
    scorer.set_input(opts_.input, b.features);
    if (eval) {
      eval->step();
    } else {
      session_->set_input(opts_.labels, b.labels);
      session_->evaluate();
    }
    HostTensor logits = scorer.read_output(opts_.logits);
    auto l = logits.data<float>();
    const int64_t classes = logits.shape.back();
    auto labels = b.labels.data<int32_t>();
    for (int64_t r = 0; r < b.real; ++r) {
      auto row = l.subspan(static_cast<size_t>(r * classes), static_cast<size_t>(classes));
      auto best = std::max_element(row.begin(), row.end()) - row.begin();
      correct += best == labels[static_cast<size_t>(r)];
      if (eval) loss_sum += row_cross_entropy(row, labels[static_cast<size_t>(r)]);
    }
    if (!eval)
      loss_sum += static_cast<double>(session_->read_loss()) * static_cast<double>(b.real);  // mean over real rows
    seen += b.real;
  }
  EpochStats s;
  s.test_loss = seen ? loss_sum / static_cast<double>(seen) : 0;
  s.test_accuracy = seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0;
  return s;
}

std::vector<EpochStats> Trainer::fit(const data::Dataset& train, const data::Dataset& test) {
  data::DataLoader loader(train, {.batch_size = opts_.batch_size, .shuffle = true, .seed = opts_.seed});
  // A cosine schedule without an end runs to the end of training.
  const TrainConfig& config = session_->impl_->train->config;
  if (const auto* cos = std::get_if<Cosine>(&config.schedule); cos && cos->total_steps == 0) {
    Cosine to_the_end = *cos;
    to_the_end.total_steps = loader.batches() * opts_.epochs / std::max(config.accumulation_steps, 1);
    train::set_schedule(*session_->impl_, to_the_end);
  }
  std::vector<CurvePoint> curve;
  for (const EpochStats& h : history_) curve.push_back({h.epoch, h.train_loss, h.test_loss, h.test_accuracy});
  for (int e = 0; e < opts_.epochs; ++e) {
    const int epoch = static_cast<int>(history_.size()) + 1;
    auto start = std::chrono::steady_clock::now();
    loader.start_epoch(epoch - 1);
    std::optional<Progress> bar;
    if (opts_.progress)
      bar.emplace("epoch " + std::to_string(epoch) + "/" + std::to_string(opts_.epochs), loader.batches());
    data::Batch b;
    double loss_sum = 0;
    int64_t steps = 0;
    char extra[64];
    while (loader.next(b)) {
      session_->set_input(opts_.input, b.features);
      session_->set_input(opts_.labels, b.labels);
      session_->step();
      double loss = session_->read_loss();
      step_losses_.push_back(loss);
      loss_sum += loss;
      ++steps;
      std::snprintf(extra, sizeof extra, "loss %.4f", loss);
      if (bar) bar->update(steps, extra);
    }
    EpochStats s = evaluate(test);
    s.epoch = epoch;
    s.steps = steps;
    s.train_loss = steps ? loss_sum / static_cast<double>(steps) : 0;
    s.seconds = seconds_since(start);
    char summary[160];
    std::snprintf(summary, sizeof summary, "train loss %.4f | test loss %.4f | test accuracy %.2f%%", s.train_loss,
                  s.test_loss, 100.0 * s.test_accuracy);
    if (bar) bar->finish(summary);
    history_.push_back(s);
    curve.push_back({s.epoch, s.train_loss, s.test_loss, s.test_accuracy});
    if (!opts_.curves.empty()) write_curves(opts_.curves, step_losses_, curve);
  }
  return history_;
}

}  // namespace meganeura
