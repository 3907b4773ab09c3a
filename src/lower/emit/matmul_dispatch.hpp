// A matmul dispatch as emit_matmul.cpp plans it, shared with the staging of its operands
// (emit_staging.cpp): what every call of the dispatch shares, and the staging decisions.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "lower/emit/emitter.hpp"
#include "lower/matmul_tiers.hpp"

namespace meganeura::lower {

// What every call of one matmul dispatch shares.
struct Dispatch {
  int id = -1;  // the first product: its A, epilogue and label
  kernels::MatMulParams p{};
  MatMulPlan plan;
  std::string what;
  int64_t M = 0;
  uint64_t n_total = 0;  // columns of all its products
  bool glu_here = false, norm_a_here = false;
  int a_tensor = -1, weights = -1, outputs = -1, bias = -1, res = -1;
  std::vector<uint32_t> epilogue, layout;
  std::array<uint32_t, 3> groups{};
};

// Whether the product stages its operands before it (StageF16, or the kernels that wrote them) and
// runs MatMulCoopStaged(Tall)NV: where each staged value feeds many products, the weights are
// staged once, or A was staged by its producer (emit_staging.cpp).
bool stage_before(const Emitter& e, const Dispatch& d);
// Stages A (unless its producer did) and every group's B, and points the dispatch at the copies.
void stage_operands(Emitter& e, Dispatch& d);

}  // namespace meganeura::lower
