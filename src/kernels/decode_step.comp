#version 450
// A Llama-family decoding step (one token, batch 1) as ONE persistent dispatch: its workgroups
// stay resident and walk every layer's phases in order, meeting at a grid barrier (a device
// counter) between phases instead of a pipeline barrier between dispatches (4 µs each on an
// H200, a third of a small model's step; docs/performance.md, "Persistent decoding"). The
// runtime (runtime/persistent_decode.cpp) picks a grid that its co-residency probe found all
// resident, and every wait is bounded: a wait that runs out reports STATUS_GRID_TIMEOUT and every
// workgroup returns, so the step is redone by the ordinary program instead of hanging.
//
// Phases of a layer (a subgroup two output rows at a time; every workgroup first stages the
// product's input vector in shared memory — x·w where a norm comes first, its 1/σ applied to the
// sums; each subgroup's first weight loads of a phase are issued before the barrier ahead of it):
//   1. q, k, v = rms_norm(x)·W (+ bias); rotary on q and k (row pairs i, i + D/2 in one subgroup);
//      q to scratch, k and v into the caches' row at `position`
//   2. attention: a subgroup a (query head, block of keys), online softmax; the blocks' partial
//      sums, maxima and denominators to scratch
//   3. the blocks combined while staged; x += o·a (+ bias)
//   4. h = silu(gate) * up of rms_norm(x) (+ biases)
//   5. x += down·h (+ bias)
// then logits = lm_head·rms_norm(x). Layer 0 reads x from the embedding row of the token.
//
// Every tensor is reached through the address table (binding 2; layout: decode_step_abi.hpp):
// weights as plain loads, what this step writes and another workgroup reads (x, q, the caches,
// the partials, h) `coherent`, past each SM's L1, which keeps stale lines otherwise.
// Spec: 1 SUBGROUP (the device's size), 2 STAGE (floats of the staged vector, a multiple of 4),
// 3 HEAD_DIM (the model's, a multiple of 4), 4 F16_WEIGHTS (1: the weight matrices are
// decode_weights.comp's f16 rows, each with its exponent; 0: f32).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define MN_WORKGROUP_REDUCE
#include "common.glsl"
#include "stage_scale.glsl"

layout(constant_id = 1) const uint SUBGROUP = 32u;
layout(constant_id = 2) const uint STAGE = 2048u;
layout(constant_id = 3) const uint HEAD_DIM = 64u;
layout(constant_id = 4) const uint F16_WEIGHTS = 0u;

// decode_step_abi.hpp mirrors these.
const uint STATUS_GRID_TIMEOUT = 3u;
const uint FLAG_PROBE = 1u, FLAG_ONE_SHORT = 2u;
// Diagnostics (MEGANEURA_PERSISTENT_DIAG; wrong results): phases skipped, or barriers that do not wait.
const uint SKIP_QKV = 16u, SKIP_ATTENTION = 32u, SKIP_O = 64u, SKIP_GATE_UP = 128u, SKIP_DOWN = 256u,
           SKIP_HEAD = 512u, SKIP_WAITS = 1024u;
const uint T_EMBED = 0u, T_FINAL_NORM = 1u, T_LM_HEAD = 2u, T_COS = 3u, T_SIN = 4u, T_X = 5u, T_Q = 6u,
           T_PARTIAL = 7u, T_H = 8u, T_LOGITS = 9u, GLOBALS = 10u;
const uint L_LN1 = 0u, L_WQ = 1u, L_WK = 2u, L_WV = 3u, L_BQ = 4u, L_BK = 5u, L_BV = 6u, L_WO = 7u, L_BO = 8u,
           L_LN2 = 9u, L_WGATE = 10u, L_WUP = 11u, L_WDOWN = 12u, L_BGATE = 13u, L_BUP = 14u, L_BDOWN = 15u,
           L_KCACHE = 16u, L_VCACHE = 17u, LAYER_ENTRIES = 18u;

