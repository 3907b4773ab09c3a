// The op table, declared once. Each row: enum name, printed name, kind, min and max inputs,
// shape rule. Expanding MN_OP_LIST builds the Op enum here and the OpInfo table in
// src/graph/op_table.cpp; a new row breaks the build until every switch over Op handles it.
#pragma once

// clang-format off
#define MN_OP_LIST(X)                                                        \
  /* leaves */                                                               \
  X(Input,        "input",         Leaf,      0, 0, infer_leaf)              \
  X(Parameter,    "parameter",     Leaf,      0, 0, infer_leaf)              \
  X(Constant,     "constant",      Leaf,      0, 0, infer_leaf)              \
  /* elementwise unary (f32) */                                              \
  X(Neg,          "neg",           Unary,     1, 1, infer_unary)             \
  X(Abs,          "abs",           Unary,     1, 1, infer_unary)             \
  X(Exp,          "exp",           Unary,     1, 1, infer_unary)             \
  X(Log,          "log",           Unary,     1, 1, infer_unary)             \
  X(Sqrt,         "sqrt",          Unary,     1, 1, infer_unary)             \
  X(Rsqrt,        "rsqrt",         Unary,     1, 1, infer_unary)             \
  X(Reciprocal,   "reciprocal",    Unary,     1, 1, infer_unary)             \
  X(Relu,         "relu",          Unary,     1, 1, infer_unary)             \
  X(Gelu,         "gelu",          Unary,     1, 1, infer_unary)             \
  X(GeluTanh,     "gelu_tanh",     Unary,     1, 1, infer_unary)             \
  X(Silu,         "silu",          Unary,     1, 1, infer_unary)             \
  X(Sigmoid,      "sigmoid",       Unary,     1, 1, infer_unary)             \
  X(Tanh,         "tanh",          Unary,     1, 1, infer_unary)             \
  X(Sin,          "sin",           Unary,     1, 1, infer_unary)             \
  X(Cos,          "cos",           Unary,     1, 1, infer_unary)             \
  X(PowScalar,    "pow",           Unary,     1, 1, infer_unary)             \
  /* elementwise binary with broadcasting (f32) */                           \
  X(Add,          "add",           Binary,    2, 2, infer_binary)            \
  X(Sub,          "sub",           Binary,    2, 2, infer_binary)            \
  X(Mul,          "mul",           Binary,    2, 2, infer_binary)            \
  X(Div,          "div",           Binary,    2, 2, infer_binary)            \
  X(Maximum,      "maximum",       Binary,    2, 2, infer_binary)            \
  X(Minimum,      "minimum",       Binary,    2, 2, infer_binary)            \
  /* comparisons: f32 or i32 operands, u32 mask (0 or 1) out */              \
  X(Equal,        "eq",            Compare,   2, 2, infer_compare)           \
  X(NotEqual,     "ne",            Compare,   2, 2, infer_compare)           \
  X(Less,         "lt",            Compare,   2, 2, infer_compare)           \
  X(LessEqual,    "le",            Compare,   2, 2, infer_compare)           \
  X(Greater,      "gt",            Compare,   2, 2, infer_compare)           \
  X(GreaterEqual, "ge",            Compare,   2, 2, infer_compare)           \
  X(Where,        "where",         Select,    3, 3, infer_where)             \
  X(Cast,         "cast",          Convert,   1, 1, infer_cast)              \
  /* matmul with batch dims and transposed operands */                       \
  X(MatMul,       "matmul",        Contract,  2, 2, infer_matmul)            \
  /* reductions over chosen axes */                                          \
  X(Sum,          "sum",           Reduce,    1, 1, infer_reduce)            \
  X(Mean,         "mean",          Reduce,    1, 1, infer_reduce)            \
  X(Max,          "max",           Reduce,    1, 1, infer_reduce)            \
  X(ArgMax,       "argmax",        Reduce,    1, 1, infer_argmax)            \
  X(Softmax,      "softmax",       Row,       1, 1, infer_softmax)           \
  X(LogSoftmax,   "log_softmax",   Row,       1, 1, infer_softmax)           \
  X(RmsNorm,      "rms_norm",      Row,       1, 2, infer_norm)              \
  X(LayerNorm,    "layer_norm",    Row,       1, 3, infer_norm)              \
  /* data movement (reshape is a view: it aliases its input) */              \
  X(Reshape,      "reshape",       Movement,  1, 1, infer_reshape)           \
  X(Permute,      "permute",       Movement,  1, 1, infer_permute)           \
  X(Slice,        "slice",         Movement,  1, 1, infer_slice)             \
  X(Concat,       "concat",        Movement,  1, 64, infer_concat)           \
  X(BroadcastTo,  "broadcast_to",  Movement,  1, 1, infer_broadcast_to)      \
  X(Gather,       "gather",        Index,     2, 2, infer_gather)            \
  X(ScatterAdd,   "scatter_add",   Index,     3, 3, infer_scatter_add)       \
  X(OneHot,       "one_hot",       Index,     1, 1, infer_one_hot)           \
  /* losses: mean over the batch, scalar out */                              \
  X(CrossEntropy, "cross_entropy", Loss,      2, 2, infer_cross_entropy)     \
  X(MseLoss,      "mse_loss",      Loss,      2, 2, infer_pair_loss)         \
  X(BinaryCrossEntropy, "binary_cross_entropy", Loss, 2, 2, infer_pair_loss) \
  X(BinaryCrossEntropyWithLogits, "binary_cross_entropy_with_logits", Loss, 2, 2, infer_pair_loss)
// clang-format on
