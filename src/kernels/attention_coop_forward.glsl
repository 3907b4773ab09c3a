// Shared by the tensor-core attention forwards (attention_coop.glsl, attention_coop_split.glsl):
// the Attention contract's bindings (attention_abi.hpp) and their specialization constants. Include
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
// STRIDE elements scaled by 2^EK (2^EV; exponents set here, V's capped at CAP_V), zero past sk.
#define STAGE_KV(K_DST, EK, V_DST, EV, CAP_V, ROWS, STRIDE, kv_first, kv_step, j0, WITH_V) \
  STAGE_TILES(K_DST, k, EK, STAGE_EXP_LIMIT, V_DST, v, EV, CAP_V, WITH_V, ROWS, STRIDE, kv_first, kv_step, j0, p.sk)
