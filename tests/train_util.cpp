#include "train_util.hpp"

#include <cmath>
#include <numbers>
#include <sstream>
#include <variant>

namespace mntest {

using namespace meganeura;

Regression::Regression(bool with_unused) : unused(with_unused) {
  Tensor x = g.input("x", {N, I});
  Tensor t = g.input("t", {N, O});
  Tensor w = g.parameter("W", {I, O});
  Tensor b = g.parameter("b", {O});
  Tensor y = matmul(x, w) + b;
  loss = mse_loss(y, t);
  g.output("y", y);
  if (unused) g.output("side", sum(g.parameter("u", {U}) * 2.0f));
}

Shape Regression::shape(const std::string& param) const {
  if (param == "W") return {I, O};
  if (param == "b") return {O};
  return {U};
}

Params Regression::random_params(Rng& rng) const {
  Params p;
  auto draw = [&](int64_t n) {
    Vec v(static_cast<size_t>(n));
    for (double& e : v) e = static_cast<float>(rng.uniform(-1, 1));  // representable in f32
    return v;
  };
  p["W"] = draw(I * O);
  p["b"] = draw(O);
  if (unused) p["u"] = draw(U);
  return p;
}

Batch random_batch(Rng& rng, double target_scale) {
  Batch b;
  b.x = rng.floats(Regression::N * Regression::I, -1, 1);
  b.t = rng.floats(Regression::N * Regression::O, -target_scale, target_scale);
  return b;
}

void feed(Session& s, const Batch& b) {
  s.set_input("x", host_f32({Regression::N, Regression::I}, b.x));
  s.set_input("t", host_f32({Regression::N, Regression::O}, b.t));
}

void set_params(Session& s, const Regression& r, const Params& p) {
  for (const auto& [name, v] : p)
    s.set_parameter(name, host_f32(r.shape(name), std::vector<float>(v.begin(), v.end())));
}

HostGrad host_loss_and_grad(const Params& p, const Batch& b) {
  constexpr int64_t N = Regression::N, I = Regression::I, O = Regression::O;
  const Vec& W = p.at("W");
  const Vec& bias = p.at("b");
  HostGrad h;
  Vec dW(static_cast<size_t>(I * O), 0.0), db(static_cast<size_t>(O), 0.0);
  Vec mW(dW.size(), 0.0), mb(db.size(), 0.0);
  const double k = 2.0 / static_cast<double>(N * O);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      double y = bias[o];
      for (int64_t i = 0; i < I; ++i) y += static_cast<double>(b.x[n * I + i]) * W[i * O + o];
      const double r = y - static_cast<double>(b.t[n * O + o]);
      h.loss += r * r / static_cast<double>(N * O);
      db[o] += k * r;
      mb[o] += std::fabs(k * r);
      for (int64_t i = 0; i < I; ++i) {
        dW[i * O + o] += k * r * static_cast<double>(b.x[n * I + i]);
        mW[i * O + o] += std::fabs(k * r * static_cast<double>(b.x[n * I + i]));
      }
    }
  h.grads["W"] = std::move(dW);
  h.grads["b"] = std::move(db);
  h.magnitudes["W"] = std::move(mW);
  h.magnitudes["b"] = std::move(mb);
  return h;
}

double host_schedule(const Schedule& s, int64_t t) {
  if (const auto* st = std::get_if<StepLR>(&s))
    return std::pow(static_cast<double>(st->gamma),
                    std::floor(static_cast<double>(t) / static_cast<double>(st->step_size)));
  if (const auto* c = std::get_if<Cosine>(&s)) {
    const double w = static_cast<double>(c->warmup_steps), total = static_cast<double>(c->total_steps);
    const double td = static_cast<double>(t);
    if (td < w) return (td + 1.0) / w;  // lr/w, 2 lr/w, ..., lr at the end of warm-up
    if (total <= w) return 1.0;
    const double progress = std::min(1.0, (td - w) / (total - w));
    const double m = c->min_ratio;
    return m + (1.0 - m) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  }
  return 1.0;
}

HostTrainer::HostTrainer(const TrainConfig& cfg, Params params, bool unused)
    : cfg_(cfg), params_(std::move(params)), unused_(unused) {}

bool HostTrainer::trainable(const std::string& name) const {
  if (name == "u") return false;  // the loss does not depend on it
  for (const std::string& f : cfg_.frozen)
    if (f == name) return false;
  return true;
}

