// Forward cases for state, cache_write (a KV cache append at a position read on the device) and
// assign, and the cache's life across steps: it persists, and a write past the end is an error.
#include "op_case.hpp"
#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

OpCase write(std::string name, Shape state, Shape rows, int32_t position) {
  return {Op::CacheWrite, std::move(name), [state, rows, position](CaseBuilder& b) {
            Tensor s = b.g.state("cache", state);
            Tensor pos = b.input_host("position", host_i32({1}, {position}));
            b.output("cache", cache_write(s, b.input("rows", rows), pos));
          }};
}

// A decoding step's rotary of q and k and the appends of k (rotated) and v, which
// cache_appends_in_rotary runs as one RotaryAppend dispatch: `rows` rows at `position` of a
// cache of `len` slots, q with `heads`, k and v with `kv_heads` of `d`; without `pair` k is
// rotated alone, without `with_v` only k is appended.
OpCase rotary_appends(std::string name, int64_t rows, int64_t heads, int64_t kv_heads, int64_t d, int64_t len,
                      int32_t position, bool pair, bool with_v) {
  return {Op::CacheWrite, std::move(name), [=](CaseBuilder& b) {
            const Tensor c = b.input("cos", {rows, 1, d}), s = b.input("sin", {rows, 1, d});
            const Tensor pos = b.input_host("position", host_i32({1}, {position}));
            if (pair) b.output("q", rotary(b.input("xq", {1, rows, heads, d}), c, s));
            const Tensor k = rotary(b.input("xk", {1, rows, kv_heads, d}), c, s);
            const Shape cache{1, len, kv_heads * d}, row{1, rows, kv_heads * d};
            b.output("k_cache", cache_write(b.g.state("k_cache", cache), reshape(k, row), pos));
            if (with_v)
              b.output("v_cache", cache_write(b.g.state("v_cache", cache), reshape(b.input("v", row), row), pos));
          }};
}

std::vector<OpCase> cache_cases() {
  std::vector<OpCase> cases = {
      write("kv_2x3x20x8_rows3_at_5", {2, 3, 20, 8}, {2, 3, 3, 8}, 5),
      write("fills_to_the_last_slot", {1, 2, 20, 4}, {1, 2, 4, 4}, 16),
      write("rank2_one_row_at_0", {7, 5}, {1, 5}, 0),
      write("every_slot", {3, 6, 2}, {3, 6, 2}, 0),
      rotary_appends("rotary_q_k_appends_k_v_one_row", 1, 5, 3, 6, 11, 4, true, true),
      rotary_appends("rotary_q_k_appends_k_v_rows3_to_the_last_slot", 3, 4, 2, 10, 9, 6, true, true),
      rotary_appends("rotary_k_alone_appended_with_v", 2, 1, 3, 4, 7, 0, false, true),
      rotary_appends("rotary_q_k_append_k_only", 1, 3, 3, 8, 5, 2, true, false),
  };
  // assign into a state (zeros at build): the value alone, a fused chain, the target's own old value
  cases.push_back({Op::Assign, "state_7_from_input",
                   [](CaseBuilder& b) { b.output("s", assign(b.g.state("s", {7}), b.input("x", {7}))); }});
  cases.push_back({Op::Assign, "rank4_from_a_chain", [](CaseBuilder& b) {
                     const Shape s{2, 3, 5, 7};
                     b.output("s", assign(b.g.state("s", s), exp(b.input("x", s, -2, 2)) * b.input("y", s) + 0.5f));
                   }});
  cases.push_back({Op::Assign, "old_value_plus_input", [](CaseBuilder& b) {
                     const Tensor target = b.g.state("s", {13, 3});
                     b.output("s", assign(target, target * 0.9f + b.input("x", {13, 3})));
                   }});
  // state alone: zeros when the session is built
  for (const Shape& s : {Shape{3}, Shape{2, 5}, Shape{1, 2, 3, 4}})
    cases.push_back(
        {Op::State, "zeros_" + shape_str(s), [s](CaseBuilder& b) { b.output("s", b.g.state("s", s) * 1.0f); }});
  return cases;
}

Register reg{cache_cases()};

// Two steps of one recorded command buffer write different slots; both stay.
TEST(CacheWrite, PersistsAcrossSteps) {
  Graph g;
  Tensor pos = g.input("position", {1}, i32);
  Tensor rows = g.input("rows", {2, 2, 3});
  g.output("cache", cache_write(g.state("cache", {2, 6, 3}), rows, pos));
  Session s = build_inference_session(g);
  auto feed = [&](int32_t p, float v) {
    s.set_input("position", HostTensor::i32s({1}, std::vector<int32_t>{p}));
    s.set_input("rows", HostTensor::f32s({2, 2, 3}, std::vector<float>(12, v)));
    s.step();
  };
  feed(0, 1.0f);
  feed(3, 2.0f);
  const std::vector<float> c = s.read_output("cache").to_f32();
  for (int o = 0; o < 2; ++o)
    for (int slot = 0; slot < 6; ++slot)
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(c[static_cast<size_t>((o * 6 + slot) * 3 + i)], slot < 2                   ? 1.0f
                                                                  : (slot == 3 || slot == 4) ? 2.0f
                                                                                             : 0.0f)
            << "slot " << slot;
}

