// Every rewrite rule, in one place. Each reads: name, left-hand pattern, guard, right-hand
// side. Fusions target ops the lowering already has kernels for.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "graph/op_table.hpp"
#include "meganeura/ops.hpp"
#include "optimize/optimize.hpp"
#include "optimize/rule_helpers.hpp"

namespace meganeura::optimize {
namespace {

Pattern x() { return var("x"); }

// The rotated half's concat and its two slices (the upper half negated, then the lower).
bool rotary_guard(const EGraph& g, const Match& m) {
  const ClassData& xd = d(g, m, "x");
  if (xd.dtype != f32 || xd.shape.empty() || g.data(m.root).shape != xd.shape) return false;
  if (d(g, m, "cos").dtype != f32 || d(g, m, "sin").dtype != f32) return false;
  const int64_t rank = static_cast<int64_t>(xd.shape.size()), dim = xd.shape.back(), half = dim / 2;
  auto last = [&](int64_t axis) { return axis == rank - 1 || axis == -1; };
  const Attrs &cat = attrs_of(g, m, "concat"), &hi = attrs_of(g, m, "upper"), &lo = attrs_of(g, m, "lower");
  return dim % 2 == 0 && last(cat.axis) && last(hi.axis) && last(lo.axis) && hi.start == half && hi.end == dim &&
         hi.step == 1 && lo.start == 0 && lo.end == half && lo.step == 1;
}

Pattern c() { return var("c"); }

// act(linear(a, b, bias)) -> linear(a, b, bias) with the activation in its epilogue
template <LinearAct Act>
std::optional<ClassId> linear_act(EGraph& g, const Match& m) {
  Attrs a = attrs_of(g, m, "product");
  a.count = Act;
  return make(g, Op::Linear, {v(m, "a"), v(m, "b"), v(m, "bias")}, a);
}

// 0.5 * x * (1 + erf(x / s)) with s = sqrt(2) (Divides) or x * s with s = 1/sqrt(2).
template <bool Divides>
bool gelu_erf_guard(const EGraph& g, const Match& m) {
  const ClassData& xd = d(g, m, "x");
  return xd.dtype == f32 && g.data(m.root).shape == xd.shape && near_scalar(g, m, "half", 0.5) &&
         near_scalar(g, m, "one", 1.0) && near_scalar(g, m, "s", Divides ? 1.4142135623730951 : 0.7071067811865476);
}

bool last_axis_keepdim(const Attrs& a) { return a.keepdim && a.axes.size() == 1; }
bool keepdim_single_axis(const Attrs& a) { return a.keepdim && a.axes.size() == 1; }

std::optional<ClassId> to_x(EGraph&, const Match& m) { return v(m, "x"); }

void add_algebra_rules(std::vector<Rewrite>& r) {
  // ---- algebra ----------------------------------------------------------------------------------
  r.push_back({"neg-neg", node(Op::Neg, {node(Op::Neg, {x()})}), nullptr, to_x});
  r.push_back({"mul-one", node(Op::Mul, {x(), c()}),
               [](const EGraph& g, const Match& m) { return is_const(g, m, "c", 1) && keeps_shape(g, m); }, to_x});
  r.push_back({"one-mul", node(Op::Mul, {c(), x()}),
               [](const EGraph& g, const Match& m) { return is_const(g, m, "c", 1) && keeps_shape(g, m); }, to_x});
  r.push_back({"add-zero", node(Op::Add, {x(), c()}),
               [](const EGraph& g, const Match& m) { return is_const(g, m, "c", 0) && keeps_shape(g, m); }, to_x});
  r.push_back({"zero-add", node(Op::Add, {c(), x()}),
               [](const EGraph& g, const Match& m) { return is_const(g, m, "c", 0) && keeps_shape(g, m); }, to_x});
  r.push_back({"sub-zero", node(Op::Sub, {x(), c()}),
               [](const EGraph& g, const Match& m) { return is_const(g, m, "c", 0) && keeps_shape(g, m); }, to_x});
  r.push_back({"div-one", node(Op::Div, {x(), c()}),
               [](const EGraph& g, const Match& m) { return is_const(g, m, "c", 1) && keeps_shape(g, m); }, to_x});

  // x + scatter_add(0, i, u) -> scatter_add(x, i, u): a tied embedding's gradient (the gather's
  // scatter into zeros, plus the output projection's) becomes one scatter into the projection's.
  auto scatter_into = [](const EGraph& g, const Match& m) {
    const ClassData& xd = d(g, m, "x");
    return is_const(g, m, "z", 0) && xd.dtype == f32 && xd.shape == g.data(m.root).shape &&
           d(g, m, "z").shape == xd.shape;
  };
  auto scatter_x = [](EGraph& g, const Match& m) -> std::optional<ClassId> {
    return make(g, Op::ScatterAdd, {v(m, "x"), v(m, "i"), v(m, "u")}, attrs_of(g, m, "scatter"));
  };
  Pattern scatter_zero = node(Op::ScatterAdd, {var("z"), var("i"), var("u")}).as("scatter");
  r.push_back({"add-scatter-into", node(Op::Add, {x(), scatter_zero}), scatter_into, scatter_x});
  r.push_back({"scatter-into-add", node(Op::Add, {scatter_zero, x()}), scatter_into, scatter_x});
}

void add_movement_rules(std::vector<Rewrite>& r) {
  // ---- data movement ----------------------------------------------------------------------------
  r.push_back({"reshape-identity", node(Op::Reshape, {x()}), keeps_shape, to_x});
  r.push_back({"reshape-reshape", node(Op::Reshape, {node(Op::Reshape, {x()})}), nullptr,
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 return make(g, Op::Reshape, {v(m, "x")}, root_attrs(g, m));
               }});
  r.push_back({"permute-permute", node(Op::Permute, {node(Op::Permute, {x()}).as("inner")}), nullptr,
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 const auto &outer = root_attrs(g, m).axes, &inner = attrs_of(g, m, "inner").axes;
                 Attrs a;
                 bool identity = true;
                 for (size_t j = 0; j < outer.size(); ++j) {  // permute(permute(x, p1), p2) = permute(x, p1[p2[j]])
                   a.axes.push_back(inner[static_cast<size_t>(outer[j])]);
                   identity = identity && a.axes.back() == static_cast<int64_t>(j);
                 }
                 return identity ? v(m, "x") : make(g, Op::Permute, {v(m, "x")}, a);
               }});
}