PARAMS_BLOCK {
  uint hidden, heads, kv_heads, head_dim, ffn, vocab, layers, window;
  uint slots, flags, spin_limit, pad2;
  float eps, scale, pad0, pad1;
} p;
layout(std430, set = 0, binding = 2) readonly buffer Table { uvec2 table[]; };
layout(std430, set = 0, binding = 3) volatile buffer Sync { uint arrived, aborted; } sync;
layout(std430, set = 0, binding = 4) readonly buffer Step { int token, position; } step;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Rows4 { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Vals { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) coherent buffer Live4 { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer Live { float v[]; };

const uint ATTN_BLOCKS = 16u;  // blocks a head's keys split into at most (kDecodeAttnBlocks)
const uint WARPS = WG / SUBGROUP;
const uint DS = (HEAD_DIM + SUBGROUP - 1u) / SUBGROUP;  // head dims a lane accumulates
shared vec4 staged[STAGE / 4u];
shared float q_rows[WARPS][HEAD_DIM];
shared float probs[WARPS][SUBGROUP];
shared bool grid_ok;

uint lane, warp, first_warp, all_warps;

bool runs(uint skip_flag) { return (p.flags & skip_flag) == 0u; }

uvec2 global_at(uint e) { return table[e]; }
uvec2 layer_at(uint l, uint e) { return table[GLOBALS + l * LAYER_ENTRIES + e]; }
bool present(uvec2 a) { return a != uvec2(0u); }
float bias_of(uvec2 b, uint row) { return present(b) ? Vals(b).v[row] : 0.0f; }

// ---- the grid barrier ------------------------------------------------------------------------
// arrive() after a phase's writes, then the next phase's first weight loads, then wait(): the
// loads (which depend on no phase) are on their way while the workgroup waits, and the memory
// barrier before the count does not wait for them.
uint barriers_passed = 0u;

void arrive() {
  ++barriers_passed;
  memoryBarrier();  // this workgroup's writes before its count
  barrier();
  if (gl_LocalInvocationIndex == 0u && gl_NumWorkGroups.x > 1u) {
    memoryBarrier();  // and, through the workgroup barrier, every invocation's
    atomicAdd(sync.arrived, 1u);
  }
}

// Every workgroup arrived: their writes are visible. False when the wait ran out (reported) or
// another workgroup's did: the caller returns.
bool wait() {
  const bool one_short = (p.flags & FLAG_ONE_SHORT) != 0u;  // a test's wait that cannot be met
  if ((gl_NumWorkGroups.x == 1u && !one_short) || !runs(SKIP_WAITS)) return true;
  if (gl_LocalInvocationIndex == 0u) {
    const uint target = barriers_passed * gl_NumWorkGroups.x + (one_short ? 1u : 0u);
    uint spins = 0u;
    bool aborted = false;
    while (sync.arrived < target && !aborted && spins < p.spin_limit)  // coherent loads: no atomics
      if ((++spins & 255u) == 0u) aborted = sync.aborted != 0u;
    // Checked again after the loop: a driver may end a long loop early (llvmpipe after 65,535).
    const uint seen = sync.arrived;
    const bool met = seen >= target;
    if (!met && atomicExchange(sync.aborted, 1u) == 0u)
      report(STATUS_GRID_TIMEOUT, barriers_passed, int(seen), target);
    grid_ok = met;
  }
  barrier();
  // Each invocation's own fence: no load after it may be served before the wait ended (a
  // workgroup barrier orders shared memory only: a compiler may move buffer loads above it).
  memoryBarrier();
  return grid_ok;
}

// ---- staging the product's input vector --------------------------------------------------------
// staged = src[offset ..+ n] * w, one pass; returns the norm's 1/sqrt(mean(src²) + eps), which the
// products apply to their sums (x·w is staged, 1/σ applied at the store). Layer 0 reads the
// embedding row (a weight), and the first workgroup keeps it as x.
float stage_norm(uvec2 src, uint offset4, bool from_weights, uvec2 w, uint n, bool keep_as_x) {
  const uint t = gl_LocalInvocationID.x, n4 = n / 4u;
  float ss = 0.0f;
  for (uint i = t; i < n4; i += WG) {
    const vec4 g = Rows4(w).v[i];
    const vec4 v = from_weights ? Rows4(src).v[offset4 + i] : Live4(src).v[offset4 + i];
    if (keep_as_x) Live4(global_at(T_X)).v[i] = v;
    staged[i] = v * g;
    ss += dot(v, v);
  }
  return norm_rstd(wg_sum(ss), n, p.eps);  // wg_sum's barriers also publish `staged`
}

void stage_copy(uvec2 src, uint n) {
  for (uint i = gl_LocalInvocationID.x; i < n / 4u; i += WG) staged[i] = Live4(src).v[i];
  barrier();
}

// ---- products: a subgroup two rows of [N, K] (K % 4 == 0) at a time --------------------------
// Each lane keeps U 16-byte loads a row on their way (4 k of f32 weights, 8 of f16). A subgroup
// loads its first item's first U before the grid barrier that precedes the phase (they do not
// depend on it), and each item's next item's while it finishes this one. A row of f16 weights
// starts with 16 bytes holding its exponent (decode_weights.comp), loaded with its first U.
const uint U = 4u;  // loads a lane keeps on their way a row
struct Rows2 {
  uvec2 wa, wb;
  uint ra, rb;
  bool b;  // the second row exists
};
struct Loads {
  vec4 a[U], b[U];
  int ea, eb;  // F16_WEIGHTS: the rows' exponents (load_first's)
};
const uint P_QKV = 0u, P_O = 1u, P_GATE_UP = 2u, P_DOWN = 3u, P_HEAD = 4u;

uint phase_k4s(uint ph) {
  if (ph == P_O) return p.heads * HEAD_DIM / 4u;
  if (ph == P_DOWN) return p.ffn / 4u;
  return p.hidden / 4u;
}
// A weight row's 16-byte loads (chunks): k / 4 of f32, ceil(k / 8) of f16 after the exponent's.
uint row_chunks(uint k4s) { return F16_WEIGHTS != 0u ? (k4s + 1u) / 2u : k4s; }
uint row_stride(uint chunks) { return F16_WEIGHTS != 0u ? chunks + 1u : chunks; }
// Pairs of the q and k rotary halves, then v rows two by two.
uint qkv_items() { return (p.heads + p.kv_heads) * (HEAD_DIM / 2u) + (p.kv_heads * HEAD_DIM + 1u) / 2u; }
uint phase_items(uint ph) {
  if (ph == P_QKV) return qkv_items();
  if (ph == P_GATE_UP) return p.ffn;
  return ((ph == P_HEAD ? p.vocab : p.hidden) + 1u) / 2u;
}
Rows2 adjacent(uvec2 w, uint item, uint n) { return Rows2(w, w, 2u * item, 2u * item + 1u, 2u * item + 1u < n); }
Rows2 phase_rows(uint ph, uint l, uint item) {
  if (ph == P_GATE_UP) return Rows2(layer_at(l, L_WGATE), layer_at(l, L_WUP), item, item, true);
  if (ph == P_O) return adjacent(layer_at(l, L_WO), item, p.hidden);
  if (ph == P_DOWN) return adjacent(layer_at(l, L_WDOWN), item, p.hidden);
  if (ph == P_HEAD) return adjacent(global_at(T_LM_HEAD), item, p.vocab);
  const uint half_d = HEAD_DIM / 2u, q_pairs = p.heads * half_d, k_pairs = p.kv_heads * half_d;
  if (item >= q_pairs + k_pairs) return adjacent(layer_at(l, L_WV), item - q_pairs - k_pairs, p.kv_heads * HEAD_DIM);
  const bool is_q = item < q_pairs;
  const uint j = is_q ? item : item - q_pairs, r0 = (j / half_d) * HEAD_DIM + j % half_d;
  const uvec2 w = layer_at(l, is_q ? L_WQ : L_WK);
  return Rows2(w, w, r0, r0 + half_d, true);
}

Loads load_at(Rows2 r, uint chunks, uint k0);
Loads load_first(Rows2 r, uint chunks) {
  Loads f = load_at(r, chunks, lane);
  if (F16_WEIGHTS != 0u) {
    const uint stride = row_stride(chunks);
    f.ea = floatBitsToInt(Rows4(r.wa).v[r.ra * stride].x);
    f.eb = r.b ? floatBitsToInt(Rows4(r.wb).v[r.rb * stride].x) : 0;
  }
  return f;
}
// This subgroup's first loads of phase `ph` (none where it has no item there).
Loads prefetch(uint ph, uint l) {
  if (first_warp < phase_items(ph)) return load_first(phase_rows(ph, l, first_warp), row_chunks(phase_k4s(ph)));
  Loads none;
  for (uint i = 0u; i < U; ++i) none.a[i] = none.b[i] = vec4(0.0f);
  none.ea = none.eb = 0;
  return none;
}

Loads load_at(Rows2 r, uint chunks, uint k0) {
  const uint stride = row_stride(chunks), first = F16_WEIGHTS != 0u ? 1u : 0u;
  Loads f;
  for (uint i = 0u; i < U; ++i) {
    const uint c = k0 + i * SUBGROUP;
    f.a[i] = c < chunks ? Rows4(r.wa).v[r.ra * stride + first + c] : vec4(0.0f);
    f.b[i] = c < chunks && r.b ? Rows4(r.wb).v[r.rb * stride + first + c] : vec4(0.0f);
  }
  f.ea = f.eb = 0;
  return f;
}
// Chunk c of f16 weights (8 k, its bits in `w`) with the staged vector (k4s vec4s; the second
// half of the last chunk is padding where k % 8 == 4).
float dot8(uint c, vec4 w, uint k4s) {
  const uvec4 h = floatBitsToUint(w);
  const float lo = dot(staged[2u * c], vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y)));
  return 2u * c + 1u < k4s ? lo + dot(staged[2u * c + 1u], vec4(unpackHalf2x16(h.z), unpackHalf2x16(h.w))) : lo;
}
void consume(inout vec2 acc, Loads f, uint k0, uint chunks, uint k4s) {
  for (uint i = 0u; i < U; ++i) {
    const uint c = k0 + i * SUBGROUP;
    if (c >= chunks) continue;
    if (F16_WEIGHTS != 0u)
      acc += vec2(dot8(c, f.a[i], k4s), dot8(c, f.b[i], k4s));
    else
      acc += vec2(dot(staged[c], f.a[i]), dot(staged[c], f.b[i]));
  }
}

