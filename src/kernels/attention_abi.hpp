// The attention kernels' part of the contract between lowering and the GLSL kernels
// (kernel_abi.hpp, which includes it, says what every kernel shares): their specialization
// constants, bindings, params blocks and the thresholds that pick among them.
#pragma once
#include <cstdint>

namespace meganeura::kernels {

// ---- Attention --------------------------------------------------------------------------------
// spec 1: HAS_POSITION, 2: D, 3: Dv. Bindings 2: q, 3: k, 4: v, 5: position (i32 [1]; q again when absent),
// 6: out. q [B, Hq, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv] (contiguous; B the product of
// the leading dims), out [B, Hq, Sq, Dv] followed, at element lse_offset, by the log-sum-exp of
// each of the B*Hq*Sq score rows (scaled scores; -inf for a row that sees no key), in the rows'
// order. seq_major: q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D/Dv], out [B, Sq, Hq, Dv]. Query head h
// reads k/v head h / (Hq / Hkv). One workgroup per query row: x = row in [0, Sq), y = b*Hq + h.
// Query i sits at p + i, p = position[0] or Sk - Sq; it sees keys [lo, hi): hi = p + i + 1 when
// causal, else p + Sq with a position, else Sk (clamped to [0, Sk]); lo = p + i + 1 - window
// when window > 0, else 0.
// spec 4 KEY_SPLIT (1): the visible keys of a row split over key_splits workgroups (decoding at
// long contexts, where one workgroup a head would walk them alone): each stores its running max,
// sum and unnormalised output to binding 7 (scratch, [Sq][B*Hq][key_splits][Dv + 2] floats) and
// counts itself in at binding 8 (state, [Sq][B*Hq] uints, zero between dispatches); the last of
// a row's splits to finish combines them in split order and resets the count. Without it,
// bindings 7 and 8 are bound (to the output) but not read.
struct AttentionParams {
  uint32_t hq, hkv, sq, sk, d, dv, causal, lse_offset;
  float scale;
  uint32_t window, seq_major;
  // Attention with KEY_SPLIT (spec 4): workgroups a row (x = row group * key_splits + split),
  // each taking ceil(keys / key_splits) of the row's visible keys, at least split_min_keys.
  uint32_t key_splits, split_min_keys, pad[3];
};
// ---- AttentionBackward -------------------------------------------------------------------------
// spec 1: which gradient (0 d q, 1 d k, 2 d v, 3 d k and d v: AttentionBackward only); spec 2:
// HAS_POSITION, 3: D, 4: Dv. Bindings 2: q, 3: k, 4: v, 5: the forward output (its log-sum-exp
// at lse_offset), 6: d out, 7: delta [B, Hq, Sq] (seq_major [B, Sq, Hq]) = rowsum(d out * out),
// 8: position (q again when absent), 9: the gradient (3: d k), 10: d v for 3 (else a word of
// scratch the call never reads; the tensor-core backward has no binding 10). Visibility as the
// forward's. With p = exp(s - lse), ds = p (d out·v_j - delta): d q_i = scale sum_j ds_ij k_j
// (one workgroup per query row, as the forward); d k_j = scale sum_i ds_ij q_i and
// d v_j = sum_i p_ij d out_i over every query head of k's group (one workgroup per key row:
// x = j in [0, Sk), y = b*Hkv + h).
enum : uint32_t { ATT_GRAD_Q = 0, ATT_GRAD_K, ATT_GRAD_V, ATT_GRAD_KV };
// AttentionCoopNV: the forward's contract and bindings on tensor cores (attention_coop.glsl), for
// D == Dv, D % 16 == 0, D <= 128; spec 1 HAS_POSITION, spec 2 D. Blocks of 128 query rows:
// x = ceil(Sq / 128), y = b*Hq + h. AttentionBackwardCoopNV (attention_coop_backward.glsl): the
// backward's contract and bindings, spec 1 WHICH, 2 HAS_POSITION, 3 D; blocks of 128 rows of
// the gradient: d q x = ceil(Sq / 128), y = b*Hq + h; d k, d v x = ceil(Sk / 128), y = b*Hkv + h.
// AttentionCoopSplitNV (attention_coop_split.glsl): the forward for few query rows (decoding, short
// sequences), D == Dv, D % 16 == 0, D <= 64; spec 1 HAS_POSITION, 2 D; blocks of 32 query rows
// whose subgroups split the keys: x = ceil(Sq / 32), y = b*Hq + h.
inline constexpr int64_t kCoopAttentionMaxHeadDim = 128, kCoopSplitAttentionMaxHeadDim = 64;
// Blocks of 128 query rows (rows x heads x batch / 128) from which the tensor-core kernels beat
// the exact ones (H200, SmolLM2 shapes, docs/performance.md "Attention"): the forward from 512
// (4 a multiprocessor; below, the exact 16-row blocks win, 2.4x at 32), the backward from 64.
inline constexpr int64_t kCoopAttentionForwardMinBlocks = 512, kCoopAttentionBackwardMinBlocks = 64;
// Attention's KEY_SPLIT, unforced: splits enough for this many workgroups a multiprocessor, each
// of at least kAttentionSplitMinKeys of the key length, at most kAttentionMaxKeySplits.
inline constexpr int64_t kAttentionSplitWorkgroupsPerSM = 2, kAttentionSplitMinKeys = 256, kAttentionMaxKeySplits = 64;
// AttentionBlock (attention_block.comp): Attention's contract and bindings, spec 4: keys a tile
// (16, 32 or 64: the most that fit the device's shared memory); x = ceil(Sq / 16), y = b*Hq + h.
// For at least kAttentionBlockRows query rows and D, Dv <= kAttentionBlockMaxHeadDim; fewer rows
// (decoding) take Attention.
inline constexpr int64_t kAttentionBlockRows = 16, kAttentionBlockMaxHeadDim = 128;
constexpr uint64_t attention_block_shared_bytes(uint64_t d, uint64_t dv, uint64_t keys) {
  const uint64_t rows = 16, d4 = (d + 3) / 4 * 4, dv4 = (dv + 3) / 4 * 4;
  return 4 * ((rows + keys) * (d4 + 4) + keys * dv4 + 2 * rows * keys);
}

}  // namespace meganeura::kernels