void add_fusion_rules(std::vector<Rewrite>& r) {
  // ---- fusions into existing kernels ------------------------------------------------------------
  auto silu = [](EGraph& g, const Match& m) -> std::optional<ClassId> { return make(g, Op::Silu, {v(m, "x")}); };
  r.push_back({"silu", node(Op::Mul, {x(), node(Op::Sigmoid, {x()})}), nullptr, silu});
  r.push_back({"silu-swapped", node(Op::Mul, {node(Op::Sigmoid, {x()}), x()}), nullptr, silu});

  // silu(g) * u  ->  swiglu(g, u): the shapes broadcast as mul's do, so the result keeps mul's shape
  auto swiglu_guard = [](const EGraph& g, const Match& m) {
    const ClassData &gd = d(g, m, "g"), &ud = d(g, m, "u");
    Shape out;
    return gd.dtype == f32 && ud.dtype == f32 && g.data(m.root).dtype == f32 &&
           graph::broadcast_shapes(gd.shape, ud.shape, out) && out == g.data(m.root).shape;
  };
  auto swiglu = [](EGraph& g, const Match& m) -> std::optional<ClassId> {
    return make(g, Op::SwiGlu, {v(m, "g"), v(m, "u")});
  };
  r.push_back({"swiglu", node(Op::Mul, {node(Op::Silu, {var("g")}), var("u")}), swiglu_guard, swiglu});
  r.push_back({"swiglu-swapped", node(Op::Mul, {var("u"), node(Op::Silu, {var("g")})}), swiglu_guard, swiglu});

  // x*cos + cat(-x[..., D/2:], x[..., :D/2])*sin  ->  rotary(x, cos, sin): Hugging Face's
  // rotate_half spelling of the rotary embedding, as ONNX exports and models from primitives write it.
  auto rotated = [] {
    return node(
        Op::Mul,
        {node(Op::Concat, {node(Op::Neg, {node(Op::Slice, {x()}).as("upper")}), node(Op::Slice, {x()}).as("lower")})
             .as("concat"),
         var("sin")});
  };
  auto rotary = [](EGraph& g, const Match& m) -> std::optional<ClassId> {
    return make(g, Op::Rotary, {v(m, "x"), v(m, "cos"), v(m, "sin")});
  };
  r.push_back({"rotary", node(Op::Add, {node(Op::Mul, {x(), var("cos")}), rotated()}), rotary_guard, rotary});
  r.push_back({"rotary-swapped", node(Op::Add, {rotated(), node(Op::Mul, {x(), var("cos")})}), rotary_guard, rotary});

  // x * rsqrt(mean(x*x, last axis, keepdim) + eps)  ->  rms_norm(x, eps)
  auto rms = [](EGraph& g, const Match& m) -> std::optional<ClassId> {
    Attrs a;
    a.scalar = *d(g, m, "eps").constant;
    return make(g, Op::RmsNorm, {v(m, "x")}, a);
  };
  auto rms_guard = [](const EGraph& g, const Match& m) {
    const ClassData& xd = d(g, m, "x");
    const Attrs& mean = attrs_of(g, m, "mean");
    return !xd.shape.empty() && mean.axes[0] == static_cast<int64_t>(xd.shape.size()) - 1 &&
           d(g, m, "eps").constant.has_value() && d(g, m, "eps").shape.empty();
  };
  auto mean_sq = [](Pattern sq) { return node(Op::Mean, {std::move(sq)}, last_axis_keepdim).as("mean"); };
  r.push_back({"rms-norm",
               node(Op::Mul, {x(), node(Op::Rsqrt, {node(Op::Add, {mean_sq(node(Op::Mul, {x(), x()})), var("eps")})})}),
               rms_guard, rms});
  r.push_back({"rms-norm-pow",
               node(Op::Mul,
                    {x(), node(Op::Rsqrt, {node(Op::Add, {mean_sq(node(Op::PowScalar, {x()},
                                                                       [](const Attrs& a) { return a.scalar == 2.0; })),
                                                          var("eps")})})}),
               rms_guard, rms});
  // rms_norm(x) * w (w the size of the last axis)  ->  rms_norm(x, w)
  r.push_back({"rms-norm-weight", node(Op::Mul, {node(Op::RmsNorm, {x()}).as("norm"), var("w")}),
               [](const EGraph& g, const Match& m) {
                 const Shape& xs = d(g, m, "x").shape;
                 return d(g, m, "w").shape == Shape{xs.back()} && d(g, m, "w").dtype == f32;
               },
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 return make(g, Op::RmsNorm, {v(m, "x"), v(m, "w")}, attrs_of(g, m, "norm"));
               }});

  // exp(x - max(x)) / sum(exp(x - max(x)))  ->  softmax(x), along the one reduced axis
  auto stable = [](const char* max) {
    return node(Op::Exp, {node(Op::Sub, {x(), node(Op::Max, {x()}, keepdim_single_axis).as(max)})});
  };
  r.push_back({"softmax",
               node(Op::Div, {stable("max"), node(Op::Sum, {stable("summed max")}, keepdim_single_axis).as("sum")}),
               [](const EGraph& g, const Match& m) {
                 const auto& axes = attrs_of(g, m, "sum").axes;  // both maxes reduce the sum's axis
                 return attrs_of(g, m, "max").axes == axes && attrs_of(g, m, "summed max").axes == axes;
               },
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 Attrs a;
                 a.axis = attrs_of(g, m, "sum").axes[0];
                 return make(g, Op::Softmax, {v(m, "x")}, a);
               }});
  r.push_back(
      {"softmax-unstabilised",
       node(Op::Div, {node(Op::Exp, {x()}), node(Op::Sum, {node(Op::Exp, {x()})}, keepdim_single_axis).as("sum")}),
       nullptr, [](EGraph& g, const Match& m) -> std::optional<ClassId> {
         Attrs a;
         a.axis = attrs_of(g, m, "sum").axes[0];
         return make(g, Op::Softmax, {v(m, "x")}, a);
       }});
}