// Both rows' dot products with `staged` (k4s vec4s), in every lane; `f`: their first loads. Each
// batch of loads is issued before the one before it is used: two batches on their way.
vec2 dot2(Rows2 r, uint k4s, Loads f) {
  const uint chunks = row_chunks(k4s);
  vec2 acc = vec2(0.0f);
  uint k0 = lane;
  for (; k0 + U * SUBGROUP < chunks; k0 += U * SUBGROUP) {
    const Loads next = load_at(r, chunks, k0 + U * SUBGROUP);
    consume(acc, f, k0, chunks, k4s);
    f = next;
  }
  consume(acc, f, k0, chunks, k4s);
  return vec2(subgroupAdd(acc.x), subgroupAdd(acc.y));
}

// ---- the phases ----------------------------------------------------------------------------------
// q (after rotary) to scratch, k (after rotary) and v into the caches' row at `position`.
void qkv_store(uint l, uint item, vec2 s, uint position) {
  const uint half_d = HEAD_DIM / 2u, q_pairs = p.heads * half_d, k_pairs = p.kv_heads * half_d;
  const uint cache_row = position * p.kv_heads * HEAD_DIM;
  const Rows2 r = phase_rows(P_QKV, l, item);
  if (item >= q_pairs + k_pairs) {
    const uvec2 b = layer_at(l, L_BV);
    Live v = Live(layer_at(l, L_VCACHE));
    v.v[cache_row + r.ra] = s.x + bias_of(b, r.ra);
    if (r.b) v.v[cache_row + r.rb] = s.y + bias_of(b, r.rb);
    return;
  }
  const bool is_q = item < q_pairs;
  const uvec2 b = layer_at(l, is_q ? L_BQ : L_BK);
  const vec2 t = s + vec2(bias_of(b, r.ra), bias_of(b, r.rb));
  // rotate_half: out_i = t_i cos_i - t_{i+D/2} sin_i, out_{i+D/2} = t_{i+D/2} cos_{i+D/2} + t_i sin_{i+D/2}
  const uint c = position * HEAD_DIM + r.ra % HEAD_DIM;
  Vals cs = Vals(global_at(T_COS)), sn = Vals(global_at(T_SIN));
  Live dst = Live(is_q ? global_at(T_Q) : layer_at(l, L_KCACHE));
  const uint at = is_q ? 0u : cache_row;
  dst.v[at + r.ra] = t.x * cs.v[c] - t.y * sn.v[c];
  dst.v[at + r.rb] = t.y * cs.v[c + half_d] + t.x * sn.v[c + half_d];
}

