// The op table (built from MN_OP_LIST) and the shape rules it points to.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "meganeura/error.hpp"
#include "meganeura/graph.hpp"

namespace meganeura::graph {

// One input as a shape rule sees it.
struct InputType {
  Shape shape;
  DType dtype;
  std::string label;  // how errors name it ("%7 blocks.0.attn")
};

// What a shape rule sees: the op, its inputs' types and (mutable, to normalise) attributes, and
// the label of the node being built, for error messages. No graph: the e-graph uses the same
// rules for its classes.
struct InferContext {
  Op op;
  std::vector<InputType> inputs;
  Attrs& attrs;
  std::string label;

  const Shape& shape(size_t i) const { return inputs[i].shape; }
  DType dtype(size_t i) const { return inputs[i].dtype; }
  int rank(size_t i) const { return static_cast<int>(shape(i).size()); }
  // "shape error in node "%12 blocks.3" (matmul): <msg>"
  [[noreturn]] void shape_error(const std::string& msg) const;
  [[noreturn]] void dtype_error(const std::string& msg) const;
  // Normalises a possibly negative axis against `rank`, or throws naming the op.
  int64_t axis(int64_t a, int rank) const;
  // Requires input i to have one of the listed dtypes.
  void require_dtype(size_t i, std::initializer_list<DType> allowed, std::string_view role) const;
};

struct OutType {
  Shape shape;
  DType dtype;
};

using InferFn = OutType (*)(InferContext&);

struct OpInfo {
  std::string_view name;
  OpKind kind;
  int min_inputs, max_inputs;
  InferFn infer;
};

const OpInfo& op_info(Op op);

// Runs op's shape rule: the output type, with attrs normalised. Throws ShapeError/DTypeError.
OutType infer(Op op, std::vector<InputType> inputs, Attrs& attrs, const std::string& label);

// NumPy broadcasting of two shapes; nullopt-like empty result with ok=false when incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape& out);

// Shape rules (src/graph/shape_rules.cpp), one per row of the op table.
#define MN_DECLARE_RULE(e, name, kind, lo, hi, rule, grad, lowering) OutType rule(InferContext&);
MN_OP_LIST(MN_DECLARE_RULE)
#undef MN_DECLARE_RULE

}  // namespace meganeura::graph
