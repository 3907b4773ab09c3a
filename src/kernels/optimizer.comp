#version 450
// One optimizer step for one parameter, in place, elementwise (torch.optim semantics):
//   g = grad * grad_scale * clip_scale, lr = hyper.lr * lr_scale
//   SGD:   g += wd p; if momentum: buf = momentum buf + g, g = nesterov ? g + momentum buf : buf;
//          p -= lr g                                        (torch.optim.SGD, dampening 0)
//   Adam:  g += wd p; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//          p -= (lr / bias1) m / (sqrt(v) / sqrt(bias2) + eps)     (torch.optim.Adam)
//   AdamW: p *= 1 - lr wd, then Adam without the wd term      (torch.optim.AdamW)
// The Adam step is written in torch's order of operations (step size lr/bias1, denominator
// sqrt(v)/sqrt(bias2) + eps) so that f32 results track PyTorch's.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint ALGO = 0u;
layout(constant_id = 2) const uint MOMENTUM = 0u;  // SGD: momentum != 0
layout(constant_id = 3) const uint NESTEROV = 0u;  // SGD
layout(constant_id = 4) const uint ZERO_GRAD = 0u; // clear the gradient (accumulation buffers)
const uint OPT_SGD = 0u, OPT_ADAM = 1u, OPT_ADAMW = 2u;

struct OptimizerParams { uint n; float lr_scale, grad_scale, weight_decay, momentum, beta1, beta2, eps; };
struct Hyper { float lr, bias1, bias2, clip_scale; uint apply, pad0, pad1, pad2; };
PARAMS_BLOCK { OptimizerParams p; };
layout(std430, set = 0, binding = 2) buffer Param { float param[]; };
layout(std430, set = 0, binding = 3) buffer Grad { float grad[]; };
layout(std430, set = 0, binding = 4) buffer State1 { float state1[]; };  // SGD momentum buffer / Adam m
layout(std430, set = 0, binding = 5) buffer State2 { float state2[]; };  // Adam v
layout(std430, set = 0, binding = 6) readonly buffer HyperBlock { Hyper h; };

void main() {
  if (h.apply == 0u) return;  // a gradient-accumulation step: leave everything as is
  float lr = h.lr * p.lr_scale;
  float gscale = p.grad_scale * h.clip_scale;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += gl_NumWorkGroups.x * WG) {
    float w = param[i];
    float g = grad[i] * gscale;
    if (ALGO == OPT_SGD) {
      if (p.weight_decay != 0.0f) g += p.weight_decay * w;
      if (MOMENTUM != 0u) {
        float buf = p.momentum * state1[i] + g;
        state1[i] = buf;
        g = NESTEROV != 0u ? g + p.momentum * buf : buf;
      }
      w -= lr * g;
    } else {
      if (ALGO == OPT_ADAMW) w *= 1.0f - lr * p.weight_decay;
      else if (p.weight_decay != 0.0f) g += p.weight_decay * w;
      float m = p.beta1 * state1[i] + (1.0f - p.beta1) * g;
      float v = p.beta2 * state2[i] + (1.0f - p.beta2) * (g * g);
      state1[i] = m;
      state2[i] = v;
      float denom = sqrt(v) / sqrt(h.bias2) + p.eps;
      w -= (lr / h.bias1) * (m / denom);
    }
    param[i] = w;
    if (ZERO_GRAD != 0u) grad[i] = 0.0f;
  }
}