// Lane 0's stores of an item's two sums.
void store(uint ph, uint l, uint item, Rows2 r, vec2 s, uint position) {
  if (ph == P_QKV) {
    qkv_store(l, item, s, position);
  } else if (ph == P_GATE_UP) {
    Live h = Live(global_at(T_H));
    h.v[item] = silu_p(s.x + bias_of(layer_at(l, L_BGATE), item)) * (s.y + bias_of(layer_at(l, L_BUP), item));
  } else if (ph == P_HEAD) {
    Live logits = Live(global_at(T_LOGITS));
    logits.v[r.ra] = s.x;
    if (r.b) logits.v[r.rb] = s.y;
  } else {
    Live x = Live(global_at(T_X));
    const uvec2 b = layer_at(l, ph == P_O ? L_BO : L_BDOWN);
    x.v[r.ra] += s.x + bias_of(b, r.ra);
    if (r.b) x.v[r.rb] += s.y + bias_of(b, r.rb);
  }
}

// Phase `ph`'s products over its staged input (`scale`: the norm's 1/σ, else 1) and their stores;
// `f`: the first item's loads, issued before the barrier; each item issues the next one's first.
// (The subgroup operations stay in uniform control flow: only the stores are lane 0's.)
void products(uint ph, uint l, uint position, float scale, Loads f) {
  const uint items = phase_items(ph), k4s = phase_k4s(ph);
  for (uint item = first_warp; item < items; item += all_warps) {
    const Rows2 r = phase_rows(ph, l, item);
    const Loads now = f;
    if (item + all_warps < items) f = load_first(phase_rows(ph, l, item + all_warps), row_chunks(k4s));  // on their way
    vec2 s = dot2(r, k4s, now) * scale;
    if (F16_WEIGHTS != 0u) s = vec2(stage_unscale(s.x, now.ea), stage_unscale(s.y, now.eb));
    if (lane == 0u) store(ph, l, item, r, s, position);
  }
}

