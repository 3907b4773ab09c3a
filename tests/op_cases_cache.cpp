// Forward cases for state, cache_write (a KV cache append at a position read on the device) and
// assign, and the cache's life across steps: it persists, and a write past the end is an error.
#include "op_case.hpp"

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

std::vector<OpCase> cache_cases() {
  std::vector<OpCase> cases = {
      write("kv_2x3x20x8_rows3_at_5", {2, 3, 20, 8}, {2, 3, 3, 8}, 5),
      write("fills_to_the_last_slot", {1, 2, 20, 4}, {1, 2, 4, 4}, 16),
      write("rank2_one_row_at_0", {7, 5}, {1, 5}, 0),
      write("every_slot", {3, 6, 2}, {3, 6, 2}, 0),
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
  try {
    s.step();
    FAIL() << "no error";
  } catch (const RuntimeDataError& e) {
    EXPECT_NE(std::string(e.what()).find("layers.0.k_cache"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("position 4"), std::string::npos) << e.what();
  }
  s.set_input("position", HostTensor::i32s({1}, std::vector<int32_t>{3}));
  EXPECT_NO_THROW(s.step());
}

}  // namespace
}  // namespace mntest
