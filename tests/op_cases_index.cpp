// Forward cases for gather/embedding (i32 and u32 indices, negative indices), scatter_add
// (repeated indices accumulate), one_hot.
#include "op_case.hpp"

namespace mntest {
namespace {

using namespace meganeura;

std::vector<OpCase> gather_cases() {
  return {
      {Op::Gather, "axis0_i32_negative",
       [](CaseBuilder& b) {
         b.rtol = 0;
         Tensor idx = b.input_ints("idx", {5}, -67, 66);
         b.output("y", gather(b.input("x", {67, 33}), idx, 0));
       }},
      {Op::Gather, "axis1_u32_2d_indices",
       [](CaseBuilder& b) {
         b.rtol = 0;
         Tensor idx = b.input_ints("idx", {2, 3}, 0, 32, u32);
         b.output("y", gather(b.input("x", {7, 33, 5}), idx, 1));  // [7,2,3,5]
       }},
      {Op::Gather, "last_axis_negative_axis",
       [](CaseBuilder& b) {
         b.rtol = 0;
         Tensor idx = b.input_ints("idx", {257}, -9, 8);
         b.output("y", gather(b.input("x", {3, 9}), idx, -1));  // [3,257]
       }},
      {Op::Gather, "embedding_i32",
       [](CaseBuilder& b) {
         b.rtol = 0;
         Tensor ids = b.input_ints("ids", {3, 7}, 0, 99);
         b.output("y", embedding(b.param("table", {100, 17}), ids));  // [3,7,17]
       }},
      {Op::Gather, "embedding_u32_consumed",
       [](CaseBuilder& b) {
         Tensor ids = b.input_ints("ids", {33}, 0, 1000, u32);
         b.output("y", embedding(b.param("table", {1001, 65}), ids) * 3.0f + 1.0f);
       }},
      {Op::Gather, "constant_indices",
       [](CaseBuilder& b) {
         b.rtol = 0;
         const std::vector<int32_t> iv = {0, -1, 2, 2, -5};
         Tensor idx = b.g.constant(std::span<const int32_t>(iv), {5});
         b.output("y", gather(b.input("x", {5, 3}), idx, 0));
       }},
  };
}

std::vector<OpCase> scatter_cases() {
  return {
      {Op::ScatterAdd, "axis0_repeated_indices",
       [](CaseBuilder& b) {
         // 33 updates into 10 rows: every row is hit about three times.
         Tensor idx = b.input_ints("idx", {33}, 0, 9);
         b.output("y", scatter_add(b.input("base", {10, 7}), idx, b.input("upd", {33, 7}), 0));
       }},
      {Op::ScatterAdd, "axis1_rank3",
       [](CaseBuilder& b) {
         Tensor idx = b.input_ints("idx", {4}, 0, 2);
         b.output("y", scatter_add(b.input("base", {5, 9, 3}), idx, b.input("upd", {5, 4, 3}), 1));
       }},
      {Op::ScatterAdd, "2d_indices_u32",
       [](CaseBuilder& b) {
         Tensor idx = b.input_ints("idx", {3, 5}, 0, 10, u32);
         b.output("y", scatter_add(b.input("base", {11, 4}), idx, b.input("upd", {3, 5, 4}), 0));
       }},
      {Op::ScatterAdd, "all_same_index_257",
       [](CaseBuilder& b) {
         // Every one of 257 updates lands on row 3: tests atomic (or serial) accumulation.
         b.rtol = 1e-5;
         Tensor idx = b.input_host("idx", host_i32({257}, std::vector<int32_t>(257, 3)));
         b.output("y", scatter_add(b.input("base", {7, 2}), idx, b.input("upd", {257, 2}, 0.5, 1.5), 0));
       }},
      {Op::ScatterAdd, "last_axis_embedding_grad_like",
       [](CaseBuilder& b) {
         Tensor idx = b.input_ints("idx", {67}, 0, 32);
         b.output("y", scatter_add(b.input("base", {2, 33}), idx, b.input("upd", {2, 67}), -1));
       }},
  };
}

std::vector<OpCase> one_hot_cases() {
  return {
      {Op::OneHot, "i32_7_classes5",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", one_hot(b.input_ints("idx", {7}, 0, 4), 5));
       }},
      {Op::OneHot, "rank3_i32_classes33",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", one_hot(b.input_ints("idx", {2, 3, 5}, 0, 32), 33));
       }},
      {Op::OneHot, "u32_257_classes10",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", one_hot(b.input_ints("idx", {257}, 0, 9, u32), 10));
       }},
      {Op::OneHot, "one_class",
       [](CaseBuilder& b) {
         b.rtol = 0;
         b.output("y", one_hot(b.input_ints("idx", {3}, 0, 0), 1));
       }},
  };
}

Register r1{gather_cases()};
Register r2{scatter_cases()};
Register r3{one_hot_cases()};

}  // namespace
}  // namespace mntest
