// Training sessions against a host reference in double: every optimizer (torch.optim formulas),
// clipping, schedules, gradient accumulation, per-parameter lr multipliers, frozen and unused
// parameters, and the loss and gradients a step reports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numbers>

#include "file_fixtures.hpp"
#include "train_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;
using ::testing::HasSubstr;

constexpr int kSteps = 6;

// ---- 1, 2: optimizers -------------------------------------------------------------------------

TEST(TrainOptimizer, SgdPlain) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = SGD{.lr = 0.1f}}, kSteps, rng);
}

TEST(TrainOptimizer, SgdMomentum) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = SGD{.lr = 0.1f, .momentum = 0.9f}}, kSteps, rng);
}

TEST(TrainOptimizer, SgdNesterov) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = SGD{.lr = 0.1f, .momentum = 0.9f, .nesterov = true}}, kSteps, rng);
}

TEST(TrainOptimizer, SgdWeightDecay) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = SGD{.lr = 0.1f, .weight_decay = 0.2f}}, kSteps, rng);
  run_side_by_side({.optimizer = SGD{.lr = 0.1f, .momentum = 0.8f, .weight_decay = 0.2f, .nesterov = true}}, kSteps,
                   rng);
}

TEST(TrainOptimizer, AdamWithL2WeightDecay) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = Adam{.lr = 0.05f}}, kSteps, rng);
  run_side_by_side({.optimizer = Adam{.lr = 0.05f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f, .weight_decay = 0.3f}},
                   kSteps, rng);
}

TEST(TrainOptimizer, AdamWDecoupledWeightDecay) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = AdamW{.lr = 0.05f, .weight_decay = 0.3f}}, kSteps, rng);
  run_side_by_side({.optimizer = AdamW{.lr = 0.05f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f, .weight_decay = 0.0f}},
                   kSteps, rng);
}

// ---- 3: clipping by global norm ---------------------------------------------------------------

// The host's clipping factor of each step for this config and these batches (same start, seeds).
TEST(TrainClip, GlobalNormAboveTheMaxScalesBothParameters) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  // Targets in [-20, 20] make the gradient norm far larger than 0.5 on every step.
  const TrainConfig cfg{.optimizer = SGD{.lr = 0.1f, .momentum = 0.5f}, .clip_grad_norm = 0.5f};
  Regression r;
  Session s = build_session(r.g, r.loss, cfg);
  const Params start = r.random_params(rng);
  set_params(s, r, start);
  HostTrainer h(cfg, start, false);
  for (int k = 1; k <= kSteps; ++k) {
    const Batch b = random_batch(rng, 20.0);
    feed(s, b);
    s.step();
    const HostGrad hg = h.step(b);
    ASSERT_LT(h.last_clip_scale, 0.5) << "step " << k << ": the case must clip";
    // Per-tensor clipping (each of W and b to norm 0.5) would give another result than this
    // global scale: both tensors' norms are well above 0.5 / 2.
    double nw = 0, nb = 0;
    for (double e : hg.grads.at("W")) nw += e * e;
    for (double e : hg.grads.at("b")) nb += e * e;
    ASSERT_GT(std::sqrt(nb) * h.last_clip_scale, 0.05) << "b must carry a share of the global norm";
    ASSERT_GT(std::sqrt(nw) * h.last_clip_scale, 0.05);
    // read_grad is the raw gradient (before clipping).
    EXPECT_TRUE(same_grad(s, hg, "W", "raw gradient of W"));
    expect_params(s, h, 1e-5, "step " + std::to_string(k));
  }
}

