// Attention forward and backward: q, k, v and every gradient are contiguous [B, H, S, D] or,
// seq_major, [B, S, H, D].
#include <algorithm>

#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"
#include "meganeura/ops.hpp"

namespace meganeura::lower {

using namespace kernels;

static_assert(kWorkgroupSize >= kMaxAttentionHeadDim,
              "attention kernels give each output element of a row one invocation");

int64_t attention_lse_rows(const Shape& out) { return out.empty() ? 0 : numel(out) / std::max<int64_t>(out.back(), 1); }

namespace {

// q [..., Hq, Sq, D], k [..., Hkv, Sk, D], v [..., Hkv, Sk, Dv] (seq_major: sequence before
// heads); rank 2 has one head.
struct Geometry {
  int64_t batch, hq, hkv, sq, sk, d, dv;
};

Geometry geometry(const Shape& q, const Shape& k, const Shape& v, bool seq_major) {
  const size_t r = q.size(), seq = seq_major ? r - 3 : r - 2, heads = seq_major ? r - 2 : r - 3;
  Geometry g{1, r >= 3 ? q[heads] : 1, r >= 3 ? k[heads] : 1, q[seq], k[seq], q[r - 1], v[r - 1]};
  for (size_t i = 0; i + 3 < r; ++i) g.batch *= q[i];
  return g;
}

AttentionParams params(const Geometry& g, const Node& n, int64_t lse_offset) {
  AttentionParams p{};
  p.hq = u32(g.hq, "attention heads");
  p.hkv = u32(g.hkv, "attention k/v heads");
  p.sq = u32(g.sq, "attention query length");
  p.sk = u32(g.sk, "attention key length");
  p.d = u32(g.d, "attention head dim");
  p.dv = u32(g.dv, "attention value head dim");
  p.causal = n.attrs.count == kAttentionCausal ? 1u : 0u;
  p.lse_offset = u32(lse_offset, "attention output size");
  p.scale = static_cast<float>(n.attrs.scalar);
  p.window = u32(n.attrs.window, "attention window");
  p.seq_major = n.attrs.seq_major ? 1u : 0u;
  return p;
}

// Workgroups along y: one per (batch, head); the y dimension has no grid-stride loop.
uint32_t head_groups(int64_t n, int id) {
  if (n > kMaxGroups)
    throw ShapeError("attention %" + std::to_string(id) + ": batch x heads = " + std::to_string(n) + " exceeds " +
                     std::to_string(kMaxGroups) + " workgroups; split the batch");
  return static_cast<uint32_t>(n);
}

// The fewest keys a split takes: a row's visible keys take as many splits as fill them so.
uint32_t split_min_keys(const MatMulTiers& tiers) {
  if (tiers.attention_split_min_keys) return tiers.attention_split_min_keys;
  return tiers.attention_key_splits >= 0 ? 1u : static_cast<uint32_t>(kAttentionSplitMinKeys);
}

// Workgroups a row's keys split over (attention.comp's KEY_SPLIT), 0 for none: decoding's few
// rows, a workgroup each, leave most SMs idle and walk a long KV cache alone. Unforced: enough
// workgroups for kAttentionSplitWorkgroupsPerSM a multiprocessor, as many as splits of the
// fewest keys fit the key length (docs/performance.md, "Attention"). Each step's splits are
// fewer where the cache holds fewer keys: those past them return at once.
uint32_t key_splits(const MatMulTiers& tiers, const Geometry& g) {
  if (tiers.attention_key_splits >= 0) return static_cast<uint32_t>(tiers.attention_key_splits);
  if (tiers.multiprocessors == 0) return 0;
  const int64_t rows = g.batch * g.hq * g.sq, slots = kAttentionSplitWorkgroupsPerSM * tiers.multiprocessors;
  const int64_t fit = g.sk / split_min_keys(tiers);
  const int64_t splits = std::min({(slots + rows - 1) / rows, fit, kAttentionMaxKeySplits});
  return splits >= 2 ? static_cast<uint32_t>(splits) : 0;
}

// The per-row forward with its keys split: each split's sums in scratch, a count a row in state.
void bind_key_splits(Emitter& e, KernelCall& c, const Geometry& g, AttentionParams& p, uint32_t splits,
                     uint32_t min_keys, int id) {
  const int64_t rows = g.sq * g.batch * g.hq;
  if (splits == 0) {  // bindings 7 and 8 are declared but not read
    c.tensors.push_back({id, true});
    c.tensors.push_back({id, true});
    return;
  }
  c.spec.push_back(1u);
  p.key_splits = splits;
  p.split_min_keys = min_keys;
  c.tensors.push_back({e.scratch(static_cast<uint64_t>(rows) * splits * (static_cast<uint64_t>(g.dv) + 2) * 4), true});
  c.tensors.push_back({e.state(static_cast<uint64_t>(rows) * 4), true});
  const int64_t row_groups = std::min<int64_t>(g.sq, kMaxGroups / splits);
  c.groups[0] = static_cast<uint32_t>(row_groups * splits);
}

}  // namespace

void emit_attention(Emitter& e, int id, int partner) {
  const Node& n = e.node(id);
  const bool backward = n.op == Op::AttentionBackward;
  const int q = n.inputs[0], k = n.inputs[1], v = n.inputs[2];
  const Geometry g = geometry(e.node(q).shape, e.node(k).shape, e.node(v).shape, n.attrs.seq_major);
  const int fwd = backward ? n.inputs[3] : id;  // the tensor holding the output and its lse
  if (e.node(fwd).op != Op::Attention)
    throw Error("internal: attention_backward %" + std::to_string(id) + " reads %" + std::to_string(fwd) +
                ", which is not an attention output (its log-sum-exp is needed)");
  const AttentionParams p = params(g, n, numel(e.node(fwd).shape));
  const size_t position_input = backward ? 6 : 3;
  const bool has_position = n.inputs.size() > position_input;
  const int position = has_position ? n.inputs[position_input] : q;  // bound but not read when absent
  std::string what = n.attrs.count == kAttentionCausal ? "causal" : "";
  if (n.attrs.window) what += (what.empty() ? "" : ", ") + std::string("window ") + std::to_string(n.attrs.window);
  if (n.attrs.seq_major) what += (what.empty() ? "" : ", ") + std::string("seq-major");
  const MatMulTiers& tiers = e.options().matmul;
  const bool coop_shape = g.d == g.dv && g.d % 16 == 0 && g.d <= kCoopAttentionMaxHeadDim;
  const bool split_shape = coop_shape && g.d <= kCoopSplitAttentionMaxHeadDim;
  // Which kernel (docs/performance.md, "Attention"): the tensor-core kernels give a workgroup
  // 128 query rows; with fewer rows than their minimum of full blocks the exact kernels are
  // faster (the 1.7B shape at 128 tokens, 32 blocks: 78 µs forward against 32 for the exact
  // 16-row blocks, on an H200; the backward wins from 64 blocks, the forward only from 512).
  // Rows, not blocks: a decoding step's one row a head would fill a 128-row block each.
  // Forced, the tensor cores run wherever the shape allows; "split" picks the key-split forward
  // (kept for its own tests and measurements).
  enum class Pick { Rows, Blocks, Split } pick = Pick::Rows;
  const int64_t min_blocks = backward ? kCoopAttentionBackwardMinBlocks : kCoopAttentionForwardMinBlocks;
  const bool enough_blocks = g.sq * g.batch * g.hq >= 128 * min_blocks;
  if (tiers.coop_attention && coop_shape) {
    if (tiers.attention_kernel == "blocks")
      pick = Pick::Blocks;
    else if (tiers.attention_kernel == "split")
      pick = split_shape || backward ? Pick::Split : Pick::Rows;
    else if (enough_blocks || tiers.force_coop_attention)
      pick = Pick::Blocks;
    // The backward has one tensor-core form, for enough blocks or when forced.
    if (backward && pick == Pick::Split) pick = tiers.force_coop_attention ? Pick::Blocks : Pick::Rows;
  }
  if (!backward && pick != Pick::Rows) {  // a tensor-core forward: blocks of 32 or 128 query rows
    const bool split = pick == Pick::Split;
    KernelCall& c = e.call(split ? Kernel::AttentionCoopSplitNV : Kernel::AttentionCoopNV, id, what);
    c.spec = {has_position ? 1u : 0u, static_cast<uint32_t>(g.d)};
    c.tensors = {{q, false}, {k, false}, {v, false}, {position, false}, {id, true}};
    c.groups = {groups_for(g.sq, split ? 32 : 128), head_groups(g.batch * g.hq, id), 1};
    Emitter::set_params(c, p);
    return;
  }
  if (tiers.force_coop_attention && pick == Pick::Rows)
    throw Error("attention %" + std::to_string(id) +
                ": MEGANEURA_FLASH_ATTENTION is set, but the tensor-core kernels "
                "take D == Dv, D a multiple of 16, D <= 128 (the key-split one D <= 64; here D = " +
                std::to_string(g.d) + ", Dv = " + std::to_string(g.dv) + ")");
  if (!backward) {
    // Blocks of 16 query rows share each key tile (SmolLM2 at 128 tokens on an H100: 19.8 -> 17.6
    // µs a layer, inference 2.99 -> 2.89 ms); a decoding step's few rows keep a workgroup each.
    uint32_t tile = 64;  // keys a tile: the most that fit
    while (tile > 16 && attention_block_shared_bytes(g.d, g.dv, tile) > tiers.shared_memory) tile /= 2;
    const bool block_shape = g.d <= kAttentionBlockMaxHeadDim && g.dv <= kAttentionBlockMaxHeadDim &&
                             attention_block_shared_bytes(g.d, g.dv, tile) <= tiers.shared_memory;
    const bool blocks = block_shape && (tiers.attention_blocks == "1" ||
                                        (tiers.attention_blocks.empty() && g.sq >= kAttentionBlockRows));
    if (tiers.attention_blocks == "1" && !block_shape)
      throw Error("attention %" + std::to_string(id) +
                  ": MEGANEURA_ATTENTION_BLOCKS=1, but the block kernel takes D, Dv <= " +
                  std::to_string(kAttentionBlockMaxHeadDim) + " and " +
                  std::to_string(attention_block_shared_bytes(g.d, g.dv, 16)) +
                  " bytes of shared memory (here D = " + std::to_string(g.d) + ", Dv = " + std::to_string(g.dv) +
                  ", the device has " + std::to_string(tiers.shared_memory) + ")");
    const uint32_t splits = blocks ? 0 : key_splits(tiers, g);
    if (splits) what += (what.empty() ? "" : ", ") + std::string("keys split x") + std::to_string(splits);
    KernelCall& c = e.call(blocks ? Kernel::AttentionBlock : Kernel::Attention, id, what);
    c.spec = {has_position ? 1u : 0u, static_cast<uint32_t>(g.d), static_cast<uint32_t>(g.dv)};
    if (blocks) c.spec.push_back(tile);
    c.tensors = {{q, false}, {k, false}, {v, false}, {position, false}, {id, true}};
    c.groups = {groups_for(g.sq, blocks ? kAttentionBlockRows : 1), head_groups(g.batch * g.hq, id), 1};
    AttentionParams split_p = p;
    if (!blocks) bind_key_splits(e, c, g, split_p, splits, split_min_keys(tiers), id);
    Emitter::set_params(c, split_p);
    return;
  }
  static const std::string which_name[] = {"d q", "d k", "d v", "d k and d v"};
  if (partner >= 0 && pick != Pick::Rows) {  // the tensor-core backward computes one gradient a call
    emit_attention(e, id);
    emit_attention(e, partner);
    return;
  }
  const auto which = partner >= 0 ? ATT_GRAD_KV : static_cast<uint32_t>(n.attrs.axis);
  if (pick == Pick::Blocks) {
    KernelCall& c = e.call(Kernel::AttentionBackwardCoopNV, id, which_name[which] + (what.empty() ? "" : ", " + what));
    c.spec = {which, has_position ? 1u : 0u, static_cast<uint32_t>(g.d)};
    c.tensors = {{q, false},           {k, false},           {v, false},        {fwd, false},
                 {n.inputs[4], false}, {n.inputs[5], false}, {position, false}, {id, true}};
    c.groups = which == ATT_GRAD_Q
                   ? std::array<uint32_t, 3>{groups_for(g.sq, 128), head_groups(g.batch * g.hq, id), 1}
                   : std::array<uint32_t, 3>{groups_for(g.sk, 128), head_groups(g.batch * g.hkv, id), 1};
    Emitter::set_params(c, p);
    return;
  }
  // Paired, one call writes d k (binding 9) and d v (binding 10); alone, binding 10 is a word of
  // scratch it never reads.
  const int dk = partner < 0 || n.attrs.axis == ATT_GRAD_K ? id : partner;
  const int dv = partner < 0 ? e.scratch(4) : dk == id ? partner : id;
  KernelCall& c = e.call(Kernel::AttentionBackward, id, which_name[which] + (what.empty() ? "" : ", " + what));
  c.spec = {which, has_position ? 1u : 0u, static_cast<uint32_t>(g.d), static_cast<uint32_t>(g.dv)};
  c.tensors = {{q, false},           {k, false},        {v, false}, {fwd, false}, {n.inputs[4], false},
               {n.inputs[5], false}, {position, false}, {dk, true}, {dv, true}};
  c.groups = which == ATT_GRAD_Q ? std::array<uint32_t, 3>{groups_for(g.sq, 1), head_groups(g.batch * g.hq, id), 1}
                                 : std::array<uint32_t, 3>{groups_for(g.sk, 1), head_groups(g.batch * g.hkv, id), 1};
  Emitter::set_params(c, p);
}

}  // namespace meganeura::lower
