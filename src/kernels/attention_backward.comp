#version 450
// Attention backward from the forward's saved log-sum-exp: p_ij = exp(s_ij - lse_i) and
// ds_ij = p_ij (dO_i·v_j - delta_i) are recomputed tile by tile, never stored. WHICH = d q: one
// workgroup per query row, d q_i = scale sum_j ds_ij k_j. WHICH = d k / d v: one workgroup per
// key row of a k/v head, summing over the query rows of every query head that reads it:
// d k_j = scale sum_i ds_ij q_i, d v_j = sum_i p_ij dO_i; WHICH = d k and d v: both from one
// pass over the scores. Invocation t owns output element t (head dims <= 256 = WG). See
// attention_abi.hpp (AttentionBackward).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const uint WHICH = 0u;
layout(constant_id = 2) const uint HAS_POSITION = 0u;
// The head dims, fixed per pipeline: the dot products unroll and their loads overlap.
layout(constant_id = 3) const uint D = 64u;
layout(constant_id = 4) const uint DV = 64u;
const uint GRAD_Q = 0u, GRAD_K = 1u, GRAD_V = 2u, GRAD_KV = 3u;  // GRAD_KV: d k, and d v at binding 10

layout(std430, set = 0, binding = 2) readonly buffer Q { uint q[]; };
layout(std430, set = 0, binding = 3) readonly buffer K { uint k[]; };
layout(std430, set = 0, binding = 4) readonly buffer V { uint v[]; };
layout(std430, set = 0, binding = 5) readonly buffer O { uint o[]; };  // only its lse is read
layout(std430, set = 0, binding = 6) readonly buffer DO { uint dout[]; };
layout(std430, set = 0, binding = 7) readonly buffer Delta { uint delta[]; };
layout(std430, set = 0, binding = 8) readonly buffer Position { uint position_data[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Grad { uint grad[]; };
layout(std430, set = 0, binding = 10) writeonly buffer GradV { uint grad_v[]; };  // GRAD_KV's d v
layout(std430, set = 0, binding = 2) readonly buffer Q4 { vec4 q4[]; };
layout(std430, set = 0, binding = 3) readonly buffer K4 { vec4 k4[]; };
layout(std430, set = 0, binding = 4) readonly buffer V4 { vec4 v4[]; };
layout(std430, set = 0, binding = 6) readonly buffer DO4 { vec4 do4[]; };
#include "attention_common.glsl"

shared float row_a[256];  // d q: q_i; d k / d v: k_j
shared float row_b[256];  // d q: dO_i; d k / d v: v_j
shared float w[WG];       // this tile's ds (d q, d k)
#include "attention_slices.glsl"

float f(uint word) { return uintBitsToFloat(word); }

// Dot products of query row `qrow` with key row `krow`, one side read from row_a/row_b (the
// row this workgroup holds): q_fixed when that row is the query's.
// The varying side is read 16 bytes at a time where the head dim allows.
float dot_q_k(uint qrow, uint krow, bool q_fixed) {
  float s = 0.0f;
  if (D % 4u == 0u) {
    uint at = (q_fixed ? krow : qrow) * D / 4u;
    for (uint x = 0u; x < D; x += 4u)
      s += dot(vec4(row_a[x], row_a[x + 1u], row_a[x + 2u], row_a[x + 3u]), q_fixed ? k4[at + x / 4u] : q4[at + x / 4u]);
  } else {
    for (uint x = 0u; x < D; ++x) s += q_fixed ? row_a[x] * f(k[krow * D + x]) : f(q[qrow * D + x]) * row_a[x];
  }
  return s * p.scale;
}
float dot_do_v(uint qrow, uint krow, bool q_fixed) {
  float s = 0.0f;
  if (DV % 4u == 0u) {
    uint at = (q_fixed ? krow : qrow) * DV / 4u;
    for (uint x = 0u; x < DV; x += 4u)
      s += dot(vec4(row_b[x], row_b[x + 1u], row_b[x + 2u], row_b[x + 3u]), q_fixed ? v4[at + x / 4u] : do4[at + x / 4u]);
  } else {
    for (uint x = 0u; x < DV; ++x) s += q_fixed ? row_b[x] * f(v[krow * DV + x]) : f(dout[qrow * DV + x]) * row_b[x];
  }
  return s;
}

void grad_q(uint t) {
  const int base = query_base();
  uint bh = gl_WorkGroupID.y, h = bh % p.hq, b = bh / p.hq;
  uint kv = b * p.hkv + h / (p.hq / p.hkv);
  const uint kv_first = first_row(kv, p.hkv, p.sk), kv_step = row_step(p.hkv);
  for (uint i = gl_WorkGroupID.x; i < p.sq; i += gl_NumWorkGroups.x) {
    uint row = first_row(bh, p.hq, p.sq) + i * row_step(p.hq);
    for (uint x = t; x < D; x += WG) row_a[x] = f(q[row * D + x]);
    for (uint x = t; x < DV; x += WG) row_b[x] = f(dout[row * DV + x]);
    barrier();
    float lse = f(o[p.lse_offset + row]), dl = f(delta[row]);
    uint lo, hi;
    visible_keys(i, base, lo, hi);
    float acc = 0.0f;
    for (uint j0 = lo; j0 < hi; j0 += WG) {
      uint j = j0 + t;
      float ds = 0.0f;
      if (j < hi) {
        uint krow = kv_first + j * kv_step;
        float pr = exp_diff(dot_q_k(row, krow, true), lse);
        ds = pr * (dot_do_v(row, krow, true) - dl);
      }
      w[t] = ds;
      barrier();
      uint slices = WG / D, x = t % D;
      if (t / D < slices) {
        uint n = min(WG, hi - j0);
        uint at = (kv_first + j0 * kv_step) * D + x, step = kv_step * D, jj = t / D;
        float b2 = 0.0f, c2 = 0.0f, e2 = 0.0f;  // four chains: four loads in flight
        for (; jj + 3u * slices < n; jj += 4u * slices) {
          acc += w[jj] * f(k[at + jj * step]);
          b2 += w[jj + slices] * f(k[at + (jj + slices) * step]);
          c2 += w[jj + 2u * slices] * f(k[at + (jj + 2u * slices) * step]);
          e2 += w[jj + 3u * slices] * f(k[at + (jj + 3u * slices) * step]);
        }
        for (; jj < n; jj += slices) acc += w[jj] * f(k[at + jj * step]);
        acc += b2 + c2 + e2;
      }
      barrier();
    }
    float total = merge_slices(t, D, acc);
    if (t < D) grad[row * D + t] = floatBitsToUint(total * p.scale);
  }
}

// GRAD_K / GRAD_KV: w holds the tile's ds; GRAD_V / GRAD_KV: p_tile holds its p.
shared float p_tile[WG];

// This invocation's share of sum_ii weight_ii * row(i0 + ii)[x] over the tile's n query rows:
// d v (of_v) sums rows of d out (Dv long) weighted by p, d k rows of q (D long) weighted by ds.
// Slice t / dim of WG / dim, element x = t % dim; four loads in flight.
float sum_rows(bool of_v, uint q_first, uint q_step, uint i0, uint n, uint t) {
  uint dim = of_v ? DV : D, slices = WG / dim;
  if (t / dim >= slices) return 0.0f;
  uint at = (q_first + i0 * q_step) * dim + t % dim, step = q_step * dim, ii = t / dim;
#define TERM(r) ((of_v ? p_tile[r] : w[r]) * (of_v ? f(dout[at + (r) * step]) : f(q[at + (r) * step])))
  float a = 0.0f, b2 = 0.0f, c2 = 0.0f, e2 = 0.0f;
  for (; ii + 3u * slices < n; ii += 4u * slices) {
    a += TERM(ii);
    b2 += TERM(ii + slices);
    c2 += TERM(ii + 2u * slices);
    e2 += TERM(ii + 3u * slices);
  }
  for (; ii < n; ii += slices) a += TERM(ii);
#undef TERM
  return a + (b2 + c2 + e2);
}

void grad_kv(uint t) {
  const int base = query_base();
  const bool with_k = WHICH != GRAD_V, with_v = WHICH != GRAD_K;
  uint kv = gl_WorkGroupID.y, hk = kv % p.hkv, b = kv / p.hkv, group = p.hq / p.hkv;
  const uint q_step = row_step(p.hq);
  for (uint j = gl_WorkGroupID.x; j < p.sk; j += gl_NumWorkGroups.x) {
    uint krow = first_row(kv, p.hkv, p.sk) + j * row_step(p.hkv);
    for (uint x = t; x < D; x += WG) row_a[x] = f(k[krow * D + x]);
    for (uint x = t; x < DV; x += WG) row_b[x] = f(v[krow * DV + x]);
    barrier();
    // Causal: query i sees key j only when base + i >= j.
    uint first = p.causal != 0u ? uint(clamp(int(j) - base, 0, int(p.sq))) : 0u;
    float acc_k = 0.0f, acc_v = 0.0f;
    for (uint g = 0u; g < group; ++g) {
      uint q_first = first_row(b * p.hq + hk * group + g, p.hq, p.sq);
      for (uint i0 = first; i0 < p.sq; i0 += WG) {
        uint i = i0 + t;
        float pr = 0.0f, ds = 0.0f;
        uint lo = 0u, hi = 0u;
        if (i < p.sq) visible_keys(i, base, lo, hi);
        if (i < p.sq && j >= lo && j < hi) {
          uint row = q_first + i * q_step;
          pr = exp_diff(dot_q_k(row, krow, false), f(o[p.lse_offset + row]));
          if (with_k) ds = pr * (dot_do_v(row, krow, false) - f(delta[row]));
        }
        if (with_k) w[t] = ds;
        if (with_v) p_tile[t] = pr;
        barrier();
        uint n = min(WG, p.sq - i0);
        if (with_k) acc_k += sum_rows(false, q_first, q_step, i0, n, t);
        if (with_v) acc_v += sum_rows(true, q_first, q_step, i0, n, t);
        barrier();
      }
    }
    if (with_k) {
      float total = merge_slices(t, D, acc_k);
      if (t < D) grad[krow * D + t] = floatBitsToUint(total * p.scale);
    }
    if (with_v) {
      float total = merge_slices(t, DV, acc_v);
      if (t < DV) {
        if (WHICH == GRAD_KV) grad_v[krow * DV + t] = floatBitsToUint(total);
        else grad[krow * DV + t] = floatBitsToUint(total);
      }
    }
  }
}

void main() {
  if (WHICH == GRAD_Q) grad_q(gl_LocalInvocationID.x);
  else grad_kv(gl_LocalInvocationID.x);
}