TEST(TrainClip, GlobalNormBelowTheMaxChangesNothing) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  const TrainConfig cfg{.optimizer = SGD{.lr = 0.1f, .momentum = 0.5f}, .clip_grad_norm = 1000.0f};
  Regression r;
  Session clipped = build_session(r.g, r.loss, cfg);
  Session plain = build_session(r.g, r.loss, {.optimizer = SGD{.lr = 0.1f, .momentum = 0.5f}});
  const Params start = r.random_params(rng);
  set_params(clipped, r, start);
  set_params(plain, r, start);
  HostTrainer h(cfg, start, false);
  for (int k = 1; k <= kSteps; ++k) {
    const Batch b = random_batch(rng);
    feed(clipped, b);
    feed(plain, b);
    clipped.step();
    plain.step();
    h.step(b);
    ASSERT_EQ(h.last_clip_scale, 1.0);
    expect_params(clipped, h, 1e-5, "step " + std::to_string(k));
    for (const char* name : {"W", "b"})
      EXPECT_TRUE(clipped.read_parameter(name).bytes == plain.read_parameter(name).bytes)
          << "step " << k << ": a norm below the max must leave the update exactly as without clipping (" << name
          << ")";
  }
}

TEST(TrainClip, AdamWithClipping) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = AdamW{.lr = 0.05f, .weight_decay = 0.1f}, .clip_grad_norm = 0.3f}, kSteps, rng, false,
                   5.0);
}

// With accumulation the clipped gradient is the window's mean gradient (what the update applies),
// as in PyTorch's loop: (loss / N).backward() per micro step, clip_grad_norm_, step. The norm of
// the window's sum would be N times too large and clip N times too hard.
TEST(TrainClip, ClipsTheMeanGradientOfAnAccumulationWindow) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = SGD{.lr = 0.1f}, .clip_grad_norm = 0.5f, .accumulation_steps = 2}, kSteps, rng, false,
                   20.0);
}

// ---- 4: schedules -----------------------------------------------------------------------------

// Steps SGD (no momentum) under `schedule` and checks the lr applied at each step: from the
// parameters before and after and the gradient (p_new = p - lr_t g), against schedule_factor and
// the hand formula; the parameters against the host trainer.
void check_schedule(const Schedule& schedule, int steps, Rng& rng, const std::vector<double>& expected_factors) {
  const float lr = 0.2f;
  const TrainConfig cfg{.optimizer = SGD{.lr = lr}, .schedule = schedule};
  Regression r;
  Session s = build_session(r.g, r.loss, cfg);
  const Params start = r.random_params(rng);
  set_params(s, r, start);
  HostTrainer h(cfg, start, false);
  for (int t = 0; t < steps; ++t) {
    const std::string at = "optimizer step t=" + std::to_string(t);
    const double hand = host_schedule(schedule, t);
    if (t < static_cast<int>(expected_factors.size())) {
      EXPECT_NEAR(hand, expected_factors[t], 1e-12) << at << " (test's own formula)";
    }
    EXPECT_NEAR(schedule_factor(schedule, t), hand, 1e-6 * std::max(1.0, hand)) << at;

    const std::vector<float> before = to_floats(s.read_parameter("W"));
    const Batch b = random_batch(rng);
    feed(s, b);
    s.step();
    h.step(b);
    const std::vector<float> after = to_floats(s.read_parameter("W"));
    const std::vector<float> g = to_floats(s.read_grad("W"));
    double num = 0, den = 0;  // least squares: lr_t = <before - after, g> / <g, g>
    for (size_t i = 0; i < g.size(); ++i) {
      num += (static_cast<double>(before[i]) - after[i]) * g[i];
      den += static_cast<double>(g[i]) * g[i];
    }
    ASSERT_GT(den, 0);
    EXPECT_NEAR(num / den, lr * hand, 1e-4 * lr) << at << ": the lr applied";
    EXPECT_NEAR(h.last_lr, static_cast<double>(lr) * hand, 1e-12);
    expect_params(s, h, 1e-5, at);
  }
}

