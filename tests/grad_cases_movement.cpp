// Gradient cases for data movement (reshape, permute, slice with negative bounds and steps,
// split, concat with a repeated input, broadcast_to) and indexing (gather with repeated and
// negative indices: the gradient scatter must accumulate; scatter_add: base gets the cotangent,
// updates a gather of it).
#include "grad_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

std::vector<GradCase> movement_cases() {
  return {
      {Op::Reshape, "6x35_to_5x6x7_times_param",
       [](GradBuilder& b) {
         b.out = reshape(b.param("x", {6, 35}), {5, -1, 7}) * b.param("s", {7});
       }},
      {Op::Reshape, "rank4_to_rank1",
       [](GradBuilder& b) {
         b.out = reshape(b.param("x", {2, 3, 5, 7}), {-1});
       }},
      {Op::Reshape, "f16_param_reshaped",
       [](GradBuilder& b) {
         Tensor x = b.param_host("x", host_f16({9, 11}, b.rng.floats(99, -2, 2)));
         b.out = reshape(x, {3, 33}) * b.param("s", {33});
       }},
      {Op::Permute, "rank4_2031",
       [](GradBuilder& b) {
         b.out = permute(b.param("x", {2, 3, 5, 7}), {2, 0, 3, 1});
       }},
      {Op::Permute, "transpose_then_broadcast_mul",
       [](GradBuilder& b) {
         b.out = transpose(b.param("x", {7, 33})) * b.param("s", {7});  // [33,7]
       }},
      {Op::Permute, "rank3_negative_perm",
       [](GradBuilder& b) {
         b.out = permute(b.param("x", {3, 5, 4}), {-1, 0, -2});
       }},
      {Op::Slice, "negative_bounds_step3",
       [](GradBuilder& b) {
         b.out = slice(b.param("x", {7, 33}), 1, -20, -2, 3);  // columns 13, 16, ..., 28
       }},
      {Op::Slice, "axis0_step2_rank3",
       [](GradBuilder& b) {
         b.out = slice(b.param("x", {9, 4, 5}), 0, 1, 9, 2);
       }},
      {Op::Slice, "rank4_negative_axis_to_end",
       [](GradBuilder& b) {
         b.out = slice(b.param("x", {2, 3, 5, 7}), -2, -3, 100);  // last three along axis 2
       }},
      {Op::Slice, "split_with_unused_part",
       [](GradBuilder& b) {
         auto parts = split(b.param("x", {3, 11}), {2, 5, 4}, 1);
         b.out = concat({parts[2], parts[0] * 2.0f}, 1);  // parts[1] unused: zero gradient there
       }},
      {Op::Concat, "three_inputs_axis1",
       [](GradBuilder& b) {
         b.out = concat({b.param("a", {5, 3}), b.param("b", {5, 7}), b.param("c", {5, 1})}, 1);
       }},
      {Op::Concat, "same_input_twice_axis0",
       [](GradBuilder& b) {
         Tensor x = b.param("x", {2, 7});
         b.out = concat({x, b.param("y", {3, 7}), x}, 0);
       }},
      {Op::Concat, "rank4_negative_axis",
       [](GradBuilder& b) {
         b.out = concat({b.param("a", {2, 3, 4, 5}), b.param("b", {2, 3, 1, 5})}, -2);
       }},
      {Op::BroadcastTo, "1x7_to_5x3x7",
       [](GradBuilder& b) {
         b.out = broadcast_to(b.param("x", {1, 7}), {5, 3, 7});
       }},
      {Op::BroadcastTo, "3x1x1_to_rank4",
       [](GradBuilder& b) {
         b.out = broadcast_to(b.param("x", {3, 1, 1}), {2, 3, 4, 5});
       }},
      {Op::BroadcastTo, "rank0_to_7x33",
       [](GradBuilder& b) {
         b.out = broadcast_to(b.param("x", {}), {7, 33});
       }},
  };
}

std::vector<GradCase> index_cases() {
  return {
      {Op::Gather, "axis0_repeated_indices",
       [](GradBuilder& b) {
         // 33 indices into 10 rows: every row is gathered about three times.
         Tensor idx = b.input_ints("idx", {33}, 0, 9);
         b.out = gather(b.param("x", {10, 7}), idx, 0);
       }},
      {Op::Gather, "axis1_2d_negative_indices",
       [](GradBuilder& b) {
         Tensor idx = b.input_ints("idx", {2, 4}, -9, 8);
         b.out = gather(b.param("x", {5, 9, 3}), idx, 1);  // [5,2,4,3]
       }},
      {Op::Gather, "embedding_u32_repeated_consumed",
       [](GradBuilder& b) {
         Tensor ids = b.input_ints("ids", {3, 7}, 0, 12, u32);
         b.out = embedding(b.param("table", {13, 17}), ids) * b.param("s", {17});
       }},
      {Op::Gather, "last_axis_all_same_index",
       [](GradBuilder& b) {
         const std::vector<int32_t> iv(65, -2);
         Tensor idx = b.g.constant(std::span<const int32_t>(iv), {65});
         b.out = gather(b.param("x", {3, 9}), idx, -1);  // [3,65]: column 7 collects 65 gradients
       }},
      {Op::ScatterAdd, "axis0_repeated_indices",
       [](GradBuilder& b) {
         Tensor idx = b.input_ints("idx", {33}, 0, 9);
         b.out = scatter_add(b.param("base", {10, 7}), idx, b.param("upd", {33, 7}), 0);
       }},
      {Op::ScatterAdd, "axis1_rank3",
       [](GradBuilder& b) {
         Tensor idx = b.input_ints("idx", {4}, -9, 8);
         b.out = scatter_add(b.param("base", {5, 9, 3}), idx, b.param("upd", {5, 4, 3}), 1);
       }},
      {Op::ScatterAdd, "2d_indices_u32_consumed",
       [](GradBuilder& b) {
         Tensor idx = b.input_ints("idx", {3, 5}, 0, 10, u32);
         Tensor y = scatter_add(b.param("base", {11, 4}), idx, b.param("upd", {3, 5, 4}), 0);
         b.out = y * y;
       }},
  };
}

RegisterGrad reg_movement{movement_cases()};
RegisterGrad reg_index{index_cases()};

}  // namespace
}  // namespace mntest
