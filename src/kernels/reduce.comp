#version 450
// Reduce: sum / max / argmax over a set of axes, of a map of one or two inputs. One workgroup per
// output element; each invocation folds a strided share of the reduced elements (16 bytes at a
// time where they are contiguous), then the workgroup combines the partials in shared memory.
// With PER_INVOCATION (short reductions: a gradient summed over a batch of 2, a pooling window),
// each invocation folds a whole output alone, in order, with no shared memory or barrier.
#extension GL_GOOGLE_include_directive : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"

layout(constant_id = 1) const uint RED_OP = 0u;
layout(constant_id = 2) const uint MAP = 0u;
layout(constant_id = 3) const bool PER_INVOCATION = false;
const uint RED_SUM = 0u, RED_MAX = 1u, RED_ARGMAX = 2u;
const uint MAP_NONE = 0u, MAP_SQDIFF = 1u, MAP_BCE = 2u, MAP_BCE_LOGITS = 3u, MAP_SQUARE = 4u, MAP_MUL = 5u, MAP_ABS = 6u;

struct ReduceParams {
  uint n_out, n_red, kept_rank, red_rank;
  float scale;
  uint out_offset;
  uint pad[2];
  uint kept_shape[8], kept_stride[8];
  uint red_shape[8], red_stride[8];
};
PARAMS_BLOCK { ReduceParams p; };
layout(std430, set = 0, binding = 2) readonly buffer InA { uint a_data[]; };
layout(std430, set = 0, binding = 3) readonly buffer InB { uint b_data[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Out { uint out_data[]; };
layout(std430, set = 0, binding = 2) readonly buffer InA4 { vec4 a4[]; };
layout(std430, set = 0, binding = 3) readonly buffer InB4 { vec4 b4[]; };

shared uint wg_index[WG];  // argmax: the index of each partial (values live in wg_scratch)

// log(1 - a) without the rounding of 1 - a for small a.
float log1m(float a) { return a < 0.5f ? log1p_p(-a) : log_p(1.0f - a); }

const bool READS_B = MAP != MAP_NONE && MAP != MAP_SQUARE && MAP != MAP_ABS;

float map_of(float a, float b) {
  if (MAP == MAP_NONE) return a;
  if (MAP == MAP_SQUARE) return a * a;
  if (MAP == MAP_ABS) return abs(a);
  if (MAP == MAP_SQDIFF) return (a - b) * (a - b);
  if (MAP == MAP_MUL) return a * b;
  if (MAP == MAP_BCE) return -(b * max(log_p(a), -100.0f) + (1.0f - b) * max(log1m(a), -100.0f));
  return max(a, 0.0f) - a * b + log1p_p(exp_p(-abs(a)));  // MAP_BCE_LOGITS
}

float map_value(uint off) {
  return map_of(uintBitsToFloat(a_data[off]), READS_B ? uintBitsToFloat(b_data[off]) : 0.0f);
}

// The map of four adjacent elements, element 4q (16-byte loads; sums and maxima only).
vec4 map_value4(uint q) {
  vec4 a = a4[q], b = READS_B ? b4[q] : vec4(0.0f), r;
  for (uint k = 0u; k < 4u; ++k) r[k] = map_of(a[k], b[k]);
  return r;
}

// Is (v, i) a better argmax candidate than (bv, bi)? NaN beats numbers; ties go to the smaller index.
bool argmax_better(float v, uint i, float bv, uint bi) {
  bool vn = is_nan(v), bn = is_nan(bv);
  if (vn != bn) return vn;
  if (vn || v == bv) return i < bi;
  return v > bv;
}

// One output a whole invocation folds: element by element, in order (ties of argmax go to the
// first index by argmax_better's rule all the same).
void fold_alone() {
  for (uint o = gl_GlobalInvocationID.x; o < p.n_out; o += gl_NumWorkGroups.x * WG) {
    uint base;
    STRIDED_OFFSET(base, o, p.kept_rank, p.kept_shape, p.kept_stride)
    float s = 0.0f, c = 0.0f, best = -F_INF;
    uint best_i = 0xffffffffu;
    for (uint r = 0u; r < p.n_red; ++r) {
      uint off;
      STRIDED_OFFSET(off, r, p.red_rank, p.red_shape, p.red_stride)
      float v = map_value(base + off);
      if (RED_OP == RED_SUM) kahan_add(s, c, v);
      else if (RED_OP == RED_MAX) best = max_nan(best, v);
      else if (best_i == 0xffffffffu || argmax_better(v, r, best, best_i)) { best = v; best_i = r; }
    }
    out_data[p.out_offset + o] = RED_OP == RED_SUM ? floatBitsToUint(p.scale * (s - c))
                                 : RED_OP == RED_MAX ? floatBitsToUint(best) : best_i;
  }
}

void main() {
  if (PER_INVOCATION) {
    fold_alone();
    return;
  }
  uint t = gl_LocalInvocationID.x;
  for (uint o = gl_WorkGroupID.x; o < p.n_out; o += gl_NumWorkGroups.x) {
    uint base;
    STRIDED_OFFSET(base, o, p.kept_rank, p.kept_shape, p.kept_stride)
    float s = 0.0f, c = 0.0f;   // sum and its Kahan compensation
    float best = -F_INF;        // max / argmax value
    uint best_i = 0xffffffffu;  // argmax index (none yet)
    // A contiguous run of whole 16-byte words (a row of logits): four lanes, four sums or maxima
    // per invocation, so that far more loads are in flight than one element at a time allows.
    const bool runs4 = RED_OP != RED_ARGMAX && p.red_rank == 1u && p.red_stride[0] == 1u && p.n_red % 4u == 0u && base % 4u == 0u;
    if (runs4) {
      vec4 s4 = vec4(0.0f), c4 = vec4(0.0f), best4 = vec4(-F_INF);
#define MN_FOLD4(v)                                                        \
  if (RED_OP == RED_SUM)                                                   \
    for (uint k = 0u; k < 4u; ++k) kahan_add(s4[k], c4[k], v[k]);          \
  else                                                                     \
    for (uint k = 0u; k < 4u; ++k) best4[k] = max_nan(best4[k], v[k]);
      // Four words loaded before any is folded (in the same order as one at a time): a long row
      // (49152 logits) was bound by one load in flight per invocation.
      const uint n4 = p.n_red / 4u, at = base / 4u;
      uint q = t;
      for (; q + 3u * WG < n4; q += 4u * WG) {
        vec4 v0 = map_value4(at + q), v1 = map_value4(at + q + WG), v2 = map_value4(at + q + 2u * WG),
             v3 = map_value4(at + q + 3u * WG);
        MN_FOLD4(v0) MN_FOLD4(v1) MN_FOLD4(v2) MN_FOLD4(v3)
      }
      for (; q < n4; q += WG) {
        vec4 v = map_value4(at + q);
        MN_FOLD4(v)
      }
#undef MN_FOLD4
      s = (s4.x - c4.x) + (s4.y - c4.y) + ((s4.z - c4.z) + (s4.w - c4.w));
      best = max_nan(max_nan(best4.x, best4.y), max_nan(best4.z, best4.w));
    }
    for (uint r = runs4 ? p.n_red : t; r < p.n_red; r += WG) {
      uint off;
      STRIDED_OFFSET(off, r, p.red_rank, p.red_shape, p.red_stride)
      float v = map_value(base + off);
      if (RED_OP == RED_SUM) kahan_add(s, c, v);
      else if (RED_OP == RED_MAX) best = max_nan(best, v);
      else if (best_i == 0xffffffffu || argmax_better(v, r, best, best_i)) { best = v; best_i = r; }
    }
    uint result;  // the output word: f32 bits, or the i32 index for argmax
    if (RED_OP == RED_SUM) {
      result = floatBitsToUint(p.scale * wg_sum(s));
    } else if (RED_OP == RED_MAX) {
      result = floatBitsToUint(wg_max(best));
    } else {
      wg_scratch[t] = best;
      wg_index[t] = best_i;
      barrier();
      for (uint h = WG / 2u; h > 0u; h >>= 1u) {
        if (t < h && wg_index[t + h] != 0xffffffffu &&
            (wg_index[t] == 0xffffffffu || argmax_better(wg_scratch[t + h], wg_index[t + h], wg_scratch[t], wg_index[t]))) {
          wg_scratch[t] = wg_scratch[t + h];
          wg_index[t] = wg_index[t + h];
        }
        barrier();
      }
      result = wg_index[0];
      barrier();
    }
    if (t == 0u) out_data[p.out_offset + o] = result;
  }
}
