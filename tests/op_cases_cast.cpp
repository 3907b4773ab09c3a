// Forward cases for cast: f32 <-> f16/bf16 with round-to-nearest-even (checked exactly against
// the reference's own rounding), f16/bf16 parameters and inputs fed as raw 16-bit words, which
// the graph casts to f32 where an op consumes them, and integer <-> f32.
#include <cmath>

#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

// Values that probe rounding: ties to even, subnormals, overflow, NaN, signed zero.
std::vector<float> f16_probes() {
  return {1.0f + 0x1p-11f,             // tie between 1 and 1+2^-10: stays 1 (even)
          1.0f + 3 * 0x1p-11f,         // tie: rounds up to 1+2^-9 (even)
          1.0f + 0x1p-11f + 0x1p-20f,  // just above a tie: up
          -(2.0f + 0x1p-10f),          // tie at 2: stays -2
          65504.0f,
          65519.0f,  // max half; rounds down to max
          65520.0f,
          -1e6f,  // overflow to +-inf
          0x1p-24f,
          0x1p-25f,      // smallest subnormal; half of it rounds to 0 (even)
          3 * 0x1p-25f,  // tie between 2^-24 and 2^-23: 2^-23
          1e-3f,
          6.1e-5f,
          -0.0f,
          0.0f,
          3.14159265f};
}

std::vector<float> bf16_probes() {
  return {1.0f + 0x1p-8f,      // tie: stays 1
          1.0f + 3 * 0x1p-8f,  // tie: up to 1+2^-6
          1.0f + 0x1p-8f + 0x1p-20f,
          3.4e38f,  // rounds to inf in bf16
          -0.0f,
          0.0f,
          3.14159265f,
          -123456.789f};
}

std::vector<float> with_random(Rng& rng, std::vector<float> v, int64_t n, double lo, double hi) {
  auto r = rng.floats(n, lo, hi);
  v.insert(v.end(), r.begin(), r.end());
  return v;
}

std::vector<OpCase> cast_cases() {
  std::vector<OpCase> cases;
  cases.push_back({Op::Cast, "f32_f16_f32_probes_and_random", [](CaseBuilder& b) {
                     b.rtol = 0;
                     auto v = with_random(b.rng, f16_probes(), 241, -100, 100);  // 257 elements
                     Tensor x = b.input_host("x", host_f32({257}, v));
                     Tensor h = cast(x, f16);
                     b.output("h", h);  // raw f16 words
                     b.output("back", cast(h, f32));
                   }});
  cases.push_back({Op::Cast, "f32_bf16_f32_probes_and_random", [](CaseBuilder& b) {
                     b.rtol = 0;
                     auto v = with_random(b.rng, bf16_probes(), 1001 - 8, -1000, 1000);
                     Tensor x = b.input_host("x", host_f32({7, 11, 13}, v));
                     Tensor h = cast(x, bf16);
                     b.output("h", h);
                     b.output("back", cast(h, f32));
                   }});
  cases.push_back({Op::Cast, "f32_f16_odd_1_and_7", [](CaseBuilder& b) {
                     b.rtol = 0;  // odd element counts: the last 32-bit word is half full
                     b.output("h1", cast(b.input("x1", {1}, -2, 2), f16));
                     b.output("h7", cast(b.input("x7", {7}, -2, 2), f16));
                     b.output("b7", cast(b.input("y7", {7}, -2, 2), bf16));
                   }});
  cases.push_back({Op::Cast, "f16_parameter_consumed_by_add", [](CaseBuilder& b) {
                     // An f16 parameter fed as raw uint16 words; add() makes the graph insert a cast.
                     Tensor w = b.param_host("w", host_f16({33, 67}, b.rng.floats(33 * 67, -4, 4)));
                     b.output("y", add(b.input("x", {33, 67}), w));
                   }});
  cases.push_back({Op::Cast, "bf16_parameter_consumed_by_matmul", [](CaseBuilder& b) {
                     Tensor w = b.param_host("w", host_bf16({65, 7}, b.rng.floats(65 * 7, -1, 1)));
                     b.output("y", matmul(b.input("x", {5, 65}), w));
                   }});
  cases.push_back({Op::Cast, "f16_input_consumed_by_exp_rank4", [](CaseBuilder& b) {
                     Tensor x = b.input_host("x", host_f16({2, 3, 5, 7}, b.rng.floats(210, -3, 3)));
                     b.output("y", exp(x));
                   }});
  cases.push_back({Op::Cast, "f16_input_odd_count_7", [](CaseBuilder& b) {
                     Tensor x = b.input_host("x", host_f16({7}, b.rng.floats(7, -3, 3)));
                     b.output("y", x * 2.0f);
                   }});
  cases.push_back({Op::Cast, "i32_to_f32_and_back", [](CaseBuilder& b) {
                     b.rtol = 0;
                     Tensor i = b.input_ints("i", {67}, -1000000, 1000000);
                     b.output("f", cast(i, f32));
                     b.output("u", cast(b.input_ints("u", {7}, 0, 4000000000LL, u32), f32));
                   }});
  cases.push_back({Op::Cast, "f32_to_i32_truncates", [](CaseBuilder& b) {
                     b.rtol = 0;
                     Tensor x = b.input_host("x", host_f32({8}, {-2.7f, -2.5f, -0.4f, -0.0f, 0.6f, 2.5f, 3.99f, 1e6f}));
                     b.output("i", cast(x, i32));
                   }});
  return cases;
}

Register reg{cast_cases()};

}  // namespace
}  // namespace mntest