// The keys a query at `position` sees, and how they split into blocks of whole subgroup chunks
// (at most attn_blocks a head).
struct KeyBlocks {
  uint lo, chunks, per, blocks;
};
KeyBlocks key_blocks(uint position) {
  KeyBlocks k;
  k.lo = p.window > 0u && position + 1u > p.window ? position + 1u - p.window : 0u;
  k.chunks = (position + 1u - k.lo + SUBGROUP - 1u) / SUBGROUP;
  k.per = (k.chunks + ATTN_BLOCKS - 1u) / ATTN_BLOCKS;
  k.blocks = (k.chunks + k.per - 1u) / k.per;
  return k;
}

void attention_phase(uint l, uint position) {
  const KeyBlocks kb = key_blocks(position);
  const uint D = HEAD_DIM, group = p.heads / p.kv_heads, kvd = p.kv_heads * D;
  Live4 keys = Live4(layer_at(l, L_KCACHE));
  Live values = Live(layer_at(l, L_VCACHE)), q = Live(global_at(T_Q));
  for (uint item = first_warp; item < p.heads * kb.blocks; item += all_warps) {
    const uint h = item / kb.blocks, b = item % kb.blocks, head_at = (h / group) * D;
    float q_own[DS];  // this lane's share of q, on its way with the first chunk's K and V
    for (uint i = 0u; i < DS; ++i) q_own[i] = lane + i * SUBGROUP < D ? q.v[h * D + lane + i * SUBGROUP] : 0.0f;
    float m = -F_INF, denominator = 0.0f, acc[DS];
    for (uint i = 0u; i < DS; ++i) acc[i] = 0.0f;
    const uint c_end = min((b + 1u) * kb.per, kb.chunks);
    for (uint c = b * kb.per; c < c_end; ++c) {
      const uint first_key = kb.lo + c * SUBGROUP, key = first_key + lane;
      const bool live = key <= position;
      const uint n = min(SUBGROUP, position + 1u - first_key);
      // The chunk's K row (a key a lane) and V rows (all of them, a dim a lane), issued together.
      const uint k_at = (key * kvd + head_at) / 4u;
      vec4 k_row[HEAD_DIM / 4u];
      for (uint d4 = 0u; d4 < D / 4u; ++d4) k_row[d4] = live ? keys.v[k_at + d4] : vec4(0.0f);
      float v[SUBGROUP][DS];
      for (uint u = 0u; u < SUBGROUP; ++u)
        for (uint i = 0u; i < DS; ++i) {
          const uint d = lane + i * SUBGROUP;
          v[u][i] = u < n && d < D ? values.v[(first_key + u) * kvd + head_at + d] : 0.0f;
        }
      if (c == b * kb.per) {  // q into shared memory, for every lane's dot product
        for (uint i = 0u; i < DS; ++i)
          if (lane + i * SUBGROUP < D) q_rows[warp][lane + i * SUBGROUP] = q_own[i];
        subgroupMemoryBarrierShared();
        subgroupBarrier();
      }
      float d_acc = 0.0f;
      for (uint d4 = 0u; d4 < D / 4u; ++d4)
        d_acc += dot(k_row[d4], vec4(q_rows[warp][4u * d4], q_rows[warp][4u * d4 + 1u], q_rows[warp][4u * d4 + 2u],
                                     q_rows[warp][4u * d4 + 3u]));
      const float s = live ? d_acc * p.scale : -F_INF;
      const float m_new = max(m, subgroupMax(s));  // finite: a chunk's first key is live
      const float fix = exp(m - m_new), pr = live ? exp(s - m_new) : 0.0f;
      denominator = denominator * fix + subgroupAdd(pr);
      probs[warp][lane] = pr;
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint i = 0u; i < DS; ++i) acc[i] *= fix;
      for (uint u = 0u; u < SUBGROUP; ++u) {
        const float pj = u < n ? probs[warp][u] : 0.0f;
        for (uint i = 0u; i < DS; ++i) acc[i] += pj * v[u][i];
      }
      subgroupBarrier();  // probs is rewritten by the next chunk
      m = m_new;
    }
    Live partial = Live(global_at(T_PARTIAL));
    const uint at = (h * ATTN_BLOCKS + b) * (D + 2u);
    for (uint i = 0u; i < DS; ++i)
      if (lane + i * SUBGROUP < D) partial.v[at + lane + i * SUBGROUP] = acc[i];
    if (lane == 0u) {
      partial.v[at + D] = m;
      partial.v[at + D + 1u] = denominator;
    }
  }
}

