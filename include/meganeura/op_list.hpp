// The op table, declared once. Each row: enum name, printed name, kind, min and max inputs,
// shape rule, gradient rule. Expanding MN_OP_LIST builds the Op enum here, the OpInfo table in
// src/graph/op_table.cpp and the gradient table in src/autodiff/; a new row breaks the build
// until its shape rule and gradient rule exist. grad_none: the output is not differentiable
// (integers, masks) or the op is a leaf.
#pragma once

// clang-format off
#define MN_OP_LIST(X)                                                        \
  /* leaves */                                                               \
  X(Input,        "input",         Leaf,      0, 0, infer_leaf, grad_none)              \
  X(Parameter,    "parameter",     Leaf,      0, 0, infer_leaf, grad_none)              \
  X(Constant,     "constant",      Leaf,      0, 0, infer_leaf, grad_none)              \
  /* persistent state a session keeps between steps (a KV cache): zeros at build, updated in place */ \
  X(State,        "state",         Leaf,      0, 0, infer_leaf, grad_none)              \
  /* elementwise unary (f32) */                                              \
  X(Neg,          "neg",           Unary,     1, 1, infer_unary, grad_neg)             \
  X(Abs,          "abs",           Unary,     1, 1, infer_unary, grad_abs)             \
  X(Exp,          "exp",           Unary,     1, 1, infer_unary, grad_exp)             \
  X(Log,          "log",           Unary,     1, 1, infer_unary, grad_log)             \
  X(Sqrt,         "sqrt",          Unary,     1, 1, infer_unary, grad_sqrt)             \
  X(Rsqrt,        "rsqrt",         Unary,     1, 1, infer_unary, grad_rsqrt)             \
  X(Reciprocal,   "reciprocal",    Unary,     1, 1, infer_unary, grad_reciprocal)             \
  X(Relu,         "relu",          Unary,     1, 1, infer_unary, grad_relu)             \
  X(Gelu,         "gelu",          Unary,     1, 1, infer_unary, grad_gelu)             \
  X(GeluTanh,     "gelu_tanh",     Unary,     1, 1, infer_unary, grad_gelu_tanh)             \
  X(Silu,         "silu",          Unary,     1, 1, infer_unary, grad_silu)             \
  X(Sigmoid,      "sigmoid",       Unary,     1, 1, infer_unary, grad_sigmoid)             \
  X(Tanh,         "tanh",          Unary,     1, 1, infer_unary, grad_tanh)             \
  X(Erf,          "erf",           Unary,     1, 1, infer_unary, grad_erf)              \
  X(Sin,          "sin",           Unary,     1, 1, infer_unary, grad_sin)             \
  X(Cos,          "cos",           Unary,     1, 1, infer_unary, grad_cos)             \
  X(PowScalar,    "pow",           Unary,     1, 1, infer_unary, grad_pow_scalar)             \
  /* elementwise binary with broadcasting (f32) */                           \
  X(Add,          "add",           Binary,    2, 2, infer_binary, grad_add)            \
  X(Sub,          "sub",           Binary,    2, 2, infer_binary, grad_sub)            \
  X(Mul,          "mul",           Binary,    2, 2, infer_binary, grad_mul)            \
  X(Div,          "div",           Binary,    2, 2, infer_binary, grad_div)            \
  X(Maximum,      "maximum",       Binary,    2, 2, infer_binary, grad_maximum)            \
  X(Minimum,      "minimum",       Binary,    2, 2, infer_binary, grad_minimum)            \
  X(SwiGlu,       "swiglu",        Binary,    2, 2, infer_binary, grad_swiglu)             \
  /* comparisons: f32 or i32 operands, u32 mask (0 or 1) out */              \
  X(Equal,        "eq",            Compare,   2, 2, infer_compare, grad_none)           \
  X(NotEqual,     "ne",            Compare,   2, 2, infer_compare, grad_none)           \
  X(Less,         "lt",            Compare,   2, 2, infer_compare, grad_none)           \
  X(LessEqual,    "le",            Compare,   2, 2, infer_compare, grad_none)           \
  X(Greater,      "gt",            Compare,   2, 2, infer_compare, grad_none)           \
  X(GreaterEqual, "ge",            Compare,   2, 2, infer_compare, grad_none)           \
  X(Where,        "where",         Select,    3, 3, infer_where, grad_where)             \
  X(Cast,         "cast",          Convert,   1, 1, infer_cast, grad_cast)              \
  /* matmul with batch dims and transposed operands */                       \
  X(MatMul,       "matmul",        Contract,  2, 2, infer_matmul, grad_mat_mul)            \
  /* act(matmul(a, b) + bias) + residual in one kernel; attrs.count = LinearAct */ \
  X(Linear,       "linear",        Contract,  3, 4, infer_linear, grad_linear)             \
  /* matmul(a, b) + residual in the matmul's store (a residual block's output projection) */ \
  X(MatMulAdd,    "matmul_add",    Contract,  3, 3, infer_matmul_add, grad_matmul_add)       \
  /* softmax(q·kᵀ·scale [+ mask])·v without the score matrix; attrs.scalar = scale, */ \
  /* attrs.count = 1 for causal, attrs.window = sliding window; k/v may have fewer heads (axis -3) */ \
  /* than q (grouped-query); an optional i32 [1] input is the position of query 0 (a KV cache) */ \
  X(Attention,    "attention",     Contract,  3, 4, infer_attention, grad_attention)          \
  /* reductions over chosen axes */                                          \
  X(Sum,          "sum",           Reduce,    1, 1, infer_reduce, grad_sum)            \
  X(Mean,         "mean",          Reduce,    1, 1, infer_reduce, grad_mean)            \
  X(Max,          "max",           Reduce,    1, 1, infer_reduce, grad_max)            \
  X(ArgMax,       "argmax",        Reduce,    1, 1, infer_argmax, grad_none)            \
  X(Softmax,      "softmax",       Row,       1, 1, infer_softmax, grad_softmax)           \
  X(LogSoftmax,   "log_softmax",   Row,       1, 1, infer_softmax, grad_log_softmax)           \
  X(RmsNorm,      "rms_norm",      Row,       1, 2, infer_norm, grad_rms_norm)              \
  X(LayerNorm,    "layer_norm",    Row,       1, 3, infer_norm, grad_layer_norm)              \
  /* rotary position embedding, half-split: x*cos + rotate_half(x)*sin, rotate_half(x) = */ \
  /* cat(-x2, x1) over the last axis; cos/sin broadcast to x. attrs.count = 1: the transpose */ \
  /* (x*cos + rotate_halfᵀ(x*sin), the gradient of x) */ \
  X(Rotary,       "rotary",        Row,       3, 3, infer_rotary, grad_rotary)              \
  /* data movement (reshape is a view: it aliases its input) */              \
  X(Reshape,      "reshape",       Movement,  1, 1, infer_reshape, grad_reshape)           \
  X(Permute,      "permute",       Movement,  1, 1, infer_permute, grad_permute)           \
  X(Slice,        "slice",         Movement,  1, 1, infer_slice, grad_slice)             \
  X(Concat,       "concat",        Movement,  1, 64, infer_concat, grad_concat)           \
  X(BroadcastTo,  "broadcast_to",  Movement,  1, 1, infer_broadcast_to, grad_broadcast_to)      \
  X(Gather,       "gather",        Index,     2, 2, infer_gather, grad_gather)            \
  X(ScatterAdd,   "scatter_add",   Index,     3, 3, infer_scatter_add, grad_scatter_add)       \
  X(OneHot,       "one_hot",       Index,     1, 1, infer_one_hot, grad_none)           \
  /* cache_write(state [..., N, D], rows [..., S, D], position i32 [1]) -> the state with rows */ \
  /* [position, position + S) replaced, written in place (a KV cache append) */ \
  X(CacheWrite,   "cache_write",   Index,     3, 3, infer_cache_write, grad_unsupported) \
  /* losses: mean over the batch, scalar out */                              \
  X(CrossEntropy, "cross_entropy", Loss,      2, 2, infer_cross_entropy, grad_cross_entropy)     \
  X(MseLoss,      "mse_loss",      Loss,      2, 2, infer_pair_loss, grad_mse_loss)         \
  X(BinaryCrossEntropy, "binary_cross_entropy", Loss, 2, 2, infer_pair_loss, grad_binary_cross_entropy) \
  X(BinaryCrossEntropyWithLogits, "binary_cross_entropy_with_logits", Loss, 2, 2, infer_pair_loss, grad_binary_cross_entropy_with_logits) \
  /* backward ops, made by autodiff; fused where the unfused form needs a big temporary */ \
  X(GeluBackward,         "gelu_backward",          Binary,   2, 2, infer_binary,                 grad_unsupported) \
  X(GeluTanhBackward,     "gelu_tanh_backward",     Binary,   2, 2, infer_binary,                 grad_unsupported) \
  X(SiluBackward,         "silu_backward",          Binary,   2, 2, infer_binary,                 grad_unsupported) \
  X(SoftmaxBackward,      "softmax_backward",       Row,      2, 2, infer_row_backward,           grad_unsupported) \
  X(LogSoftmaxBackward,   "log_softmax_backward",   Row,      2, 2, infer_row_backward,           grad_unsupported) \
  X(RmsNormBackward,      "rms_norm_backward",      Row,      2, 3, infer_row_backward,           grad_unsupported) \
  X(LayerNormBackward,    "layer_norm_backward",    Row,      2, 3, infer_row_backward,           grad_unsupported) \
  X(RmsNormWeightGrad,    "rms_norm_weight_grad",   Row,      2, 2, infer_norm_weight_grad,       grad_unsupported) \
  X(LayerNormWeightGrad,  "layer_norm_weight_grad", Row,      2, 2, infer_norm_weight_grad,       grad_unsupported) \
  X(CrossEntropyBackward, "cross_entropy_backward", Loss,     3, 3, infer_cross_entropy_backward, grad_unsupported) \
  X(SliceBackward,        "slice_backward",         Movement, 1, 1, infer_slice_backward,         grad_unsupported) \
  /* (q, k, v, o, do, delta = rowsum(do*o)[, position]) -> d q, d k or d v (attrs.axis = 0, 1, 2); */ \
  /* recomputes */ \
  /* the probabilities from o's saved log-sum-exp, never storing seq x seq */ \
  X(AttentionBackward,    "attention_backward",     Contract, 6, 7, infer_attention_backward,     grad_unsupported)
// clang-format on