void add_layer_norm_rules(std::vector<Rewrite>& r) {
  // ---- layer norm -------------------------------------------------------------------------------
  // c = x - mean(x), var = mean(c*c) (or mean(pow(c, 2))), both over the last axis with keepdim:
  // c * rsqrt(var + eps), rsqrt(var + eps) * c, c / sqrt(var + eps)  ->  layer_norm(x, eps)
  // Every mean in the match must reduce the last axis: a mean over another axis is not a layer norm.
  auto ln_guard = [](const EGraph& g, const Match& m) {
    const ClassData& xd = d(g, m, "x");
    if (xd.shape.empty() || xd.dtype != f32 || g.data(m.root).shape != xd.shape) return false;
    for (const ENode* n : m.nodes)
      if (n->op == Op::Mean && g.attrs(n->attrs).axes[0] != static_cast<int64_t>(xd.shape.size()) - 1) return false;
    const ClassData& e = d(g, m, "eps");
    return e.constant.has_value() && e.shape.empty();
  };
  auto ln = [](EGraph& g, const Match& m) -> std::optional<ClassId> {
    Attrs a;
    a.scalar = *d(g, m, "eps").constant;
    return make(g, Op::LayerNorm, {v(m, "x")}, a);
  };
  auto centred = [] { return node(Op::Sub, {x(), node(Op::Mean, {x()}, last_axis_keepdim)}); };
  auto square = [&](bool pow) {
    return pow ? node(Op::PowScalar, {centred()}, [](const Attrs& a) { return a.scalar == 2.0; })
               : node(Op::Mul, {centred(), centred()});
  };
  auto var_eps = [&](bool pow) {  // var + eps
    return node(Op::Add, {node(Op::Mean, {square(pow)}, last_axis_keepdim), var("eps")});
  };
  for (bool pow : {false, true}) {
    std::string suffix = pow ? "-pow" : "";
    r.push_back({"layer-norm" + suffix, node(Op::Mul, {centred(), node(Op::Rsqrt, {var_eps(pow)})}), ln_guard, ln});
    r.push_back(
        {"layer-norm-swapped" + suffix, node(Op::Mul, {node(Op::Rsqrt, {var_eps(pow)}), centred()}), ln_guard, ln});
    r.push_back({"layer-norm-div" + suffix, node(Op::Div, {centred(), node(Op::Sqrt, {var_eps(pow)})}), ln_guard, ln});
  }
  // layer_norm(x) * w  ->  layer_norm(x, w);  layer_norm(x, w) + b  ->  layer_norm(x, w, b)
  // (w, b of shape [D], D the last axis). A bias alone is not fused: the op takes x[, w[, b]].
  auto weight_guard = [](const EGraph& g, const Match& m) {
    return d(g, m, "w").shape == Shape{d(g, m, "x").shape.back()} && d(g, m, "w").dtype == f32;
  };
  auto bias_guard = [](const EGraph& g, const Match& m) {
    return d(g, m, "b").shape == Shape{d(g, m, "x").shape.back()} && d(g, m, "b").dtype == f32;
  };
  r.push_back({"layer-norm-weight", node(Op::Mul, {node(Op::LayerNorm, {x()}).as("norm"), var("w")}), weight_guard,
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 return make(g, Op::LayerNorm, {v(m, "x"), v(m, "w")}, attrs_of(g, m, "norm"));
               }});
  r.push_back({"layer-norm-weight-swapped", node(Op::Mul, {var("w"), node(Op::LayerNorm, {x()}).as("norm")}),
               weight_guard, [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 return make(g, Op::LayerNorm, {v(m, "x"), v(m, "w")}, attrs_of(g, m, "norm"));
               }});
  r.push_back({"layer-norm-bias", node(Op::Add, {node(Op::LayerNorm, {x(), var("w")}).as("norm"), var("b")}),
               bias_guard, [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 return make(g, Op::LayerNorm, {v(m, "x"), v(m, "w"), v(m, "b")}, attrs_of(g, m, "norm"));
               }});
  r.push_back({"layer-norm-bias-swapped", node(Op::Add, {var("b"), node(Op::LayerNorm, {x(), var("w")}).as("norm")}),
               bias_guard, [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 return make(g, Op::LayerNorm, {v(m, "x"), v(m, "w"), v(m, "b")}, attrs_of(g, m, "norm"));
               }});
}

