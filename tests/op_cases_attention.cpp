// Forward cases for attention (causal or not, grouped-query heads, rank 2/3/4, key counts past a
// 256-key tile, queries that see no key, head dims 1..256) and for its three backward ops, each
// fed the real forward output (its saved log-sum-exp) and delta = rowsum(dout * out).
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

struct Geometry {
  const char* name;
  Shape q, k, v;
  bool causal;
  float scale = 0;         // 0: 1/sqrt(D)
  int64_t window = 0;      // sliding window
  int32_t position = -1;   // >= 0: the position input (query 0's place among the keys)
  bool seq_major = false;  // shapes given as [..., S, H, D]
};

const Geometry kGeometries[] = {
    {"mha_2x3x5x16_causal", {2, 3, 5, 16}, {2, 3, 5, 16}, {2, 3, 5, 16}, true},
    {"rank3_4x7x33_keys65_dv9", {4, 7, 33}, {4, 65, 33}, {4, 65, 9}, false},
    {"gqa_6_heads_on_2_causal", {1, 6, 9, 17}, {1, 2, 9, 17}, {1, 2, 9, 17}, true},
    {"decode_3_queries_300_keys_causal", {1, 2, 3, 8}, {1, 2, 300, 8}, {1, 2, 300, 8}, true},
    {"more_queries_than_keys_causal", {1, 1, 5, 4}, {1, 1, 3, 4}, {1, 1, 3, 4}, true},  // rows 0, 1 see nothing
    {"rank2_13_queries_300_keys", {13, 7}, {300, 7}, {300, 5}, false},
    {"head_dim_256_keys_260", {1, 1, 3, 256}, {1, 1, 260, 256}, {1, 1, 260, 256}, false, 0.02f},
    {"one_key_head_dim_1", {2, 1, 4, 1}, {2, 1, 1, 1}, {2, 1, 1, 3}, false},
    {"batch_rank5_scale_0_5", {2, 2, 2, 6, 5}, {2, 2, 1, 6, 5}, {2, 2, 1, 6, 5}, true, 0.5f},
    {"sliding_window_3_causal", {1, 2, 9, 8}, {1, 2, 9, 8}, {1, 2, 9, 8}, true, 0, 3},
    {"window_1_sees_itself", {1, 1, 5, 4}, {1, 1, 5, 4}, {1, 1, 5, 4}, true, 0, 1},
    {"window_300_keys_causal", {1, 1, 4, 8}, {1, 1, 600, 8}, {1, 1, 600, 8}, true, 0, 300},
    // A KV cache of 20 slots filled to 11 (+ the 2 new queries): later slots hold stale values.
    {"cache_position_11_causal", {1, 2, 2, 8}, {1, 2, 20, 8}, {1, 2, 20, 8}, true, 0, 0, 11},
    {"cache_position_11_full", {1, 2, 2, 8}, {1, 2, 20, 8}, {1, 2, 20, 8}, false, 0, 0, 11},
    {"cache_position_0_decode", {2, 3, 1, 16}, {2, 3, 7, 16}, {2, 3, 7, 16}, true, 0, 0, 0},
    {"cache_position_250_window_4", {1, 1, 1, 8}, {1, 1, 300, 8}, {1, 1, 300, 8}, true, 0, 4, 250},
    // Head dims the tensor-core kernel takes (multiples of 16 up to 128): two blocks of 128
    // queries, key counts off the 32-key tile, a window, a cache position.
    {"d64_gqa_9_on_3_causal_150", {1, 9, 150, 64}, {1, 3, 150, 64}, {1, 3, 150, 64}, true},
    {"d32_full_40_queries_70_keys", {2, 2, 40, 32}, {2, 2, 70, 32}, {2, 2, 70, 32}, false},
    {"d64_decode_position_100_window_40", {1, 3, 1, 64}, {1, 3, 160, 64}, {1, 3, 160, 64}, true, 0, 40, 100},
    {"d128_causal_20", {1, 2, 20, 128}, {1, 2, 20, 128}, {1, 2, 20, 128}, true},
    // Sequence before heads ([B, S, H, D], what a projection reshapes to): batches, grouped
    // heads, a cache position, and the tensor-core shapes (two blocks of 128 queries).
    {"seq_major_gqa_6_on_2_causal", {2, 9, 6, 17}, {2, 9, 2, 17}, {2, 9, 2, 17}, true, 0, 0, -1, true},
    {"seq_major_rank3_keys_65_dv_9", {7, 4, 33}, {65, 4, 33}, {65, 4, 9}, false, 0, 0, -1, true},
    {"seq_major_cache_position_11_window_5", {1, 2, 3, 8}, {1, 20, 3, 8}, {1, 20, 3, 8}, true, 0, 5, 11, true},
    {"seq_major_d64_gqa_9_on_3_causal_150", {1, 150, 9, 64}, {1, 150, 3, 64}, {1, 150, 3, 64}, true, 0, 0, -1, true},
    {"seq_major_d32_batch_2_40_queries_70_keys", {2, 40, 2, 32}, {2, 70, 2, 32}, {2, 70, 2, 32}, false, 0, 0, -1, true},
    {"seq_major_d64_decode_position_100", {1, 1, 3, 64}, {1, 160, 3, 64}, {1, 160, 3, 64}, true, 0, 0, 100, true},
    // 64 blocks of 128 query rows: unforced, the exact forward feeds the tensor-core backward.
    {"seq_major_d16_128_heads_64_causal", {1, 64, 128, 16}, {1, 64, 128, 16}, {1, 64, 128, 16}, true, 0, 0, -1, true},
};

