// Attention written from primitives -> the fused attention op:
//   matmul(softmax(q·kᵀ [· s] [+ causal mask], last axis), v)  ->  attention(q, k, v, scale, causal)
// with the scale on the scores (·s, s·, /s) or on q (q·s, s·q, q/s), and the mask a constant
// that is 0 where query i sees key j (j <= i + Sk - Sq) and <= -1e9 (or -inf) elsewhere. Also
// matmul(a, transpose(b)) -> one matmul with the transpose flag, so `q @ k.transpose(-2, -1)`
// reaches the pattern.
#include <cstring>
#include <string>

#include "meganeura/ops.hpp"
#include "optimize/rule_helpers.hpp"

namespace meganeura::optimize {
namespace {

bool swaps_last_two(const Attrs& a) {
  const size_t r = a.axes.size();
  if (r < 2 || a.axes[r - 2] != static_cast<int64_t>(r - 1) || a.axes[r - 1] != static_cast<int64_t>(r - 2))
    return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (a.axes[i] != static_cast<int64_t>(i)) return false;
  return true;
}
bool q_times_k_transposed(const Attrs& a) { return !a.transpose_a && a.transpose_b; }
bool untransposed(const Attrs& a) { return !a.transpose_a && !a.transpose_b; }

// Whether class c holds a constant f32 causal mask for sq queries and sk keys ([1.., sq, sk]).
bool is_causal_mask(const EGraph& g, ClassId c, int64_t sq, int64_t sk) {
  for (const ENode& n : g.nodes(c)) {
    if (n.leaf < 0) continue;
    const Node& src = g.source()->node(n.leaf);
    const Shape& s = src.shape;
    if (src.op != Op::Constant || src.dtype != f32 || s.size() < 2 || s[s.size() - 2] != sq || s.back() != sk ||
        numel(s) != sq * sk)
      continue;
    bool causal = true;
    for (int64_t i = 0; i < sq && causal; ++i)
      for (int64_t j = 0; j < sk && causal; ++j) {
        float x;
        std::memcpy(&x, src.constant.data() + (i * sk + j) * 4, 4);
        causal = j <= i + sk - sq ? x == 0.0f : x <= -1e9f;
      }
    if (causal) return true;
  }
  return false;
}

const ENode* find_op(const Match& m, Op op, size_t skip = 0) {
  for (const ENode* n : m.nodes)
    if (n->op == op && skip-- == 0) return n;
  return nullptr;
}

bool attention_guard(const EGraph& g, const Match& m) {
  const ClassData &q = d(g, m, "q"), &k = d(g, m, "k"), &val = d(g, m, "v");
  const size_t r = q.shape.size();
  if (q.dtype != f32 || k.dtype != f32 || val.dtype != f32 || r < 2 || k.shape.size() != r || val.shape.size() != r)
    return false;
  for (size_t i = 0; i + 2 < r; ++i)  // no broadcasting: the op maps heads one to one here
    if (k.shape[i] != q.shape[i] || val.shape[i] != q.shape[i]) return false;
  const int64_t sq = q.shape[r - 2], sk = k.shape[r - 2];
  if (k.shape[r - 1] != q.shape[r - 1] || val.shape[r - 2] != sk || q.shape[r - 1] > kMaxAttentionHeadDim ||
      val.shape[r - 1] > kMaxAttentionHeadDim)
    return false;
  Shape out = q.shape;
  out.back() = val.shape.back();
  if (g.data(m.root).shape != out || g.attrs(find_op(m, Op::Softmax)->attrs).axis != static_cast<int64_t>(r - 1))
    return false;
  if (m.vars.count("s")) {
    const ClassData& s = d(g, m, "s");
    if (!s.constant || numel(s.shape) != 1 || s.shape.size() > r || *s.constant == 0) return false;
  }
  if (m.vars.count("mask")) {  // rows that see no key would differ (uniform or NaN vs zeros)
    const ClassData& mask = d(g, m, "mask");
    if (sk < sq || mask.shape.size() > r || !is_causal_mask(g, v(m, "mask"), sq, sk)) return false;
  }
  return true;
}

std::optional<ClassId> attention_apply(EGraph& g, const Match& m) {
  Attrs a;
  a.scalar = 1.0;
  if (m.vars.count("s")) {
    const double s = *d(g, m, "s").constant;
    a.scalar = find_op(m, Op::Div) ? 1.0 / s : s;
  }
  a.count = m.vars.count("mask") ? kAttentionCausal : 0;
  return make(g, Op::Attention, {v(m, "q"), v(m, "k"), v(m, "v")}, a);
}

// Grouped-query attention written with k/v repeated over the group (the usual repeat_kv):
// attention(q [.., Hkv, G, S, D], broadcast_to(reshape(k [.., Hkv, S, D])) [.., Hkv, G, S, D], same v)
// -> reshape(attention(reshape(q, [.., Hkv*G, S, D]), k, v)): k and v are read in place.
bool gqa_guard(const EGraph& g, const Match& m) {
  if (root_attrs(g, m).seq_major) return false;  // the pattern is written heads-major
  const Shape &q = d(g, m, "q").shape, &k = d(g, m, "k").shape, &val = d(g, m, "v").shape;
  const size_t r = q.size();
  if (r < 4 || k.size() != r - 1 || val.size() != r - 1) return false;
  for (const Shape* kv : {&k, &val}) {  // [.., Hkv, S, D]: q's dims without the group axis
    for (size_t i = 0; i + 3 < r; ++i)
      if ((*kv)[i] != q[i]) return false;
    if ((*kv)[r - 3] != q[r - 2]) return false;
  }
  // The reshapes insert the group axis as 1 right after Hkv; the broadcasts expand only it.
  for (const char* name : {"k", "v"}) {
    Shape expect = d(g, m, name).shape;
    expect.insert(expect.end() - 2, 1);
    bool found = false;
    for (const ENode* n : m.nodes)
      if (n->op == Op::Reshape && n->children[0] == g.find(v(m, name))) found = g.attrs(n->attrs).axes == expect;
    if (!found) return false;
  }
  return true;
}

std::optional<ClassId> gqa_apply(EGraph& g, const Match& m) {
  const Shape q = d(g, m, "q").shape;
  const size_t r = q.size();
  Attrs flat;
  flat.axes = Shape(q.begin(), q.end() - 4);
  flat.axes.insert(flat.axes.end(), {q[r - 4] * q[r - 3], q[r - 2], q[r - 1]});
  const ClassId q_flat = make(g, Op::Reshape, {v(m, "q")}, flat);
  const ClassId att = make(g, Op::Attention, {q_flat, v(m, "k"), v(m, "v")}, root_attrs(g, m));
  Attrs back;
  back.axes = g.data(m.root).shape;
  return make(g, Op::Reshape, {att}, back);
}

}  // namespace

void add_attention_rules(std::vector<Rewrite>& r) {
  r.push_back({"matmul-transposed-b", node(Op::MatMul, {var("a"), node(Op::Permute, {var("b")}, swaps_last_two)}),
               nullptr, [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 Attrs a = root_attrs(g, m);
                 a.transpose_b = !a.transpose_b;
                 return make(g, Op::MatMul, {v(m, "a"), v(m, "b")}, a);
               }});
  r.push_back({"matmul-transposed-a", node(Op::MatMul, {node(Op::Permute, {var("a")}, swaps_last_two), var("b")}),
               nullptr, [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 Attrs a = root_attrs(g, m);
                 a.transpose_a = !a.transpose_a;
                 return make(g, Op::MatMul, {v(m, "a"), v(m, "b")}, a);
               }});

  auto repeated = [](const char* name) { return node(Op::BroadcastTo, {node(Op::Reshape, {var(name)})}); };
  r.push_back(
      {"attention-grouped-query", node(Op::Attention, {var("q"), repeated("k"), repeated("v")}), gqa_guard, gqa_apply});

  using Build = Pattern (*)();
  // The scores q·kᵀ, scaled at most once: on the scores or on q.
  const std::pair<const char*, Build> scores[] = {
      {"",
       [] {
         return node(Op::MatMul, {var("q"), var("k")}, q_times_k_transposed);
       }},
      {"-scaled",
       [] {
         return node(Op::Mul, {node(Op::MatMul, {var("q"), var("k")}, q_times_k_transposed), var("s")});
       }},
      {"-scaled-swapped",
       [] {
         return node(Op::Mul, {var("s"), node(Op::MatMul, {var("q"), var("k")}, q_times_k_transposed)});
       }},
      {"-divided",
       [] {
         return node(Op::Div, {node(Op::MatMul, {var("q"), var("k")}, q_times_k_transposed), var("s")});
       }},
      {"-q-scaled",
       [] {
         return node(Op::MatMul, {node(Op::Mul, {var("q"), var("s")}), var("k")}, q_times_k_transposed);
       }},
      {"-q-scaled-swapped",
       [] {
         return node(Op::MatMul, {node(Op::Mul, {var("s"), var("q")}), var("k")}, q_times_k_transposed);
       }},
      {"-q-divided",
       [] {
         return node(Op::MatMul, {node(Op::Div, {var("q"), var("s")}), var("k")}, q_times_k_transposed);
       }},
  };
  for (const auto& [scale_name, score] : scores) {
    const std::pair<std::string, Pattern> masked[] = {
        {"", score()},
        {"-causal", node(Op::Add, {score(), var("mask")})},
        {"-causal-swapped", node(Op::Add, {var("mask"), score()})},
    };
    for (const auto& [mask_name, logits] : masked)
      r.push_back({"attention" + std::string(scale_name) + mask_name,
                   node(Op::MatMul, {node(Op::Softmax, {logits}), var("v")}, untransposed), attention_guard,
                   attention_apply});
  }
}

}  // namespace meganeura::optimize