// The three spellings of 0.5 * x * inner: 0.5*x*(..), x*0.5*(..), 0.5*(x*(..)).
void half_x_times(std::vector<Rewrite>& r, const std::string& name, const std::function<Pattern()>& inner,
                  decltype(Rewrite::guard) guard, decltype(Rewrite::apply) rhs) {
  r.push_back({name, node(Op::Mul, {node(Op::Mul, {var("half"), x()}), inner()}), guard, rhs});
  r.push_back({name + "-x-half", node(Op::Mul, {node(Op::Mul, {x(), var("half")}), inner()}), guard, rhs});
  r.push_back({name + "-half-outer", node(Op::Mul, {var("half"), node(Op::Mul, {x(), inner()})}), guard, rhs});
}

void add_gelu_tanh_rules(std::vector<Rewrite>& r) {
  // ---- gelu, tanh form --------------------------------------------------------------------------
  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  ->  gelu_tanh(x), for the common
  // spellings of the product and the cube (no associativity/commutativity rules: they explode).
  // Constants are matched by value (relative 1e-6), so sqrt(2/pi) may be a folded expression.
  auto gelu_guard = [](const EGraph& g, const Match& m) {
    const ClassData& xd = d(g, m, "x");
    if (xd.dtype != f32 || g.data(m.root).shape != xd.shape) return false;
    return near_scalar(g, m, "half", 0.5) && near_scalar(g, m, "one", 1.0) &&
           near_scalar(g, m, "k", 0.7978845608028654) && near_scalar(g, m, "a", 0.044715);
  };
  auto gelu = [](EGraph& g, const Match& m) -> std::optional<ClassId> { return make(g, Op::GeluTanh, {v(m, "x")}); };
  const std::pair<const char*, std::function<Pattern()>> cubes[] = {
      {"pow",
       [] {
         return node(Op::Mul, {var("a"), node(Op::PowScalar, {x()}, [](const Attrs& a) { return a.scalar == 3.0; })});
       }},
      {"cube",
       [] {
         return node(Op::Mul, {var("a"), node(Op::Mul, {node(Op::Mul, {x(), x()}), x()})});
       }},  // a * (x*x*x)
      {"chain",
       [] {
         return node(Op::Mul, {node(Op::Mul, {node(Op::Mul, {var("a"), x()}), x()}), x()});
       }},  // a*x*x*x
  };
  for (const auto& [cube_name, cube_spelling] : cubes) {
    const std::function<Pattern()>& cube = cube_spelling;  // clang 14 (fuzz/) cannot capture a binding
    auto inner = [&cube] {                                 // 1 + tanh(k * (x + a x^3))
      return node(Op::Add, {var("one"), node(Op::Tanh, {node(Op::Mul, {var("k"), node(Op::Add, {x(), cube()})})})});
    };
    half_x_times(r, std::string("gelu-tanh-") + cube_name, inner, gelu_guard, gelu);
  }
}

