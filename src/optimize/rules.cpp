// Every rewrite rule, in one place. Each reads: name, left-hand pattern, guard, right-hand
// side. Fusions target ops the lowering already has kernels for.
#include <algorithm>

#include "optimize/optimize.hpp"

namespace meganeura::optimize {
namespace {

ClassId make(EGraph& g, Op op, std::vector<ClassId> children, const Attrs& a = {}) {
  return g.add(ENode{op, g.intern(a), -1, std::move(children)});
}
ClassId v(const Match& m, const char* name) { return m.vars.at(name); }
const ClassData& d(const EGraph& g, const Match& m, const char* name) { return g.data(v(m, name)); }
bool is_const(const EGraph& g, const Match& m, const char* name, double value) {
  const auto& c = d(g, m, name).constant;
  return c && *c == value;
}
// The identity rules may only drop an operand when broadcasting did not change the shape.
bool keeps_shape(const EGraph& g, const Match& m) { return d(g, m, "x").shape == g.data(m.root).shape; }

Pattern x() { return var("x"); }
Pattern c() { return var("c"); }

bool last_axis_keepdim(const Attrs& a) { return a.keepdim && a.axes.size() == 1; }
bool keepdim_single_axis(const Attrs& a) { return a.keepdim && a.axes.size() == 1; }

std::vector<Rewrite> make_rules() {
  std::vector<Rewrite> r;
  auto to_x = [](EGraph&, const Match& m) -> std::optional<ClassId> { return v(m, "x"); };

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

  // ---- data movement ----------------------------------------------------------------------------
  r.push_back({"reshape-identity", node(Op::Reshape, {x()}), keeps_shape, to_x});
  r.push_back({"reshape-reshape", node(Op::Reshape, {node(Op::Reshape, {x()})}), nullptr,
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 return make(g, Op::Reshape, {v(m, "x")}, g.attrs(m.nodes[0]->attrs));
               }});
  r.push_back({"permute-permute", node(Op::Permute, {node(Op::Permute, {x()})}), nullptr,
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 const auto &outer = g.attrs(m.nodes[0]->attrs).axes, &inner = g.attrs(m.nodes[1]->attrs).axes;
                 Attrs a;
                 bool identity = true;
                 for (size_t j = 0; j < outer.size(); ++j) {  // permute(permute(x, p1), p2) = permute(x, p1[p2[j]])
                   a.axes.push_back(inner[static_cast<size_t>(outer[j])]);
                   identity = identity && a.axes.back() == static_cast<int64_t>(j);
                 }
                 return identity ? v(m, "x") : make(g, Op::Permute, {v(m, "x")}, a);
               }});

  // ---- fusions into existing kernels ------------------------------------------------------------
  auto silu = [](EGraph& g, const Match& m) -> std::optional<ClassId> { return make(g, Op::Silu, {v(m, "x")}); };
  r.push_back({"silu", node(Op::Mul, {x(), node(Op::Sigmoid, {x()})}), nullptr, silu});
  r.push_back({"silu-swapped", node(Op::Mul, {node(Op::Sigmoid, {x()}), x()}), nullptr, silu});

  // x * rsqrt(mean(x*x, last axis, keepdim) + eps)  ->  rms_norm(x, eps)
  auto rms = [](EGraph& g, const Match& m) -> std::optional<ClassId> {
    Attrs a;
    a.scalar = *d(g, m, "eps").constant;
    return make(g, Op::RmsNorm, {v(m, "x")}, a);
  };
  auto rms_guard = [](const EGraph& g, const Match& m) {
    const ClassData& xd = d(g, m, "x");
    const Attrs& mean = g.attrs(m.nodes[3]->attrs);
    return !xd.shape.empty() && mean.axes[0] == static_cast<int64_t>(xd.shape.size()) - 1 &&
           d(g, m, "eps").constant.has_value() && d(g, m, "eps").shape.empty();
  };
  auto mean_sq = [](Pattern sq) { return node(Op::Mean, {std::move(sq)}, last_axis_keepdim); };
  r.push_back({"rms-norm", node(Op::Mul, {x(), node(Op::Rsqrt, {node(Op::Add, {mean_sq(node(Op::Mul, {x(), x()})), var("eps")})})}),
               rms_guard, rms});
  r.push_back({"rms-norm-pow", node(Op::Mul, {x(), node(Op::Rsqrt, {node(Op::Add, {mean_sq(node(Op::PowScalar, {x()}, [](const Attrs& a) { return a.scalar == 2.0; })), var("eps")})})}),
               rms_guard, rms});
  // rms_norm(x) * w (w the size of the last axis)  ->  rms_norm(x, w)
  r.push_back({"rms-norm-weight", node(Op::Mul, {node(Op::RmsNorm, {x()}), var("w")}),
               [](const EGraph& g, const Match& m) {
                 const Shape& xs = d(g, m, "x").shape;
                 return d(g, m, "w").shape == Shape{xs.back()} && d(g, m, "w").dtype == f32;
               },
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 return make(g, Op::RmsNorm, {v(m, "x"), v(m, "w")}, g.attrs(m.nodes[1]->attrs));
               }});

  // exp(x - max(x)) / sum(exp(x - max(x)))  ->  softmax(x), along the one reduced axis
  auto stable = [] { return node(Op::Exp, {node(Op::Sub, {x(), node(Op::Max, {x()}, keepdim_single_axis)})}); };
  r.push_back({"softmax", node(Op::Div, {stable(), node(Op::Sum, {stable()}, keepdim_single_axis)}),
               [](const EGraph& g, const Match& m) {  // nodes: div exp sub max sum exp sub max
                 return g.attrs(m.nodes[3]->attrs).axes == g.attrs(m.nodes[4]->attrs).axes;
               },
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 Attrs a;
                 a.axis = g.attrs(m.nodes[4]->attrs).axes[0];
                 return make(g, Op::Softmax, {v(m, "x")}, a);
               }});
  r.push_back({"softmax-unstabilised", node(Op::Div, {node(Op::Exp, {x()}), node(Op::Sum, {node(Op::Exp, {x()})}, keepdim_single_axis)}),
               nullptr,
               [](EGraph& g, const Match& m) -> std::optional<ClassId> {
                 Attrs a;
                 a.axis = g.attrs(m.nodes[2]->attrs).axes[0];
                 return make(g, Op::Softmax, {v(m, "x")}, a);
               }});
  return r;
}

}  // namespace

const std::vector<Rewrite>& rules() {
  static const std::vector<Rewrite> all = make_rules();
  return all;
}

}  // namespace meganeura::optimize
