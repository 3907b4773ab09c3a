// Reverse mode: walk the graph from the loss back to the leaves, applying each op's gradient
// rule to the nodes that lie between the loss and a tensor we differentiate for.
#include "meganeura/autodiff.hpp"

#include "autodiff/rules.hpp"
#include "meganeura/error.hpp"

namespace meganeura {
namespace autodiff {

namespace {

constexpr GradRule kRules[] = {
#define MN_GRAD_ROW(e, name, kind, lo, hi, rule, grad, lowering) grad,
    MN_OP_LIST(MN_GRAD_ROW)
#undef MN_GRAD_ROW
};

}  // namespace

GradRule grad_rule(Op op) { return kRules[static_cast<int>(op)]; }

void grad_none(GradContext&) {}

void grad_unsupported(GradContext& c) {
  throw Error("no gradient rule for " + std::string(op_name(c.node().op)) +
              " (second derivatives are not supported yet)");
}

void GradContext::add(size_t i, Tensor grad) {
  Tensor x = in(i);
  const Shape xs = x.shape(), gs = grad.shape();
  if (xs != gs) {  // undo broadcasting: sum the axes x did not have or had as 1
    std::vector<int64_t> axes;
    size_t lead = gs.size() - xs.size();
    for (size_t d = 0; d < gs.size(); ++d)
      if (d < lead || (xs[d - lead] == 1 && gs[d] != 1)) axes.push_back(static_cast<int64_t>(d));
    if (!axes.empty()) grad = sum(grad, axes, true);
    grad = reshape(grad, xs);
  }
  Tensor& ct = ct_[static_cast<size_t>(x.id())];
  ct = ct.valid() ? ct + grad : grad;
}

}  // namespace autodiff

bool has_gradient(Op op) {
  autodiff::GradRule r = autodiff::grad_rule(op);
  return r != autodiff::grad_none && r != autodiff::grad_unsupported;
}

static std::vector<Tensor> backward(Tensor output, Tensor seed, const std::vector<Tensor>& wrt) {
  Graph& g = output.graph();
  auto root = static_cast<size_t>(output.id());
  std::vector<bool> needed(static_cast<size_t>(g.size()), false);
  for (const Tensor& w : wrt) {
    if (&w.graph() != &g) throw Error("gradients: a tensor in wrt belongs to another graph");
    needed[static_cast<size_t>(w.id())] = true;
  }
  // A node is needed if it is differentiated for or one of its inputs is needed.
  for (size_t id = 0; id <= root; ++id)
    for (int in : g.node(static_cast<int>(id)).inputs)
      if (needed[static_cast<size_t>(in)]) needed[id] = true;

  std::vector<Tensor> ct(static_cast<size_t>(g.size()));
  ct[root] = seed;
  auto scope = g.scope("backward");
  for (size_t id = root + 1; id-- > 0;) {
    if (!ct[id].valid() || !needed[id]) continue;
    const Node& n = g.node(static_cast<int>(id));
    if (n.inputs.empty() || !is_float(n.dtype)) continue;
    Tensor dy = ct[id].dtype() == f32 ? ct[id] : cast(ct[id], f32);
    autodiff::GradContext ctx(g, static_cast<int>(id), dy, ct, needed);
    autodiff::grad_rule(n.op)(ctx);
  }
  std::vector<Tensor> out;
  for (const Tensor& w : wrt) {
    Tensor c = ct[static_cast<size_t>(w.id())];
    if (!c.valid())
      c = broadcast_to(g.scalar(0.0f), w.shape());  // the loss does not depend on w
    else if (c.dtype() != f32)
      c = cast(c, f32);
    out.push_back(c);
  }
  return out;
}

std::vector<Tensor> gradients(Tensor loss, const std::vector<Tensor>& wrt) {
  if (!loss.shape().empty() || loss.dtype() != f32)
    throw ShapeError("gradients: the loss must be a rank-0 f32 tensor, got " + shape_str(loss.shape()) + " " +
                     std::string(dtype_name(loss.dtype())) + " (reduce it with mean or sum first)");
  return backward(loss, loss.graph().scalar(1.0f), wrt);
}

std::vector<Tensor> vjp(Tensor output, Tensor cotangent, const std::vector<Tensor>& wrt) {
  if (cotangent.shape() != output.shape() || cotangent.dtype() != f32 || !is_float(output.dtype()))
    throw ShapeError("vjp: the cotangent must be f32 of the output's shape " + shape_str(output.shape()) + ", got " +
                     shape_str(cotangent.shape()) + " " + std::string(dtype_name(cotangent.dtype())));
  return backward(output, cotangent, wrt);
}

}  // namespace meganeura
