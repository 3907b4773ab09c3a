// The op table, declared once. Each row: enum name, printed name, kind, min and max inputs,
// shape rule, gradient rule, lowering archetype (the emitter that runs the op in a dispatch of
// its own, src/lower/emit/). Expanding MN_OP_LIST builds the Op enum here, the OpInfo table in
// src/graph/op_table.cpp, the gradient table in src/autodiff/ and the archetype table in
// src/lower/dispatch_group.cpp; a new row breaks the build until its rules exist. grad_none: the output is not
// differentiable (integers, masks) or the op is a leaf.
#pragma once

// clang-format off
#define MN_OP_LIST(X)                                                        \
  /* leaves */                                                               \
  X(Input,        "input",         Leaf,      0, 0, infer_leaf, grad_none, NoKernel)              \
  X(Parameter,    "parameter",     Leaf,      0, 0, infer_leaf, grad_none, NoKernel)              \
  X(Constant,     "constant",      Leaf,      0, 0, infer_leaf, grad_none, NoKernel)              \
  /* persistent state a session keeps between steps (a KV cache): zeros at build, updated in place */ \
  X(State,        "state",         Leaf,      0, 0, infer_leaf, grad_none, NoKernel)              \
  /* elementwise unary (f32) */                                              \
  X(Neg,          "neg",           Unary,     1, 1, infer_unary, grad_neg, Elementwise)             \
  X(Abs,          "abs",           Unary,     1, 1, infer_unary, grad_abs, Elementwise)             \
  X(Exp,          "exp",           Unary,     1, 1, infer_unary, grad_exp, Elementwise)             \
  X(Log,          "log",           Unary,     1, 1, infer_unary, grad_log, Elementwise)             \
  X(Sqrt,         "sqrt",          Unary,     1, 1, infer_unary, grad_sqrt, Elementwise)             \
  X(Rsqrt,        "rsqrt",         Unary,     1, 1, infer_unary, grad_rsqrt, Elementwise)             \
  X(Reciprocal,   "reciprocal",    Unary,     1, 1, infer_unary, grad_reciprocal, Elementwise)             \
  X(Relu,         "relu",          Unary,     1, 1, infer_unary, grad_relu, Elementwise)             \
  X(Gelu,         "gelu",          Unary,     1, 1, infer_unary, grad_gelu, Elementwise)             \
  X(GeluTanh,     "gelu_tanh",     Unary,     1, 1, infer_unary, grad_gelu_tanh, Elementwise)             \
  X(Silu,         "silu",          Unary,     1, 1, infer_unary, grad_silu, Elementwise)             \
  X(Sigmoid,      "sigmoid",       Unary,     1, 1, infer_unary, grad_sigmoid, Elementwise)             \
  X(Tanh,         "tanh",          Unary,     1, 1, infer_unary, grad_tanh, Elementwise)             \
  X(Erf,          "erf",           Unary,     1, 1, infer_unary, grad_erf, Elementwise)              \
  X(Sin,          "sin",           Unary,     1, 1, infer_unary, grad_sin, Elementwise)             \
  X(Cos,          "cos",           Unary,     1, 1, infer_unary, grad_cos, Elementwise)             \
  X(PowScalar,    "pow",           Unary,     1, 1, infer_unary, grad_pow_scalar, Elementwise)             \
  /* elementwise binary with broadcasting (f32) */                           \
  X(Add,          "add",           Binary,    2, 2, infer_binary, grad_add, Elementwise)            \
  X(Sub,          "sub",           Binary,    2, 2, infer_binary, grad_sub, Elementwise)            \
  X(Mul,          "mul",           Binary,    2, 2, infer_binary, grad_mul, Elementwise)            \
  X(Div,          "div",           Binary,    2, 2, infer_binary, grad_div, Elementwise)            \
  X(Maximum,      "maximum",       Binary,    2, 2, infer_binary, grad_maximum, Elementwise)            \
  X(Minimum,      "minimum",       Binary,    2, 2, infer_binary, grad_minimum, Elementwise)            \
  X(SwiGlu,       "swiglu",        Binary,    2, 2, infer_binary, grad_swiglu, Elementwise)             \
  /* comparisons: f32 or i32 operands, u32 mask (0 or 1) out */              \
  X(Equal,        "eq",            Compare,   2, 2, infer_compare, grad_none, Elementwise)           \
  X(NotEqual,     "ne",            Compare,   2, 2, infer_compare, grad_none, Elementwise)           \
  X(Less,         "lt",            Compare,   2, 2, infer_compare, grad_none, Elementwise)           \
  X(LessEqual,    "le",            Compare,   2, 2, infer_compare, grad_none, Elementwise)           \
  X(Greater,      "gt",            Compare,   2, 2, infer_compare, grad_none, Elementwise)           \
  X(GreaterEqual, "ge",            Compare,   2, 2, infer_compare, grad_none, Elementwise)           \
  X(Where,        "where",         Select,    3, 3, infer_where, grad_where, Elementwise)             \
  X(Cast,         "cast",          Convert,   1, 1, infer_cast, grad_cast, Elementwise)              \
  /* matmul with batch dims and transposed operands */                       \
  X(MatMul,       "matmul",        Contract,  2, 2, infer_matmul, grad_mat_mul, MatMul)            \
  /* act(matmul(a, b) + bias) + residual in one kernel; attrs.count = LinearAct */ \
  X(Linear,       "linear",        Contract,  3, 4, infer_linear, grad_linear, MatMul)             \
  /* matmul(a, b) + residual in the matmul's store (a residual block's output projection) */ \
  X(MatMulAdd,    "matmul_add",    Contract,  3, 3, infer_matmul_add, grad_matmul_add, MatMul)       \
  /* softmax(q·kᵀ·scale [+ mask])·v without the score matrix; attrs.scalar = scale, */ \
  /* attrs.count = 1 for causal, attrs.window = sliding window; k/v may have fewer heads (axis -3) */ \
  /* than q (grouped-query); an optional i32 [1] input is the position of query 0 (a KV cache) */ \
  X(Attention,    "attention",     Contract,  3, 4, infer_attention, grad_attention, Attention)          \
  /* reductions over chosen axes */                                          \
  X(Sum,          "sum",           Reduce,    1, 1, infer_reduce, grad_sum, Reduce)            \
  X(Mean,         "mean",          Reduce,    1, 1, infer_reduce, grad_mean, Reduce)            \
  X(Max,          "max",           Reduce,    1, 1, infer_reduce, grad_max, Reduce)            \
  X(ArgMax,       "argmax",        Reduce,    1, 1, infer_argmax, grad_none, Reduce)            \
  X(Softmax,      "softmax",       Row,       1, 1, infer_softmax, grad_softmax, Row)           \
  X(LogSoftmax,   "log_softmax",   Row,       1, 1, infer_softmax, grad_log_softmax, Row)           \
  X(RmsNorm,      "rms_norm",      Row,       1, 2, infer_norm, grad_rms_norm, Row)              \
  X(LayerNorm,    "layer_norm",    Row,       1, 3, infer_norm, grad_layer_norm, Row)              \
  /* rotary position embedding, half-split: x*cos + rotate_half(x)*sin, rotate_half(x) = */ \
  /* cat(-x2, x1) over the last axis; cos/sin broadcast to x. attrs.count = 1: the transpose */ \
  /* (x*cos + rotate_halfᵀ(x*sin), the gradient of x) */ \
  X(Rotary,       "rotary",        Row,       3, 3, infer_rotary, grad_rotary, Rotary)              \
  /* data movement (reshape is a view: it aliases its input) */              \
  X(Reshape,      "reshape",       Movement,  1, 1, infer_reshape, grad_reshape, Movement)           \
  X(Permute,      "permute",       Movement,  1, 1, infer_permute, grad_permute, Movement)           \
  X(Slice,        "slice",         Movement,  1, 1, infer_slice, grad_slice, Movement)             \
  X(Concat,       "concat",        Movement,  1, 64, infer_concat, grad_concat, Movement)           \
  X(BroadcastTo,  "broadcast_to",  Movement,  1, 1, infer_broadcast_to, grad_broadcast_to, Movement)      \
  X(Gather,       "gather",        Index,     2, 2, infer_gather, grad_gather, Index)            \
  X(ScatterAdd,   "scatter_add",   Index,     3, 3, infer_scatter_add, grad_scatter_add, Index)       \
  X(OneHot,       "one_hot",       Index,     1, 1, infer_one_hot, grad_none, Index)           \
  /* cache_write(state [..., N, D], rows [..., S, D], position i32 [1]) -> the state with rows */ \
  /* [position, position + S) replaced, written in place (a KV cache append) */ \
  X(CacheWrite,   "cache_write",   Index,     3, 3, infer_cache_write, grad_unsupported, Index) \
  /* assign(target, value) -> the target with value written into its bytes, in place: a */ \
  /* Graph::buffer (batch norm's running statistics) or a State. A side effect: every step runs */ \
  /* it though nothing reads it (Graph::effects), after everything else reads the old value */ \
  X(Assign,       "assign",        Binary,    2, 2, infer_assign, grad_none, Elementwise) \
  /* losses: mean over the batch, scalar out */                              \
  X(CrossEntropy, "cross_entropy", Loss,      2, 2, infer_cross_entropy, grad_cross_entropy, Index)     \
  X(MseLoss,      "mse_loss",      Loss,      2, 2, infer_pair_loss, grad_mse_loss, Reduce)         \
  X(BinaryCrossEntropy, "binary_cross_entropy", Loss, 2, 2, infer_pair_loss, grad_binary_cross_entropy, Reduce) \
  X(BinaryCrossEntropyWithLogits, "binary_cross_entropy_with_logits", Loss, 2, 2, infer_pair_loss, grad_binary_cross_entropy_with_logits, Reduce) \
  /* backward ops, made by autodiff; fused where the unfused form needs a big temporary */ \
  X(GeluBackward,         "gelu_backward",          Binary,   2, 2, infer_binary,                 grad_unsupported, Elementwise) \
  X(GeluTanhBackward,     "gelu_tanh_backward",     Binary,   2, 2, infer_binary,                 grad_unsupported, Elementwise) \
  X(SiluBackward,         "silu_backward",          Binary,   2, 2, infer_binary,                 grad_unsupported, Elementwise) \
  X(SoftmaxBackward,      "softmax_backward",       Row,      2, 2, infer_row_backward,           grad_unsupported, Backward) \
  X(LogSoftmaxBackward,   "log_softmax_backward",   Row,      2, 2, infer_row_backward,           grad_unsupported, Backward) \
  X(RmsNormBackward,      "rms_norm_backward",      Row,      2, 3, infer_row_backward,           grad_unsupported, NormBackward) \
  X(LayerNormBackward,    "layer_norm_backward",    Row,      2, 3, infer_row_backward,           grad_unsupported, NormBackward) \
  X(RmsNormWeightGrad,    "rms_norm_weight_grad",   Row,      2, 2, infer_norm_weight_grad,       grad_unsupported, Backward) \
  X(LayerNormWeightGrad,  "layer_norm_weight_grad", Row,      2, 2, infer_norm_weight_grad,       grad_unsupported, Backward) \
  X(CrossEntropyBackward, "cross_entropy_backward", Loss,     3, 3, infer_cross_entropy_backward, grad_unsupported, Backward) \
  X(SliceBackward,        "slice_backward",         Movement, 1, 1, infer_slice_backward,         grad_unsupported, Backward) \
  /* (q, k, v, o, do, delta = rowsum(do*o)[, position]) -> d q, d k or d v (attrs.axis = 0, 1, 2); */ \
  /* recomputes */ \
  /* the probabilities from o's saved log-sum-exp, never storing seq x seq */ \
  X(AttentionBackward,    "attention_backward",     Contract, 6, 7, infer_attention_backward,     grad_unsupported, Attention) \
  /* training ops, made by build_session after autodiff (src/train/update_graph.cpp): each writes */ \
  /* State leaves in place, none is differentiated; attrs.values holds their hyperparameters */ \
  /* step_scalars(counters u32 [4], settings f32 [8]) -> the step's kernels::Hyper block (u32 [8]); */ \
  /* the counters advance */ \
  X(StepScalars,          "step_scalars",           Train,    2, 2, infer_step_scalars,           grad_unsupported, Training) \
  /* accumulate(sum, grad) -> sum + grad, in the sum's bytes (a State: gradient accumulation) */ \
  X(Accumulate,           "accumulate",             Train,    2, 2, infer_accumulate,             grad_unsupported, Training) \
  /* clip_grad_norm(hyper, grad...) -> hyper with clip_scale for a global norm of attrs.scalar, in place */ \
  X(ClipGradNorm,         "clip_grad_norm",         Train,    2, 65536, infer_clip_grad_norm,     grad_unsupported, Training) \
  /* optimizer_update(param, grad, hyper[, state1[, state2]]) -> param updated in place, states too */ \
  X(OptimizerUpdate,      "optimizer_update",       Train,    3, 5, infer_optimizer_update,       grad_unsupported, Training)
// clang-format on