void add_gelu_erf_rules(std::vector<Rewrite>& r) {
  // ---- gelu, erf form: 0.5 * x * (1 + erf(x / sqrt(2)))  ->  gelu(x) ------------------------------
  // The argument spelled x / sqrt(2) or x * (1/sqrt(2)) (either order); constants by value.
  const std::pair<const char*, std::function<Pattern()>> scaled[] = {
      {"div",
       [] {
         return node(Op::Div, {x(), var("s")});
       }},
      {"mul",
       [] {
         return node(Op::Mul, {x(), var("s")});
       }},
      {"mul-swapped",
       [] {
         return node(Op::Mul, {var("s"), x()});
       }},
  };
  for (const auto& [scale_name, scale_arg] : scaled) {
    auto guard = std::string(scale_name) == "div" ? gelu_erf_guard<true> : gelu_erf_guard<false>;
    const std::function<Pattern()>& arg = scale_arg;  // clang 14 (fuzz/) cannot capture a binding
    auto inner = [&arg] { return node(Op::Add, {var("one"), node(Op::Erf, {arg()})}); };
    half_x_times(r, std::string("gelu-erf-") + scale_name, inner, guard,
                 [](EGraph& g, const Match& m) -> std::optional<ClassId> { return make(g, Op::Gelu, {v(m, "x")}); });
  }
}

