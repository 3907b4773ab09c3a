// An rms_norm / layer_norm of a single product's result (a projection and the norm after it):
// a split-K product normalises its rows in the summing pass; on other tiers the norm's call
// follows the product's (emit_matmul.cpp).
#include <algorithm>

#include "lower/emit/emitters.hpp"
#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

namespace {

// norm(?product[, ?weight[, ?bias]]) in each form the norm ops take.
const std::vector<Pattern>& norm_forms() {
  static const std::vector<Pattern> forms = {
      node(Op::RmsNorm, {var("product")}),
      node(Op::RmsNorm, {var("product"), var("weight")}),
      node(Op::LayerNorm, {var("product")}),
      node(Op::LayerNorm, {var("product"), var("weight")}),
      node(Op::LayerNorm, {var("product"), var("weight"), var("bias")}),
  };
  return forms;
}

}  // namespace

void norm_after_matmul(PassContext& c, Grouping& groups) {
  for (int id = 0; id < c.g.size(); ++id) {
    const Node& norm = c.node(id);
    if (!c.is_live(id) || norm.dtype != DType::f32) continue;
    const auto m = match_any(c.g, id, norm_forms());
    if (!m) continue;
    const int product = (*m)["product"];
    if (archetype_of(c.node(product).op) != Archetype::MatMul || !groups.alone(product) || !groups.alone(id) ||
        c.node(product).shape != norm.shape || numel(norm.shape) == 0 || norm.shape.back() > kMaxFusedNormDim)
      continue;
    // The norm runs where the product does: its weight and bias must be ready there.
    if (!std::all_of(norm.inputs.begin() + 1, norm.inputs.end(), [&](int in) { return in < product; })) continue;
    groups.absorb(groups.owner(product), id, FusedAs::Norm);
  }
}

}  // namespace meganeura::lower