// staged = attention output: each head's blocks combined (rescaled to the largest maximum).
void stage_attention(uint position) {
  const KeyBlocks kb = key_blocks(position);
  const uint D = HEAD_DIM;
  Live part = Live(global_at(T_PARTIAL));
  for (uint i = gl_LocalInvocationID.x; i < p.heads * D; i += WG) {
    const uint h = i / D, d = i % D, base = h * ATTN_BLOCKS * (D + 2u);
    float m[ATTN_BLOCKS], sums[ATTN_BLOCKS], dens[ATTN_BLOCKS];  // every block's loads on their way at once
    for (uint b = 0u; b < ATTN_BLOCKS; ++b) {
      const uint at = base + b * (D + 2u);
      m[b] = b < kb.blocks ? part.v[at + D] : -F_INF;
      sums[b] = b < kb.blocks ? part.v[at + d] : 0.0f;
      dens[b] = b < kb.blocks ? part.v[at + D + 1u] : 0.0f;
    }
    float top = m[0];
    for (uint b = 1u; b < ATTN_BLOCKS; ++b) top = max(top, m[b]);
    float num = 0.0f, den = 0.0f;
    for (uint b = 0u; b < ATTN_BLOCKS; ++b) {
      const float f = b < kb.blocks ? exp(m[b] - top) : 0.0f;
      num += f * sums[b];
      den += f * dens[b];
    }
    staged[i / 4u][i % 4u] = num / den;
  }
  barrier();
}