// The device computes each step's lr and Adam's bias corrections from its own step counters
// (step_scalars.comp): over long runs they stay as close to the host's double arithmetic as f32
// allows. Each step starts from p = 0 with d loss / d p = 1, so p after it is -lr_t (SGD), or
// -lr (m_t / bias1) / (sqrt(v_t / bias2) + eps) = -lr within rounding (Adam, exact corrections).
TEST(TrainSchedule, TheDeviceFollowsLongSchedulesToTheirEnd) {
  auto run = [](const TrainConfig& cfg, int steps, auto&& expect) {
    Graph g;
    Tensor p = g.parameter("p", {1});
    Session s = build_session(g, sum(p), cfg);
    for (int t = 0; t < steps; ++t) {
      s.set_parameter("p", host_f32({1}, {0.0f}));
      s.step();
      expect(t, -static_cast<double>(to_floats(s.read_parameter("p"))[0]));
    }
    EXPECT_EQ(s.optimizer_steps(), steps);
  };
  const Cosine cosine{.warmup_steps = 10, .total_steps = 1500, .min_ratio = 0.05f};
  run({.optimizer = SGD{.lr = 1.0f}, .schedule = cosine}, 1600, [&](int t, double lr) {
    const double want = host_schedule(cosine, t);
    ASSERT_NEAR(lr, want, 2e-6 * want) << "cosine, optimizer step " << t;
  });
  const StepLR step{.step_size = 7, .gamma = 0.9f};
  run({.optimizer = SGD{.lr = 1.0f}, .schedule = step}, 500, [&](int t, double lr) {
    const double want = host_schedule(step, t);
    ASSERT_NEAR(lr, want, 1e-5 * want) << "StepLR, optimizer step " << t;
  });
  run({.optimizer = Adam{.lr = 1.0f, .eps = 1e-12f}}, 2000,
      [&](int t, double update) { ASSERT_NEAR(update, 1.0, 2e-5) << "Adam's bias corrections, optimizer step " << t; });
}

TEST(TrainSchedule, Constant) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  check_schedule(Constant{}, 5, rng, {1, 1, 1, 1, 1});
}

TEST(TrainSchedule, StepLR) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  check_schedule(StepLR{.step_size = 2, .gamma = 0.5f}, 7, rng, {1, 1, 0.5, 0.5, 0.25, 0.25, 0.125});
}

TEST(TrainSchedule, CosineWithWarmup) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  // Warm-up lr/3, 2lr/3, lr; then cosine from 1 to min_ratio 0.1 over steps 3..9; past total_steps
  // it stays at the minimum.
  const double pi = std::numbers::pi;
  std::vector<double> f = {1.0 / 3, 2.0 / 3, 1.0};
  const double m = 0.1f;  // min_ratio as the f32 the config holds
  for (int t = 3; t <= 11; ++t) f.push_back(m + (1 - m) * 0.5 * (1 + std::cos(pi * std::min(1.0, (t - 3) / 6.0))));
  EXPECT_NEAR(f[9], m, 1e-12);
  EXPECT_NEAR(f[11], m, 1e-12);
  check_schedule(Cosine{.warmup_steps = 3, .total_steps = 9, .min_ratio = 0.1f}, 12, rng, f);
}

TEST(TrainSchedule, CosineWithoutWarmup) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  const double pi = std::numbers::pi;
  std::vector<double> f;
  for (int t = 0; t < 6; ++t) f.push_back(0.5 * (1 + std::cos(pi * std::min(1.0, t / 4.0))));
  check_schedule(Cosine{.warmup_steps = 0, .total_steps = 4}, 6, rng, f);
}

// ---- 5: gradient accumulation -----------------------------------------------------------------

