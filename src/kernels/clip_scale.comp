#version 450
// Global-norm gradient clipping factor (torch.nn.utils.clip_grad_norm_): from the per-tensor
// sums of squares, norm = sqrt(sum), hyper.clip_scale = min(1, max_norm / (norm + 1e-6)); a NaN
// norm gives a NaN factor, as in PyTorch. Only on steps that apply (hyper.apply != 0). One workgroup.
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

struct ClipParams { uint count; float max_norm; uint pad0, pad1; };
struct Hyper { float lr, bias1, bias2, clip_scale; uint apply, pad0, pad1, pad2; };
PARAMS_BLOCK { ClipParams p; };
layout(std430, set = 0, binding = 2) readonly buffer Sums { float sums[]; };
layout(std430, set = 0, binding = 3) buffer HyperBlock { Hyper h; };

void main() {
  if (gl_WorkGroupID.x != 0u) return;  // uniform per workgroup, so barriers stay valid
  float total;
  ROW_SUM(total, p.count, sums[l_])
  if (gl_LocalInvocationID.x == 0u && h.apply != 0u) {
    float c = p.max_norm / (sqrt(total) + 1e-6f);
    h.clip_scale = (is_nan(c) || c < 1.0f) ? c : 1.0f;
  }
}
