// Shape rules of the training ops (op_list.hpp): they write their State operands in place.
#include "graph/op_table.hpp"
#include "graph/train_ops.hpp"

namespace meganeura::graph {

namespace {

void require_hyper(InferContext& c, size_t i) {
  c.require_dtype(i, {u32}, "hyper block");
  if (c.shape(i) != Shape{kHyperWords})
    c.shape_error("the hyper block must be u32 [" + std::to_string(kHyperWords) + "]");
}

void require_like(InferContext& c, size_t i, size_t like, std::string_view role) {
  c.require_dtype(i, {f32}, role);
  if (c.shape(i) != c.shape(like))
    c.shape_error(std::string(role) + " " + shape_str(c.shape(i)) + " differs from " + shape_str(c.shape(like)));
}

}  // namespace

OutType infer_step_scalars(InferContext& c) {
  c.require_dtype(0, {u32}, "step counters");
  if (c.shape(0) != Shape{kCounterWords})
    c.shape_error("the step counters must be u32 [" + std::to_string(kCounterWords) + "]");
  c.require_dtype(1, {f32}, "step settings");
  if (c.shape(1) != Shape{kStepValues})
    c.shape_error("the step settings must be f32 [" + std::to_string(kStepValues) + "]");
  return {{kHyperWords}, u32};
}

OutType infer_accumulate(InferContext& c) {
  c.require_dtype(0, {f32}, "sum");
  require_like(c, 1, 0, "gradient");
  return {c.shape(0), f32};
}

// assign(target, value): one shape, f32.
OutType infer_assign(InferContext& c) {
  c.require_dtype(0, {f32}, "target");
  if (c.dtype(1) != c.dtype(0)) c.dtype_error("the value's dtype differs from the target's");
  if (c.shape(1) != c.shape(0))
    c.shape_error("value " + shape_str(c.shape(1)) + " differs from the target " + shape_str(c.shape(0)));
  return {c.shape(0), c.dtype(0)};
}

OutType infer_clip_grad_norm(InferContext& c) {
  require_hyper(c, 0);
  for (size_t i = 1; i < c.inputs.size(); ++i) c.require_dtype(i, {f32}, "gradient");
  return {{kHyperWords}, u32};
}

OutType infer_optimizer_update(InferContext& c) {
  c.require_dtype(0, {f32}, "parameter");
  require_like(c, 1, 0, "gradient");
  require_hyper(c, 2);
  for (size_t i = 3; i < c.inputs.size(); ++i) require_like(c, i, 0, "optimizer state");
  if (c.attrs.values.size() != kUpdateValues) c.shape_error("needs " + std::to_string(kUpdateValues) + " values");
  return {c.shape(0), f32};
}

}  // namespace meganeura::graph