TEST(TrainAccumulation, UpdatesOnceAWindowWithTheMeanGradient) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  for (const Optimizer& opt :
       std::vector<Optimizer>{SGD{.lr = 0.1f, .momentum = 0.9f}, Adam{.lr = 0.05f, .weight_decay = 0.1f}}) {
    SCOPED_TRACE(opt.index() == 0 ? "SGD momentum" : "Adam");
    const TrainConfig cfg{.optimizer = opt, .accumulation_steps = 3};
    Regression r;
    Session s = build_session(r.g, r.loss, cfg);
    const Params start = r.random_params(rng);
    set_params(s, r, start);
    HostTrainer h(cfg, start, false);
    for (int k = 1; k <= 9; ++k) {
      const std::string at = "micro step " + std::to_string(k);
      const HostTensor before = s.read_parameter("W");
      const Batch b = random_batch(rng);
      feed(s, b);
      s.step();
      const HostGrad hg = h.step(b);
      EXPECT_EQ(s.optimizer_steps(), k / 3) << at;
      EXPECT_EQ(s.stats().steps, static_cast<uint64_t>(k)) << at;
      EXPECT_TRUE(same_grad(s, hg, "W", at + ": read_grad is this step's gradient"));
      EXPECT_NEAR(s.read_loss(), hg.loss, 1e-5 * std::max(1.0, hg.loss)) << at;
      if (k % 3 != 0) {
        EXPECT_TRUE(s.read_parameter("W").bytes == before.bytes)
            << at << ": inside a window the parameters must not move";
      } else {
        EXPECT_FALSE(s.read_parameter("W").bytes == before.bytes) << at << ": the window's last step updates";
      }
      expect_params(s, h, 1e-5, at);
    }
  }
}

TEST(TrainAccumulation, SideBySideWithClippingOff) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = AdamW{.lr = 0.05f, .weight_decay = 0.2f},
                    .schedule = StepLR{.step_size = 1, .gamma = 0.7f},
                    .accumulation_steps = 2},
                   8, rng);
}

// ---- 6: lr multipliers and frozen parameters --------------------------------------------------

TEST(TrainParams, LrMultiplier) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  run_side_by_side({.optimizer = SGD{.lr = 0.1f, .momentum = 0.9f}, .lr_multipliers = {{"b", 0.5f}}}, kSteps, rng);
  // AdamW's decoupled decay scales with the multiplied lr too (torch: per-group lr).
  run_side_by_side({.optimizer = AdamW{.lr = 0.05f, .weight_decay = 0.5f}, .lr_multipliers = {{"b", 0.5f}}}, kSteps,
                   rng);
}

TEST(TrainParams, LrMultiplierHalvesTheSgdStep) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  Regression r;
  const Params start = r.random_params(rng);
  Session full = build_session(r.g, r.loss, {.optimizer = SGD{.lr = 0.1f}});
  Session half = build_session(r.g, r.loss, {.optimizer = SGD{.lr = 0.1f}, .lr_multipliers = {{"b", 0.5f}}});
  set_params(full, r, start);
  set_params(half, r, start);
  const Batch batch = random_batch(rng);
  feed(full, batch);
  feed(half, batch);
  full.step();
  half.step();
  const auto f = to_floats(full.read_parameter("b")), h = to_floats(half.read_parameter("b"));
  for (size_t i = 0; i < f.size(); ++i)
    EXPECT_NEAR(start.at("b")[i] - h[i], 0.5 * (start.at("b")[i] - f[i]), 1e-6) << "b[" << i << "]";
  EXPECT_TRUE(full.read_parameter("W").bytes == half.read_parameter("W").bytes) << "W has no multiplier";
}

TEST(TrainParams, FrozenParameterIsUnchangedAndHasNoGradient) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  for (const Optimizer& opt : std::vector<Optimizer>{SGD{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.1f},
                                                     AdamW{.lr = 0.05f, .weight_decay = 0.5f}}) {
    const TrainConfig cfg{.optimizer = opt, .frozen = {"b"}};
    run_side_by_side(cfg, kSteps, rng);  // b: unchanged, read_grad zeros; W trains as usual
    Regression r;
    Session s = build_session(r.g, r.loss, cfg);
    const Params start = r.random_params(rng);
    set_params(s, r, start);
    const HostTensor b0 = s.read_parameter("b");
    for (int k = 0; k < 3; ++k) {
      feed(s, random_batch(rng));
      s.step();
    }
    EXPECT_TRUE(s.read_parameter("b").bytes == b0.bytes) << "a frozen parameter must keep its exact bits";
    EXPECT_TRUE(same_values(s.read_grad("b"), Vec(5, 0.0), 0, "read_grad of a frozen parameter"));
  }
}

