// Shared by the tensor-core attention forwards (attention_coop.glsl, attention_coop_split.glsl):
// the Attention contract's bindings (kernel_abi.hpp) and their specialization constants. Include
// after common.glsl.
layout(constant_id = 1) const uint HAS_POSITION = 0u;
layout(constant_id = 2) const uint HEAD_DIM = 64u;  // D (= Dv): fixed, so the fragment loops unroll
layout(std430, set = 0, binding = 2) readonly buffer Q { uint q[]; };
layout(std430, set = 0, binding = 3) readonly buffer K { uint k[]; };
layout(std430, set = 0, binding = 4) readonly buffer V { uint v[]; };
layout(std430, set = 0, binding = 5) readonly buffer Position { uint position_data[]; };
layout(std430, set = 0, binding = 6) writeonly buffer O { uint o[]; };
#include "attention_common.glsl"

// Stages keys [j0, j0 + ROWS) of k into K_DST (and of v into V_DST when WITH_V) as f16 rows of
// STRIDE elements, zero past sk; key j is row kv_first + j * kv_step (attention_common.glsl). A
// macro: the shared arrays differ per kernel.
#define STAGE_KV(K_DST, V_DST, ROWS, STRIDE, kv_first, kv_step, j0, WITH_V)                         \
  for (uint e_ = gl_LocalInvocationID.x; e_ < (ROWS) * HEAD_DIM; e_ += WG) {                          \
    uint j_ = e_ / HEAD_DIM, x_ = e_ % HEAD_DIM;                                                       \
    bool in_range_ = (j0) + j_ < p.sk;                                                                 \
    uint at_ = ((kv_first) + ((j0) + j_) * (kv_step)) * HEAD_DIM + x_;                                 \
    K_DST[j_ * (STRIDE) + x_] = float16_t(in_range_ ? uintBitsToFloat(k[at_]) : 0.0f);                 \
    if (WITH_V) V_DST[j_ * (STRIDE) + x_] = float16_t(in_range_ ? uintBitsToFloat(v[at_]) : 0.0f);     \
  }
