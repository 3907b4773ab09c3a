// Training sessions: forward, backward and the optimizer update in one recorded command buffer.
#pragma once
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "meganeura/graph.hpp"
#include "meganeura/session.hpp"

namespace meganeura {

// torch.optim.SGD (dampening 0): weight decay adds wd*p to the gradient.
struct SGD {
  float lr = 0.01f, momentum = 0.0f, weight_decay = 0.0f;
  bool nesterov = false;
};
// torch.optim.Adam: weight decay is L2 (added to the gradient).
struct Adam {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
};
// torch.optim.AdamW: decoupled weight decay (p *= 1 - lr*wd before the Adam step).
struct AdamW {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 1e-2f;
};
using Optimizer = std::variant<SGD, Adam, AdamW>;

// Learning-rate schedules, as a factor of the optimizer's lr at optimizer step t (0-based).
struct Constant {};
struct StepLR {
  int64_t step_size = 1000;
  float gamma = 0.1f;
};  // lr * gamma^(t / step_size)
// Linear warm-up from lr/warmup_steps to lr over warmup_steps, then cosine to lr*min_ratio at
// total_steps (0: the Trainer sets it from epochs x batches).
struct Cosine {
  int64_t warmup_steps = 0, total_steps = 0;
  float min_ratio = 0.0f;
};
using Schedule = std::variant<Constant, StepLR, Cosine>;
float schedule_factor(const Schedule& s, int64_t t);

struct TrainConfig {
  Optimizer optimizer = SGD{};
  Schedule schedule = Constant{};
  float clip_grad_norm = 0.0f;                    // > 0: scale gradients so their global L2 norm is at most this
  int accumulation_steps = 1;                     // apply the update every N steps, on the mean gradient
  std::map<std::string, float> lr_multipliers{};  // per-parameter lr factor, by name
  std::vector<std::string> frozen{};              // parameters that are not updated (no gradient is computed)
  bool reuse_memory = true;
  bool profile = false;           // GPU timestamps per dispatch (Session::profile)
  bool optimize = true;           // run the e-graph optimizer on forward + backward, fuse elementwise chains
  int device = -1;                // the Vulkan device, as SessionOptions::device
  uint64_t max_buffer_bytes = 0;  // as SessionOptions::max_buffer_bytes (tests of the split)
};

// Builds a training session: step() runs forward, backward and (every accumulation_steps
// steps) the optimizer update. `loss` must be a rank-0 f32 tensor of g. The graph's outputs are
// copied back too (e.g. logits for accuracy); evaluate() runs the forward pass alone.
Session build_session(const Graph& g, Tensor loss, const TrainConfig& config = {});

}  // namespace meganeura