// A decoding step's graph: q and k rotated, k and v appended at a position read on the device.
struct DecodingStep {
  Graph g;
  DecodingStep() {
    const Tensor pos = g.input("position", {1}, i32);
    const Tensor c = g.input("cos", {1, 1, 6}), s = g.input("sin", {1, 1, 6});
    auto scope = g.scope("layers.0");
    g.output("q", rotary(g.input("xq", {1, 1, 5, 6}), c, s));
    const Tensor k = rotary(g.input("xk", {1, 1, 3, 6}), c, s);
    g.output("k_cache", cache_write(g.state("k_cache", {1, 4, 18}), reshape(k, {1, 1, 18}), pos));
    g.output("v_cache", cache_write(g.state("v_cache", {1, 4, 18}), g.input("v", {1, 1, 18}), pos));
  }
  // Two steps (positions 0 and 3) of an inference session; its outputs after the second.
  static std::vector<std::vector<float>> run(Session& s) {
    for (int32_t p : {0, 3}) {
      s.set_input("position", HostTensor::i32s({1}, std::vector<int32_t>{p}));
      const std::pair<const char*, Shape> inputs[] = {
          {"cos", {1, 1, 6}}, {"sin", {1, 1, 6}}, {"xq", {1, 1, 5, 6}}, {"xk", {1, 1, 3, 6}}, {"v", {1, 1, 18}}};
      for (const auto& [name, shape] : inputs) {
        std::vector<float> v(static_cast<size_t>(numel(shape)));
        for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(p + 1) + 0.1f * static_cast<float>(i);
        s.set_input(name, HostTensor::f32s(shape, v));
      }
      s.step();
    }
    return {s.read_output("q").to_f32(), s.read_output("k_cache").to_f32(), s.read_output("v_cache").to_f32()};
  }
};

size_t count_lines(const std::string& listing, const std::string& what) {
  size_t n = 0;
  for (size_t at = listing.find(what); at != std::string::npos; at = listing.find(what, at + 1)) ++n;
  return n;
}

// The appends join the rotary's dispatch (cache_appends_in_rotary); skipped, they take their own,
// with the same bits in every output.
TEST(CacheWrite, AppendsJoinTheRotaryDispatchWithTheSameResults) {
  DecodingStep fused_graph;
  Session fused = build_inference_session(fused_graph.g);
  EXPECT_EQ(count_lines(fused.listing(), "dispatch rotary_append"), 1u) << fused.listing();
  EXPECT_EQ(count_lines(fused.listing(), "dispatch cache_write"), 0u) << fused.listing();
  const auto with = DecodingStep::run(fused);
  ScopedEnv skip("MEGANEURA_LOWER_SKIP", "cache_appends_in_rotary");
  DecodingStep plain_graph;
  Session plain = build_inference_session(plain_graph.g);
  EXPECT_EQ(count_lines(plain.listing(), "dispatch cache_write"), 2u) << plain.listing();
  EXPECT_EQ(count_lines(plain.listing(), "dispatch rotary_append"), 0u) << plain.listing();
  const auto without = DecodingStep::run(plain);
  for (size_t i = 0; i < with.size(); ++i) EXPECT_EQ(with[i], without[i]) << "output " << i;
  // Both steps' rows stay in the caches: slots 0 and 3 hold them, 1 and 2 zeros.
  for (size_t slot = 0; slot < 4; ++slot)
    EXPECT_EQ(with[2][slot * 18 + 1] != 0.0f, slot == 0 || slot == 3) << "slot " << slot;
}

// A step whose append at position 4 is past its cache's end: an error naming the node (`scope`)
// and the position.
void expect_past_the_end(Session& s, const std::string& scope) {
  try {
    s.step();
    FAIL() << "no error";
  } catch (const RuntimeDataError& e) {
    EXPECT_NE(std::string(e.what()).find(scope), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("position 4"), std::string::npos) << e.what();
  }
}

// Past the end, the fused append reports as the cache_write did, naming its node.
TEST(CacheWrite, AFusedAppendPastTheEndIsAnErrorNamingTheNode) {
  DecodingStep step;
  Session s = build_inference_session(step.g);
  ASSERT_EQ(count_lines(s.listing(), "dispatch rotary_append"), 1u) << s.listing();
  DecodingStep::run(s);
  s.set_input("position", HostTensor::i32s({1}, std::vector<int32_t>{4}));
  expect_past_the_end(s, "layers.0");
}

TEST(CacheWrite, PastTheEndIsAnErrorNamingTheNode) {
  Graph g;
  Tensor pos = g.input("position", {1}, i32);
  Tensor rows = g.input("rows", {1, 2, 4});
  {
    auto scope = g.scope("layers.0.k_cache");
    g.output("cache", cache_write(g.state("cache", {1, 5, 4}), rows, pos));
  }
  Session s = build_inference_session(g);
  s.set_input("rows", HostTensor::f32s({1, 2, 4}, std::vector<float>(8, 1.0f)));
  s.set_input("position", HostTensor::i32s({1}, std::vector<int32_t>{4}));
  expect_past_the_end(s, "layers.0.k_cache");
  s.set_input("position", HostTensor::i32s({1}, std::vector<int32_t>{3}));
  EXPECT_NO_THROW(s.step());
}

}  // namespace
}  // namespace mntest