TEST(TrainParams, UnknownNamesThrowNameError) {
  Regression r;
  try {
    build_session(r.g, r.loss, {.frozen = {"W", "bias"}});
    ADD_FAILURE() << "frozen = {\"bias\"} must throw";
  } catch (const NameError& e) {
    EXPECT_THAT(e.what(), HasSubstr("\"bias\""));
    EXPECT_THAT(e.what(), HasSubstr("\"W\""));  // lists the graph's parameters
    EXPECT_THAT(e.what(), HasSubstr("\"b\""));
  }
  try {
    build_session(r.g, r.loss, {.lr_multipliers = {{"w", 2.0f}}});
    ADD_FAILURE() << "lr_multipliers {\"w\"} must throw";
  } catch (const NameError& e) {
    EXPECT_THAT(e.what(), HasSubstr("\"w\""));
  }
}

// Two products of one input share a packed weight tensor (horizontal fusion), and the update
// runs once per pack of parameters (train/update_packs.hpp): a pack holding a frozen parameter
// must not be updated as a whole, and packed parameters must step exactly as alone.
TEST(TrainParams, PackedUpdatesStepEveryParameterAndSpareFrozenOnes) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  constexpr int64_t N = 4, I = 6, O1 = 3, O2 = 5;
  for (const bool freeze_w1 : {false, true}) {
    SCOPED_TRACE(freeze_w1 ? "w1 frozen" : "all trained");
    Graph g;
    Tensor x = g.input("x", {N, I});
    Tensor w1 = g.parameter("w1", {I, O1}), w2 = g.parameter("w2", {I, O2}), c = g.parameter("c", {O2});
    Tensor y1 = matmul(x, w1), y2 = matmul(x, w2);  // plain products of one input: grouped
    Tensor loss = mean(y1 * y1) + mean(y2 * y2) + mean(c * c);
    TrainConfig cfg{.optimizer = SGD{.lr = 0.1f}};
    if (freeze_w1) cfg.frozen = {"w1"};
    Session s = build_session(g, loss, cfg);
    std::map<std::string, std::vector<float>> p{
        {"w1", rng.floats(I * O1, -1, 1)}, {"w2", rng.floats(I * O2, -1, 1)}, {"c", rng.floats(O2, -1, 1)}};
    const std::vector<float> xs = rng.floats(N * I, -1, 1);
    s.set_parameter("w1", host_f32({I, O1}, p["w1"]));
    s.set_parameter("w2", host_f32({I, O2}, p["w2"]));
    s.set_parameter("c", host_f32({O2}, p["c"]));
    s.set_input("x", host_f32({N, I}, xs));
    s.step();
    // SGD on the host: d mean(y²)/d w = 2/numel(y) xᵀ y, d mean(c²)/d c = 2/numel(c) c.
    auto expect = [&](const std::string& name) {
      std::vector<double> want(p[name].begin(), p[name].end());
      if (name == "c")
        for (double& v : want) v -= 0.1 * 2.0 / O2 * v;
      const int64_t o = name == "w1" ? O1 : O2;
      for (int64_t n = 0; n < N && name != "c"; ++n)
        for (int64_t j = 0; j < o; ++j) {
          double y = 0.0;
          for (int64_t i = 0; i < I; ++i)
            y += xs[static_cast<size_t>(n * I + i)] * p[name][static_cast<size_t>(i * o + j)];
          const double step = 0.1 * 2.0 / static_cast<double>(N * o) * y;
          for (int64_t i = 0; i < I; ++i)
            want[static_cast<size_t>(i * o + j)] -= xs[static_cast<size_t>(n * I + i)] * step;
        }
      const std::vector<float> got = to_floats(s.read_parameter(name));
      for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-5) << name << "[" << k << "]";
    };
    if (freeze_w1)
      EXPECT_EQ(to_floats(s.read_parameter("w1")), p["w1"]) << "a frozen parameter keeps its exact bits";
    else
      expect("w1");
    expect("w2");
    expect("c");
    // All three in one pack; with w1 frozen, w2 (sharing w1's storage) and c update alone.
    const std::string listing = s.listing();
    EXPECT_EQ(count_lines(listing, "dispatch optimizer"), freeze_w1 ? 2 : 1) << listing;
  }
}

