// Forward cases for data movement: reshape (a view), permute, slice (negative indices, steps),
// concat, split, broadcast_to. All exact copies: rtol = 0.
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

std::vector<OpCase> reshape_cases() {
  return {
      {Op::Reshape, "rank4_to_2d",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", reshape(b.input("x", {2, 3, 5, 7}), {6, 35}));
       }},
      {Op::Reshape, "1001_to_7x11x13_minus1",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", reshape(b.input("x", {1001}), {7, -1, 13}));
       }},
      {Op::Reshape, "of_intermediate_then_consumed",
       [](CaseBuilder& b) {
         // A view of a computed tensor, consumed by another op and also an output.
         Tensor x = b.input("x", {33, 67});
         Tensor r = reshape(x * 2.0f, {67, 33});
         b.output("r", r);
         b.output("y", r + b.input("z", {33}));
       }},
      {Op::Reshape, "to_rank0_and_back",
       [](CaseBuilder& b) {
         b.rtol = 0;
         Tensor s = reshape(b.input("x", {1, 1, 1}), {});
         b.output("s", s);
         b.output("t", reshape(s, {1, 1}));
       }},
  };
}

std::vector<OpCase> permute_cases() {
  return {
      {Op::Permute, "rank4_3102",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", permute(b.input("x", {2, 3, 5, 7}), {3, 1, 0, 2}));
       }},
      {Op::Permute, "transpose_33x67",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", transpose(b.input("x", {33, 67})));
       }},
      {Op::Permute, "rank3_negative_axes",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", permute(b.input("x", {5, 7, 9}), {-1, 0, -2}));
       }},
      {Op::Permute, "permute_of_permute_then_add",
       [](CaseBuilder& b) {
         Tensor x = b.input("x", {3, 4, 5, 6});
         Tensor p = permute(permute(x, {0, 2, 1, 3}), {3, 1, 2, 0});  // [6,5,4,3]
         b.output("y", p + b.input("z", {4, 3}));
       }},
      {Op::Permute, "transpose_dims_0_2",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", transpose(b.input("x", {2, 3, 5, 7}), 0, 2));
       }},
  };
}

std::vector<OpCase> slice_cases() {
  return {
      {Op::Slice, "middle_axis_step2",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", slice(b.input("x", {5, 33, 7}), 1, 3, 30, 2));
       }},
      {Op::Slice, "negative_start_end_step3",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", slice(b.input("x", {257}), 0, -200, -3, 3));
       }},
      {Op::Slice, "end_past_dim_clamped",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", slice(b.input("x", {7, 67}), -1, 60, 1000));
       }},
      {Op::Slice, "first_axis_rank4_last_element",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", slice(b.input("x", {3, 2, 5, 7}), 0, -1, 3));
       }},
      {Op::Slice, "slice_of_intermediate",
       [](CaseBuilder& b) {
         Tensor x = exp(b.input("x", {9, 33}));
         b.output("y", slice(x, 1, 1, 33, 4) * 2.0f);
       }},
      {Op::Slice, "split_3_parts_middle_axis",
       [](CaseBuilder& b) {
         b.rtol = 0;
         auto parts = split(b.input("x", {2, 33, 5}), {3, 5, 25}, 1);
         b.output("p0", parts.at(0));
         b.output("p1", parts.at(1));
         b.output("p2", parts.at(2));
       }},
      {Op::Slice, "split_last_axis_consumed",
       [](CaseBuilder& b) {
         auto parts = split(b.input("x", {7, 2 * 65}), {65, 65}, -1);
         b.output("y", parts.at(0) * sigmoid(parts.at(1)));  // a GLU
       }},
  };
}

std::vector<OpCase> concat_cases() {
  return {
      {Op::Concat, "three_inputs_middle_axis",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", concat({b.input("a", {2, 3, 5}), b.input("b", {2, 7, 5}), b.input("c", {2, 1, 5})}, 1));
       }},
      {Op::Concat, "first_axis_odd_1d",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", concat({b.input("a", {1}), b.input("b", {257}), b.input("c", {33})}, 0));
       }},
      {Op::Concat, "last_axis_rank4_negative",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", concat({b.input("a", {2, 3, 5, 7}), b.input("b", {2, 3, 5, 1})}, -1));
       }},
      {Op::Concat, "with_intermediates_and_repeat",
       [](CaseBuilder& b) {
         Tensor x = b.input("x", {5, 33});
         Tensor e = exp(x);
         b.output("y", concat({e, x, e}, 0) + 1.0f);
       }},
      {Op::Concat, "single_input",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", concat({b.input("a", {7, 3})}, 1));
       }},
  };
}

std::vector<OpCase> broadcast_cases() {
  return {
      {Op::BroadcastTo, "row_1x7_to_5x7",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", broadcast_to(b.input("x", {1, 7}), {5, 7}));
       }},
      {Op::BroadcastTo, "3x1x7_to_rank4",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", broadcast_to(b.input("x", {3, 1, 7}), {2, 3, 5, 7}));
       }},
      {Op::BroadcastTo, "scalar_to_1001",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", broadcast_to(b.input("x", {}), {1001}));
       }},
      {Op::BroadcastTo, "column_consumed",
       [](CaseBuilder& b) {
         Tensor c = broadcast_to(b.input("x", {33, 1}), {33, 67});
         b.output("y", c * b.input("z", {33, 67}));
       }},
  };
}

Register r1{reshape_cases()};
Register r2{permute_cases()};
Register r3{slice_cases()};
Register r4{concat_cases()};
Register r5{broadcast_cases()};

}  // namespace
}  // namespace mntest
