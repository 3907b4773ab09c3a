// Shape rules of attention and its backward.
#include "graph/op_table.hpp"
#include "meganeura/ops.hpp"

namespace meganeura::graph {

// q [..., Hq, Sq, D], k [..., Hkv, Sk, D], v [..., Hkv, Sk, Dv] -> [..., Hq, Sq, Dv]; seq_major:
// q [..., Sq, Hq, D], k [..., Sk, Hkv, D], v [..., Sk, Hkv, Dv] -> [..., Sq, Hq, Dv].
OutType infer_attention(InferContext& c) {
  c.require_dtype(0, {f32}, "query");
  c.require_dtype(1, {f32}, "key");
  c.require_dtype(2, {f32}, "value");
  const Shape &q = c.shape(0), &k = c.shape(1), &v = c.shape(2);
  const std::string shapes = "q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v);
  if (q.size() < 2 || k.size() != q.size() || v.size() != q.size())
    c.shape_error(shapes + " — q, k and v need one rank >= 2: [..., heads, seq, head_dim]");
  const size_t r = q.size();
  if (c.attrs.seq_major && r < 3)
    c.shape_error(shapes + " — seq_major attention needs rank >= 3: [..., seq, heads, head_dim]");
  const size_t seq = c.attrs.seq_major ? r - 3 : r - 2, heads = c.attrs.seq_major ? r - 2 : r - 3;
  if (q[r - 1] != k[r - 1]) c.shape_error(shapes + " — q and k head dims differ");
  if (k[seq] != v[seq]) c.shape_error(shapes + " — k and v sequence lengths differ");
  if (q[r - 1] > kMaxAttentionHeadDim || v[r - 1] > kMaxAttentionHeadDim)
    c.shape_error(shapes + " — head dims up to " + std::to_string(kMaxAttentionHeadDim) + " are supported");
  for (size_t d = 0; d + 3 < r; ++d)
    if (q[d] != k[d] || q[d] != v[d]) c.shape_error(shapes + " — leading (batch) dims must match");
  if (r >= 3) {
    const int64_t hq = q[heads], hk = k[heads];
    if (hk != v[heads]) c.shape_error(shapes + " — k and v head counts differ");
    if (hk == 0 || hq % hk != 0)
      c.shape_error(shapes + " — q's " + std::to_string(hq) + " heads are not a multiple of k's " + std::to_string(hk));
  }
  if (c.attrs.count != 0 && c.attrs.count != kAttentionCausal)
    c.shape_error("mask code " + std::to_string(c.attrs.count) + " is not none (0) or causal (1)");
  if (c.attrs.window < 0) c.shape_error("sliding window " + std::to_string(c.attrs.window) + " must be >= 0 (0: none)");
  if (c.inputs.size() > 3) {  // the position of query 0 in the keys (a KV cache being filled)
    c.require_dtype(3, {i32}, "position");
    if (numel(c.shape(3)) != 1) c.shape_error("position " + shape_str(c.shape(3)) + " must hold one value");
  }
  Shape out = q;
  out.back() = v.back();
  return {out, f32};
}

// (q, k, v, o, do, delta) -> the gradient of input attrs.axis (0 q, 1 k, 2 v).
OutType infer_attention_backward(InferContext& c) {
  InferContext fwd{Op::Attention, {c.inputs[0], c.inputs[1], c.inputs[2]}, c.attrs, c.label};
  if (c.inputs.size() > 6) fwd.inputs.push_back(c.inputs[6]);
  OutType o = infer_attention(fwd);
  for (size_t i = 3; i < 6; ++i)
    c.require_dtype(i, {f32}, i == 3 ? "forward output" : i == 4 ? "output gradient" : "delta");
  if (c.shape(3) != o.shape || c.shape(4) != o.shape)
    c.shape_error("forward output " + shape_str(c.shape(3)) + " and its gradient " + shape_str(c.shape(4)) +
                  " must have the attention's output shape " + shape_str(o.shape));
  Shape rows(o.shape.begin(), o.shape.end() - 1);
  if (c.shape(5) != rows) c.shape_error("delta " + shape_str(c.shape(5)) + " must be " + shape_str(rows));
  if (c.attrs.axis < 0 || c.attrs.axis > 2)
    c.shape_error("gradient of input " + std::to_string(c.attrs.axis) + ": must be 0, 1 or 2");
  return {c.shape(static_cast<size_t>(c.attrs.axis)), f32};
}

// cache_write(state [..., N, D], rows [..., S, D], position i32 [1]) -> state's type.
OutType infer_cache_write(InferContext& c) {
  const Shape &s = c.shape(0), &r = c.shape(1);
  if (s.size() < 2 || r.size() != s.size())
    c.shape_error("state " + shape_str(s) + " and rows " + shape_str(r) + " need one rank >= 2: [..., slots, row]");
  for (size_t d = 0; d < s.size(); ++d)
    if (d != s.size() - 2 && s[d] != r[d])
      c.shape_error("rows " + shape_str(r) + " do not match the state " + shape_str(s) + " outside the slot axis (-2)");
  if (r[r.size() - 2] > s[s.size() - 2])
    c.shape_error("rows " + shape_str(r) + " hold more slots than the state " + shape_str(s));
  if (c.dtype(1) != c.dtype(0)) c.dtype_error("rows and state dtypes differ");
  c.require_dtype(2, {i32}, "position");
  if (numel(c.shape(2)) != 1) c.shape_error("position " + shape_str(c.shape(2)) + " must hold one value");
  return {s, c.dtype(0)};
}

}  // namespace meganeura::graph