// Packs are bounded (train::update_pack_bytes), so that each updates as soon as its gradients
// are ready: with 16 MiB packs, three 6 MB parameters take two update dispatches (c1 and c2
// packed, c3 alone), and every parameter steps as plain SGD says.
TEST(TrainParams, LargeModelsUpdateInSeveralPacks) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  constexpr int64_t n = 1500 * 1024;  // 6 MB of f32 each
  ScopedEnv pack("MEGANEURA_UPDATE_PACK_MIB", "16");
  Graph g;
  Tensor c1 = g.parameter("c1", {n}), c2 = g.parameter("c2", {n}), c3 = g.parameter("c3", {n});
  Tensor loss = mean(c1 * c1) + mean(c2 * c2) + mean(c3 * c3);
  Session s = build_session(g, loss, {.optimizer = SGD{.lr = 1000.0f}});  // steps of 2 lr / n: about 1e-3 of c
  std::map<std::string, std::vector<float>> p;
  for (const char* name : {"c1", "c2", "c3"}) {
    p[name] = rng.floats(n, -1, 1);
    s.set_parameter(name, host_f32({n}, p[name]));
  }
  s.step();
  for (const char* name : {"c1", "c2", "c3"}) {
    const std::vector<float> got = to_floats(s.read_parameter(name));
    for (size_t k = 0; k < got.size(); k += 997) {
      const double want = p[name][k] - 1000.0 * 2.0 / n * p[name][k];
      ASSERT_NEAR(got[k], want, 1e-6) << name << "[" << k << "]";
    }
  }
  const std::string listing = s.listing();
  EXPECT_EQ(count_lines(listing, "dispatch optimizer"), 2) << listing;
  EXPECT_NE(listing.find("update 2 parameters (" + std::to_string(2 * n * 4) + " bytes)"), std::string::npos)
      << listing;
}

// A norm's weight gradient reads the row statistics its backward wrote (lowering pairs them:
// "row statistics from the backward"), and matches the host's: d loss / d w_d = sum_r c_rd xhat_rd
// for loss = sum(rms_norm(x, w) * c).
TEST(TrainParams, NormWeightGradientReadsTheBackwardsRowStatistics) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  constexpr int64_t R = 7, D = 33;
  Graph g;
  Tensor x = g.parameter("x", {R, D}), w = g.parameter("w", {D}), c = g.input("c", {R, D});
  Tensor loss = sum(rms_norm(x, w, 1e-5f) * c);
  Session s = build_session(g, loss, {.optimizer = SGD{.lr = 0.0f}});
  EXPECT_NE(s.listing().find("row statistics from the backward"), std::string::npos) << s.listing();
  const std::vector<float> xs = rng.floats(R * D, -2, 2), ws = rng.floats(D, 0.5, 1.5), cs = rng.floats(R * D, -1, 1);
  s.set_parameter("x", host_f32({R, D}, xs));
  s.set_parameter("w", host_f32({D}, ws));
  s.set_input("c", host_f32({R, D}, cs));
  s.step();
  const std::vector<float> got = to_floats(s.read_grad("w"));
  for (int64_t d = 0; d < D; ++d) {
    double want = 0;
    for (int64_t r = 0; r < R; ++r) {
      double ss = 0;
      for (int64_t k = 0; k < D; ++k)
        ss += double(xs[static_cast<size_t>(r * D + k)]) * xs[static_cast<size_t>(r * D + k)];
      const double rstd = 1.0 / std::sqrt(ss / D + 1e-5);
      want += double(cs[static_cast<size_t>(r * D + d)]) * xs[static_cast<size_t>(r * D + d)] * rstd;
    }
    EXPECT_NEAR(got[static_cast<size_t>(d)], want, 1e-5 * (1 + std::abs(want))) << "d w[" << d << "]";
  }
}