void main() {
  if (gl_SubgroupSize != SUBGROUP) {
    if (gl_LocalInvocationIndex == 0u) report(STATUS_SUBGROUP_SIZE, 0xffffffffu, int(gl_SubgroupSize), SUBGROUP);
    return;
  }
  lane = gl_SubgroupInvocationID;
  warp = gl_SubgroupID;
  first_warp = gl_WorkGroupID.x * WARPS + warp;
  all_warps = gl_NumWorkGroups.x * WARPS;
  if ((p.flags & FLAG_PROBE) != 0u) {  // the co-residency probe: one grid barrier
    arrive();
    wait();
    return;
  }
  if (step.token < 0 || uint(step.token) >= p.vocab) {
    if (gl_WorkGroupID.x == 0u && gl_LocalInvocationIndex == 0u)
      report(STATUS_INDEX_OUT_OF_RANGE, 0xffffffffu, step.token, p.vocab);
    return;
  }
  const uint position = uint(step.position);
  Loads f = prefetch(P_QKV, 0u);
  for (uint l = 0u; l < p.layers; ++l) {
    float r = l == 0u ? stage_norm(global_at(T_EMBED), uint(step.token) * (p.hidden / 4u), true, layer_at(0u, L_LN1),
                                   p.hidden, gl_WorkGroupID.x == 0u)
                      : stage_norm(global_at(T_X), 0u, false, layer_at(l, L_LN1), p.hidden, false);
    if (runs(SKIP_QKV)) products(P_QKV, l, position, r, f);
    arrive();
    if (!wait()) return;
    if (runs(SKIP_ATTENTION)) attention_phase(l, position);
    arrive();
    f = prefetch(P_O, l);
    if (!wait()) return;
    if (runs(SKIP_O)) {
      stage_attention(position);
      products(P_O, l, position, 1.0f, f);
    }
    arrive();
    f = prefetch(P_GATE_UP, l);
    if (!wait()) return;
    if (runs(SKIP_GATE_UP)) {
      r = stage_norm(global_at(T_X), 0u, false, layer_at(l, L_LN2), p.hidden, false);
      products(P_GATE_UP, l, position, r, f);
    }
    arrive();
    f = prefetch(P_DOWN, l);
    if (!wait()) return;
    if (runs(SKIP_DOWN)) {
      stage_copy(global_at(T_H), p.ffn);
      products(P_DOWN, l, position, 1.0f, f);
    }
    arrive();
    f = l + 1u < p.layers ? prefetch(P_QKV, l + 1u) : prefetch(P_HEAD, 0u);
    if (!wait()) return;
  }
  if (!runs(SKIP_HEAD)) return;
  const float r = stage_norm(global_at(T_X), 0u, false, global_at(T_FINAL_NORM), p.hidden, false);
  products(P_HEAD, 0u, position, r, f);
}
