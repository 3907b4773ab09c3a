#version 450
// The scalars of one training step (kernels::Hyper), from the step counters on the device: the
// learning rate of the schedule at optimizer step t, Adam's bias corrections 1 - beta^(t+1),
// whether this micro-step applies the update (gradient accumulation) and clip_scale 1; then the
// counters advance. t and the micro-step count are the counters before this step.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

struct StepParams { uint unused0, unused1, unused2, unused3; };
PARAMS_BLOCK { StepParams p; };
layout(std430, set = 0, binding = 2) buffer Counters { uint micro_steps; uint steps; uint spare0; uint spare1; };
// graph/train_ops.hpp StepValue: lr, schedule, a, b, c, beta1, beta2, accumulate (whole numbers exact)
layout(std430, set = 0, binding = 3) readonly buffer Settings { float lr0; float schedule; float a; float b; float c; float beta1; float beta2; float accumulate; };
layout(std430, set = 0, binding = 4) writeonly buffer HyperBlock {
  float lr; float bias1; float bias2; float clip_scale; uint apply; uint pad0; uint pad1; uint pad2;
};

const uint SCHEDULE_STEP = 1u, SCHEDULE_COSINE = 2u;
const float HALF_PI = 1.5707963267948966;

// x^n by squaring: about 2 log2(n) roundings, where pow() is exp2(n log2 x) and loses n's bits.
float pow_n(float x, uint n) {
  float r = 1.0;
  while (n != 0u) {
    if ((n & 1u) != 0u) r *= x;
    x *= x;
    n >>= 1;
  }
  return r;
}

// A product of two (hi, lo) float pairs, each worth hi + lo (about 44 bits): fma's exact error
// term of hi * hi, plus the cross terms.
vec2 mul_pair(vec2 a, vec2 b) {
  precise float p = a.x * b.x;
  precise float e = fma(a.x, b.x, -p) + (a.x * b.y + a.y * b.x);
  precise float s = p + e;
  return vec2(s, e - (s - p));
}

// 1 - x^n for Adam's bias corrections. In plain f32, x^n near 1 (beta2 = 0.999 for the first
// hundreds of steps) leaves 1 - x^n with few bits: an ulp of 0.994 is 1e-5 of 0.006. The power
// is taken in (hi, lo) pairs, and 1 - hi is exact (Sterbenz) where hi >= 1/2.
float one_minus_pow(float x, uint n) {
  vec2 r = vec2(1.0, 0.0), b = vec2(x, 0.0);
  while (n != 0u) {
    if ((n & 1u) != 0u) r = mul_pair(r, b);
    b = mul_pair(b, b);
    n >>= 1;
  }
  precise float d = 1.0 - r.x;
  return d - r.y;
}

// train.hpp's schedule_factor: StepLR gamma^(t / step_size); Cosine: linear warmup, then
// min + (1 - min) (1 + cos(pi x)) / 2, written cos^2(pi x / 2) = sin^2(pi (1 - x) / 2) so that it
// keeps its relative precision as it nears min.
float schedule_factor(uint t) {
  uint kind = uint(schedule), steps_a = uint(a), steps_b = uint(b);
  if (kind == SCHEDULE_STEP) return pow_n(c, t / max(steps_a, 1u));
  if (kind != SCHEDULE_COSINE) return 1.0;
  if (t < steps_a) return float(t + 1u) / float(steps_a);
  if (steps_b <= steps_a) return 1.0;
  float x = min(1.0, float(t - steps_a) / float(steps_b - steps_a));
  float h = x < 0.5 ? cos(HALF_PI * x) : sin(HALF_PI * (1.0 - x));
  return c + (1.0 - c) * (h * h);
}

void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  uint t = steps;
  lr = lr0 * schedule_factor(t);
  bias1 = one_minus_pow(beta1, t + 1u);
  bias2 = one_minus_pow(beta2, t + 1u);
  clip_scale = 1.0;
  bool applies = (micro_steps + 1u) % max(uint(accumulate), 1u) == 0u;
  apply = applies ? 1u : 0u;
  micro_steps += 1u;
  if (applies) steps += 1u;
}
