// The training loop: epochs over a DataLoader, a progress bar, evaluation, and loss/accuracy
// curves written as CSV and SVG.
#pragma once
#include <string>
#include <vector>

#include "meganeura/data.hpp"
#include "meganeura/session.hpp"

namespace meganeura {

struct TrainerOptions {
  int epochs = 1;
  int64_t batch_size = 128;                                  // must match the graph's batch dimension
  uint64_t seed = 0;                                         // shuffling
  std::string input = "x", labels = "y", logits = "logits";  // names in the session
  std::string curves;    // "out/fashion": writes out/fashion.csv and out/fashion.svg ("" = none)
  bool progress = true;  // a progress bar on stderr (step, loss, steps/s, ETA)
  // PyTorch's model.eval() for the test set: an inference session of the graph built in eval
  // mode (batch norms by running statistics), with the same parameter and buffer names. Before
  // each evaluation the training session's values are copied into it, and it computes the
  // logits (the loss from them on the host). Null: the training session's forward pass.
  Session* eval_session = nullptr;
};

struct EpochStats {
  int epoch = 0;
  int64_t steps = 0;
  double train_loss = 0;  // mean over the epoch's steps
  double test_loss = 0;
  double test_accuracy = 0;  // fraction in [0, 1]
  double seconds = 0;        // wall time of the epoch, evaluation included
};

class Trainer {
 public:
  // `session` is a training session (build_session) whose graph has inputs `input` [B, F] and
  // `labels` [B] (i32) and an output `logits` [B, classes].
  Trainer(Session& session, TrainerOptions options);
  std::vector<EpochStats> fit(const data::Dataset& train, const data::Dataset& test);
  // Test loss and accuracy with the current parameters (forward pass only).
  EpochStats evaluate(const data::Dataset& test);
  const std::vector<double>& step_losses() const { return step_losses_; }

 private:
  Session* session_;
  TrainerOptions opts_;
  std::vector<double> step_losses_;
  std::vector<EpochStats> history_;
};

}  // namespace meganeura