// ---- 7: a parameter the loss does not depend on -----------------------------------------------

TEST(TrainParams, UnusedParameterIsNeverUpdated) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  for (const Optimizer& opt : std::vector<Optimizer>{AdamW{.lr = 0.05f, .weight_decay = 0.5f},
                                                     SGD{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.5f}}) {
    const TrainConfig cfg{.optimizer = opt, .clip_grad_norm = 0.5f};
    run_side_by_side(cfg, kSteps, rng, /*unused=*/true, 5.0);
    Regression r(true);
    Session s = build_session(r.g, r.loss, cfg);
    set_params(s, r, r.random_params(rng));
    const HostTensor u0 = s.read_parameter("u");
    for (int k = 0; k < 4; ++k) {
      feed(s, random_batch(rng));
      s.step();
    }
    EXPECT_TRUE(s.read_parameter("u").bytes == u0.bytes) << "no gradient: no decay, no momentum, no update";
    EXPECT_TRUE(same_values(s.read_grad("u"), Vec(3, 0.0), 0, "read_grad of an unused parameter"));
    // The unused parameter still feeds its output.
    double su = 0;
    for (float v : to_floats(u0)) su += 2.0 * v;
    EXPECT_NEAR(s.read_output("side").data<float>()[0], su, 1e-5);
  }
}

// ---- 8: the loss and gradient a step reports --------------------------------------------------

TEST(TrainReadback, LossAndGradientsMatchTheHost) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  Regression r;
  Session s = build_session(r.g, r.loss, {.optimizer = SGD{.lr = 0.0f}});  // lr 0: parameters stay put
  const Params p = r.random_params(rng);
  set_params(s, r, p);
  EXPECT_TRUE(same_values(s.read_grad("W"), Vec(35, 0.0), 0, "read_grad before any step"));
  for (int k = 0; k < 3; ++k) {
    const Batch b = random_batch(rng, 3.0);
    feed(s, b);
    s.step();
    const HostGrad hg = host_loss_and_grad(p, b);
    EXPECT_NEAR(s.read_loss(), hg.loss, 1e-5 * std::max(1.0, hg.loss));
    EXPECT_TRUE(same_grad(s, hg, "W", "d loss / d W"));
    EXPECT_TRUE(same_grad(s, hg, "b", "d loss / d b"));
    const HostTensor g = s.read_grad("W");
    EXPECT_EQ(g.shape, (Shape{7, 5}));
    EXPECT_EQ(g.dtype, f32);
  }
  EXPECT_THROW(s.read_grad("nope"), NameError);
  EXPECT_THROW(s.read_grad("x"), NameError);  // an input, not a parameter
}

TEST(TrainReadback, InferenceSessionsRefuseTrainingCalls) {
  Regression r;
  Session s = build_inference_session(r.g);
  EXPECT_FALSE(s.is_training());
  EXPECT_EQ(s.optimizer_steps(), 0);
  EXPECT_THROW(s.read_loss(), Error);
  EXPECT_THROW(s.read_grad("W"), Error);
  EXPECT_THROW(s.evaluate(), Error);
  EXPECT_TRUE(build_session(r.g, r.loss).is_training());
}

}  // namespace
}  // namespace mntest
