// Shared by attention.comp and attention_backward.comp: the params block (binding 0) and which
// keys a query row sees (attention_abi.hpp, Attention). Include after common.glsl, with HAS_POSITION
// and `position_data` (the i32 [1] position buffer, read only when HAS_POSITION is set) declared.
struct AttentionParams {
  uint hq, hkv, sq, sk, d, dv, causal, lse_offset;
  float scale;
  uint window, seq_major, key_splits, split_min_keys, pad0, pad1, pad2;
};
PARAMS_BLOCK { AttentionParams p; };

// Where one head's rows lie: position s of head `bh` (batch * heads + head) of a tensor with
// `heads` heads of `seq` positions is row first_row(bh, heads, seq) + s * row_step(heads); a row
// holds one head dim's elements. [B, H, S, D] rows follow each other; seq-major [B, S, H, D]
// rows of one head are `heads` rows apart. The lse and delta rows use the same numbering.
uint first_row(uint bh, uint heads, uint seq) { return p.seq_major != 0u ? bh / heads * seq * heads + bh % heads : bh * seq; }
uint row_step(uint heads) { return p.seq_major != 0u ? heads : 1u; }

// Position of query 0 among the keys: the cache's fill level, or the queries are the last keys.
int query_base() { return HAS_POSITION != 0u ? int(position_data[0]) : int(p.sk) - int(p.sq); }

// Keys [lo, hi) that query row i sees.
void visible_keys(uint i, int base, out uint lo, out uint hi) {
  int at = base + int(i);
  int last = p.causal != 0u ? at : (HAS_POSITION != 0u ? base + int(p.sq) - 1 : int(p.sk) - 1);
  int first = p.window > 0u ? at - int(p.window) + 1 : 0;
  hi = uint(clamp(last + 1, 0, int(p.sk)));
  lo = uint(clamp(first, 0, int(hi)));
}