Tensor attend(CaseBuilder& b, const Geometry& g, Tensor& q, Tensor& k, Tensor& v) {
  q = b.input("q", g.q);
  k = b.input("k", g.k);
  v = b.input("v", g.v);
  // Outputs average O(1) values: floor the comparison's scale at 1 where they cancel.
  b.scale = 1;
  const AttentionOptions o{.causal = g.causal, .scale = g.scale, .window = g.window, .seq_major = g.seq_major};
  if (g.position < 0) return attention(q, k, v, o);
  return attention(q, k, v, b.input_host("position", host_i32({1}, {g.position})), o);
}

std::vector<OpCase> attention_cases() {
  std::vector<OpCase> cases;
  for (const Geometry& g : kGeometries) {
    cases.push_back({Op::Attention, g.name, [g](CaseBuilder& b) {
                       Tensor q, k, v;
                       b.output("y", attend(b, g, q, k, v));
                     }});
    for (int64_t which = 0; which < 3; ++which) {
      static const char* grad_name[] = {"_dq", "_dk", "_dv"};
      cases.push_back({Op::AttentionBackward, std::string(g.name) + grad_name[which], [g, which](CaseBuilder& b) {
                         Tensor q, k, v;
                         Tensor o = attend(b, g, q, k, v);
                         Tensor dout = b.input("dout", o.shape());
                         Tensor delta = sum(dout * o, {-1});
                         Attrs a = o.node().attrs;
                         a.axis = which;
                         std::vector<Tensor> in = {q, k, v, o, dout, delta};
                         if (o.node().inputs.size() > 3) in.push_back(Tensor(&o.graph(), o.node().inputs[3]));
                         b.output("grad", o.graph().add(Op::AttentionBackward, std::move(in), a));
                       }});
    }
  }
  return cases;
}

// rotary: rank 4 with [seq, head_dim] tables, cos/sin of different broadcast shapes, the
// transpose (the gradient's form), and a head_dim of 2.
std::vector<OpCase> rotary_cases() {
  auto transposed = [](Tensor x, Tensor c, Tensor s) {
    Attrs a;
    a.count = 1;
    return x.graph().add(Op::Rotary, {x, c, s}, a);
  };
  return {
      {Op::Rotary, "rank4_tables",
       [](CaseBuilder& b) {
         b.output("y", rotary(b.input("x", {2, 3, 5, 8}), b.input("cos", {5, 8}), b.input("sin", {5, 8})));
       }},
      {Op::Rotary, "broadcast_cos_over_heads_sin_row",
       [](CaseBuilder& b) {
         b.output("y", rotary(b.input("x", {3, 7, 6}), b.input("cos", {1, 7, 6}), b.input("sin", {6})));
       }},
      {Op::Rotary, "transposed_rank4",
       [transposed](CaseBuilder& b) {
         b.output("y", transposed(b.input("x", {2, 3, 5, 8}), b.input("cos", {5, 8}), b.input("sin", {5, 8})));
       }},
      {Op::Rotary, "head_dim_2_full_shape",
       [](CaseBuilder& b) {
         b.output("y", rotary(b.input("x", {9, 2}), b.input("cos", {9, 2}), b.input("sin", {9, 2})));
       }},
      // Two rotaries on one cos/sin pair (a layer's q and k, seq-major): one dispatch for both.
      {Op::Rotary, "q_and_k_share_tables_seq_major",
       [](CaseBuilder& b) {
         Tensor c = b.input("cos", {5, 1, 8}), s = b.input("sin", {5, 1, 8});
         b.output("q", rotary(b.input("xq", {2, 5, 6, 8}), c, s));
         b.output("k", rotary(b.input("xk", {2, 5, 2, 8}), c, s));
       }},
      {Op::Rotary, "transposed_pair",
       [transposed](CaseBuilder& b) {
         Tensor c = b.input("cos", {7, 4}), s = b.input("sin", {1, 4});
         b.output("a", transposed(b.input("xa", {3, 7, 4}), c, s));
         b.output("b", transposed(b.input("xb", {7, 4}), c, s));
       }},
  };
}

Register reg{attention_cases()};
Register reg_rotary{rotary_cases()};

}  // namespace
}  // namespace mntest
