// The training ops' hyperparameters (Attrs::values), by position: what src/train/ writes when it
// builds the update graph and what lowering's emitters read (src/lower/emit/emit_training.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

namespace meganeura::graph {

// step_scalars reads its settings from an f32 [kStepValues] tensor (a constant the trainer may
// rewrite: a cosine schedule learns its length when fit() starts): the base learning rate, the
// schedule (ScheduleKind and its three numbers), Adam's betas (0 for SGD) and the accumulation
// window. Step counts are whole numbers below 2^24, exact in f32.
enum StepValue : size_t {
  kStepLr,
  kStepSchedule,
  kStepA,
  kStepB,
  kStepC,
  kStepBeta1,
  kStepBeta2,
  kStepAccumulate,
  kStepValues
};
// A: StepLR step_size / Cosine warmup_steps; B: Cosine total_steps; C: StepLR gamma / Cosine min_ratio.
enum class ScheduleKind : uint32_t { Constant = 0, StepLR = 1, Cosine = 2 };

// optimizer_update: the algorithm, the parameter's lr factor, the gradient's scale (1 / window),
// torch.optim's hyperparameters, and whether the update clears the accumulated gradient.
enum UpdateValue : size_t {
  kUpdateAlgo,
  kUpdateLrScale,
  kUpdateGradScale,
  kUpdateWeightDecay,
  kUpdateMomentum,
  kUpdateBeta1,
  kUpdateBeta2,
  kUpdateEps,
  kUpdateNesterov,
  kUpdateZeroGrad,
  kUpdateValues
};
enum class UpdateAlgo : uint32_t { SGD = 0, Adam = 1, AdamW = 2 };  // kernels::OPT_* (static_assert there)

inline constexpr double kMaxStepCount = 16777216.0;

// The Hyper block's size in 32-bit words (kernels::Hyper).
inline constexpr int64_t kHyperWords = 8;
// The step counters: micro-steps, optimizer steps, two spare words.
inline constexpr int64_t kCounterWords = 4;

}  // namespace meganeura::graph