HostGrad HostTrainer::step(const Batch& b, const Params* applied) {
  HostGrad hg = host_loss_and_grad(params_, b);
  for (auto it = hg.grads.begin(); it != hg.grads.end();)
    it = trainable(it->first) ? std::next(it) : hg.grads.erase(it);
  for (const auto& [name, own] : hg.grads) {
    const Vec& g = applied ? applied->at(name) : own;
    Vec& acc = sum_[name];
    acc.resize(g.size(), 0.0);
    for (size_t i = 0; i < g.size(); ++i) acc[i] += g[i];
  }
  ++micro_;
  const int64_t n = std::max(cfg_.accumulation_steps, 1);
  if (micro_ % n != 0) return hg;

  // The mean gradient over the window, then global-norm clipping (torch.nn.utils.clip_grad_norm_).
  Params mean = sum_;
  for (auto& [name, g] : mean)
    for (double& e : g) e /= static_cast<double>(n);
  sum_.clear();
  last_clip_scale = 1.0;
  if (cfg_.clip_grad_norm > 0) {
    double sq = 0;
    for (const auto& [name, g] : mean)
      for (double e : g) sq += e * e;
    last_clip_scale = std::min(1.0, static_cast<double>(cfg_.clip_grad_norm) / (std::sqrt(sq) + 1e-6));
    for (auto& [name, g] : mean)
      for (double& e : g) e *= last_clip_scale;
  }

  const int64_t step = ++t_;  // 1-based, as torch's state["step"]
  std::visit(
      [&](const auto& o) {
        using O = std::decay_t<decltype(o)>;
        last_lr = static_cast<double>(o.lr) * host_schedule(cfg_.schedule, step - 1);
        for (auto& [name, g] : mean) {
          Vec& p = params_[name];
          auto mult = cfg_.lr_multipliers.find(name);
          const double lr = last_lr * (mult == cfg_.lr_multipliers.end() ? 1.0 : static_cast<double>(mult->second));
          const double wd = o.weight_decay;
          Vec& s1 = s1_[name];
          Vec& s2 = s2_[name];
          s1.resize(p.size(), 0.0);
          s2.resize(p.size(), 0.0);
          for (size_t i = 0; i < p.size(); ++i) {
            double gi = g[i];
            if constexpr (std::is_same_v<O, SGD>) {
              // torch.optim.SGD, dampening 0 (the first buffer is the gradient itself: 0*m + g).
              const double m = o.momentum;
              if (wd != 0) gi += wd * p[i];
              if (m != 0) {
                s1[i] = m * s1[i] + gi;
                gi = o.nesterov ? gi + m * s1[i] : s1[i];
              }
              p[i] -= lr * gi;
            } else {
              const double b1 = o.beta1, b2 = o.beta2, eps = o.eps;
              if constexpr (std::is_same_v<O, AdamW>)
                p[i] *= 1.0 - lr * wd;
              else
                gi += wd * p[i];
              s1[i] = b1 * s1[i] + (1 - b1) * gi;
              s2[i] = b2 * s2[i] + (1 - b2) * gi * gi;
              const double bias1 = 1 - std::pow(b1, static_cast<double>(step));
              const double bias2 = 1 - std::pow(b2, static_cast<double>(step));
              p[i] -= lr / bias1 * s1[i] / (std::sqrt(s2[i]) / std::sqrt(bias2) + eps);
            }
          }
        }
      },
      cfg_.optimizer);
  (void)unused_;
  return hg;
}

std::vector<float> to_floats(const HostTensor& t) {
  auto d = t.data<float>();
  return {d.begin(), d.end()};
}

::testing::AssertionResult same_values(const HostTensor& got, const Vec& want, double rtol, const std::string& what,
                                       double scale) {
  return compare(RefTensor{got.shape, f32, want}, got, rtol, what, scale);
}

::testing::AssertionResult same_grad(const Session& s, const HostGrad& h, const std::string& name,
                                     const std::string& what) {
  const Vec& m = h.magnitudes.at(name);
  double mean = 0;
  for (double e : m) mean += e;
  mean /= m.empty() ? 1.0 : static_cast<double>(m.size());
  return same_values(s.read_grad(name), h.grads.at(name), 1e-5, what, mean);
}

void expect_params(const Session& s, const HostTrainer& h, double rtol, const std::string& what) {
  for (const auto& [name, v] : h.params())
    EXPECT_TRUE(same_values(s.read_parameter(name), v, rtol, what + ": parameter " + name));
}

void run_side_by_side(const TrainConfig& cfg, int steps, Rng& rng, bool unused, double target_scale) {
  Regression r(unused);
  Session s = build_session(r.g, r.loss, cfg);
  const Params start = r.random_params(rng);
  set_params(s, r, start);
  HostTrainer h(cfg, start, unused);
  for (int k = 1; k <= steps; ++k) {
    const std::string at = "step " + std::to_string(k);
    const Batch b = random_batch(rng, target_scale);
    feed(s, b);
    s.step();
    Params session_grads;
    for (const auto& [name, v] : start)
      if (h.trainable(name)) {
        const std::vector<float> g = to_floats(s.read_grad(name));
        session_grads[name] = Vec(g.begin(), g.end());
      }
    const HostGrad hg = h.step(b, &session_grads);
    EXPECT_NEAR(s.read_loss(), hg.loss, 1e-5 * std::max(1.0, std::fabs(hg.loss))) << at;
    for (const auto& [name, v] : start) {
      if (h.trainable(name)) {
        EXPECT_TRUE(same_grad(s, hg, name, at + ": gradient of " + name));
      } else {
        EXPECT_TRUE(same_values(s.read_grad(name), Vec(v.size(), 0.0), 0, at + ": gradient of untrained " + name));
      }
    }
    expect_params(s, h, 1e-5, at);
    EXPECT_EQ(s.optimizer_steps(), h.optimizer_steps()) << at;
    if (::testing::Test::HasFailure()) return;  // one step's report is enough
  }
}

}  // namespace mntest