void add_epilogue_rules(std::vector<Rewrite>& r) {
  // ---- matmul epilogues: linear = act(matmul(a, b) + bias) + residual -----------------------------
  // matmul(a, b) + bias  ->  linear(a, b, bias): bias [N] (f32), so the sum keeps matmul's shape
  auto lin_bias_guard = [](const EGraph& g, const Match& m) {
    const ClassData& bd = d(g, m, "bias");
    const Shape& out = g.data(m.root).shape;
    return bd.dtype == f32 && g.data(m.root).dtype == f32 && bd.shape.size() == 1 && out.size() >= 2 &&
           bd.shape[0] == out.back() && d(g, m, "a").dtype == f32 && d(g, m, "b").dtype == f32;
  };
  auto lin_bias = [](EGraph& g, const Match& m) -> std::optional<ClassId> {
    Attrs a = attrs_of(g, m, "product");  // the matmul's transposes
    a.count = kLinearNone;
    return make(g, Op::Linear, {v(m, "a"), v(m, "b"), v(m, "bias")}, a);
  };
  auto mm = [] { return node(Op::MatMul, {var("a"), var("b")}).as("product"); };
  r.push_back({"linear-bias", node(Op::Add, {mm(), var("bias")}), lin_bias_guard, lin_bias});
  r.push_back({"linear-bias-swapped", node(Op::Add, {var("bias"), mm()}), lin_bias_guard, lin_bias});

  // act(linear(a, b, bias)) with no activation and no residual  ->  linear(a, b, bias, act)
  auto lin3 = [] { return node(Op::Linear, {var("a"), var("b"), var("bias")}).as("product"); };
  auto no_act = [](const EGraph& g, const Match& m) { return attrs_of(g, m, "product").count == kLinearNone; };
  r.push_back({"linear-relu", node(Op::Relu, {lin3()}), no_act, linear_act<kLinearRelu>});
  r.push_back({"linear-gelu", node(Op::Gelu, {lin3()}), no_act, linear_act<kLinearGelu>});
  r.push_back({"linear-gelu-tanh", node(Op::GeluTanh, {lin3()}), no_act, linear_act<kLinearGeluTanh>});
  r.push_back({"linear-silu", node(Op::Silu, {lin3()}), no_act, linear_act<kLinearSilu>});

  // product + r, the product a linear or a matmul: r is f32, broadcasts to the product's output,
  // and the sum keeps that shape
  auto residual_guard = [](const EGraph& g, const Match& m) {
    auto product = g.lookup(m.node("product"));
    if (!product) return false;
    const Shape& out = g.data(*product).shape;
    const ClassData& rd = d(g, m, "r");
    Shape b;
    return rd.dtype == f32 && graph::broadcast_shapes(rd.shape, out, b) && b == out && g.data(m.root).shape == out;
  };
  // linear(a, b, bias) + r (no residual yet)  ->  linear(a, b, bias, r)
  auto lin_res = [](EGraph& g, const Match& m) -> std::optional<ClassId> {
    return make(g, Op::Linear, {v(m, "a"), v(m, "b"), v(m, "bias"), v(m, "r")}, attrs_of(g, m, "product"));
  };
  r.push_back({"linear-residual", node(Op::Add, {lin3(), var("r")}), residual_guard, lin_res});
  r.push_back({"linear-residual-swapped", node(Op::Add, {var("r"), lin3()}), residual_guard, lin_res});

  // matmul(a, b) + r  ->  matmul_add(a, b, r) (a residual block's output projection; gradient
  // accumulation in backward)
  auto mm_add = [](EGraph& g, const Match& m) -> std::optional<ClassId> {
    return make(g, Op::MatMulAdd, {v(m, "a"), v(m, "b"), v(m, "r")}, attrs_of(g, m, "product"));
  };
  r.push_back({"matmul-add", node(Op::Add, {mm(), var("r")}), residual_guard, mm_add});
  r.push_back({"matmul-add-swapped", node(Op::Add, {var("r"), mm()}), residual_guard, mm_add});
}

std::vector<Rewrite> make_rules() {
  std::vector<Rewrite> r;
  add_algebra_rules(r);
  add_movement_rules(r);
  add_fusion_rules(r);
  add_layer_norm_rules(r);
  add_gelu_tanh_rules(r);
  add_gelu_erf_rules(r);
  add_epilogue_rules(r);
  add_attention_rules(r);
  return r;
}

}  // namespace

const std::vector<Rewrite>& rules() {
  static const std::vector<Rewrite> all = make_rules();
  return all;
}

}  // namespace meganeura::optimize
