// Helpers of the training tests: a small regression graph whose loss and gradient the host
// computes in double, and a host trainer that applies TrainConfig's semantics (torch.optim
// formulas, schedules, clipping, accumulation, multipliers, frozen parameters) in double, to run
// side by side with a training session.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "meganeura/train.hpp"
#include "test_util.hpp"

namespace mntest {

using Vec = std::vector<double>;
using Params = std::map<std::string, Vec>;

// loss = mse_loss(x·W + b, t) = mean((x·W + b - t)^2), x [N,I], W [I,O], b [O], t [N,O]; output
// "y" = x·W + b. With `unused`, a parameter "u" [3] that the loss does not depend on (it feeds the
// output "side" only).
struct Regression {
  static constexpr int64_t N = 6, I = 7, O = 5, U = 3;
  meganeura::Graph g;
  meganeura::Tensor loss;
  bool unused;
  explicit Regression(bool unused = false);
  meganeura::Shape shape(const std::string& param) const;
  // Random parameters in [-1, 1] (and "u" when present).
  Params random_params(Rng& rng) const;
};

struct Batch {
  std::vector<float> x, t;
};
Batch random_batch(Rng& rng, double target_scale = 1.0);
void feed(meganeura::Session& s, const Batch& b);
void set_params(meganeura::Session& s, const Regression& r, const Params& p);

struct HostGrad {
  double loss = 0;
  Params grads;  // "W" and "b"
  // Each gradient element's summands' magnitudes (sum of |k r x|): the scale its f32 rounding
  // follows, which cancellation can make far larger than the element itself.
  Params magnitudes;
};
// The loss and its gradient with respect to W and b, in double.
HostGrad host_loss_and_grad(const Params& p, const Batch& b);

// The schedules by hand (not through meganeura::schedule_factor).
double host_schedule(const meganeura::Schedule& s, int64_t t);

// TrainConfig on the host: one micro step at a time, as Session::step().
class HostTrainer {
 public:
  HostTrainer(const meganeura::TrainConfig& cfg, Params params, bool unused);
  // Runs one step on `b`: returns this step's loss and gradient (of the trainable parameters).
  // With `applied`, the update uses those gradients instead of its own (the session's, read back:
  // Adam divides each element by its own magnitude, so a tiny gradient element's f32 rounding
  // moves its parameter by a visible share of lr; the gradients are compared on their own).
  HostGrad step(const Batch& b, const Params* applied = nullptr);
  const Params& params() const { return params_; }
  int64_t optimizer_steps() const { return t_; }
  bool trainable(const std::string& name) const;
  double last_clip_scale = 1;  // of the last update
  double last_lr = 0;          // scheduled lr of the last update (before multipliers)

 private:
  meganeura::TrainConfig cfg_;
  Params params_, sum_, s1_, s2_;
  bool unused_;
  int64_t micro_ = 0, t_ = 0;
};

// A session parameter against host values (f32, shape from the session) at rtol.
::testing::AssertionResult same_values(const meganeura::HostTensor& got, const Vec& want, double rtol,
                                       const std::string& what, double scale = 0);
// The session's gradient of `name` against the host's, at rtol 1e-5 of its summands' magnitudes.
::testing::AssertionResult same_grad(const meganeura::Session& s, const HostGrad& h, const std::string& name,
                                     const std::string& what);
// Every parameter of the session against the host trainer's.
void expect_params(const meganeura::Session& s, const HostTrainer& h, double rtol, const std::string& what);

std::vector<float> to_floats(const meganeura::HostTensor& t);

// Builds a session and a host trainer on the same random start, steps both `steps` times on the
// same random batches and checks loss, gradients, parameters and optimizer_steps after every
// step (rtol 1e-5). The host's updates apply the session's gradients (HostTrainer::step), each
// checked against the host's own first, so the parameters test the optimizer's arithmetic.
void run_side_by_side(const meganeura::TrainConfig& cfg, int steps, Rng& rng, bool unused = false,
                      double target_scale = 1.0);

}  // namespace mntest
