// Argument checks shared by every op function and nn layer (op_args.hpp).
#include "graph/op_args.hpp"

#include "meganeura/error.hpp"

namespace meganeura::graph {

// "2 (b)": the argument's place in the signature and its name.
static std::string place(const Arg& a, size_t index) {
  return std::to_string(a.position ? a.position : static_cast<int>(index + 1)) + " (" + a.name + ")";
}

Graph& graph_of(std::string_view function, std::span<const Arg> args) {
  const Arg* first = nullptr;
  size_t first_index = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (!a.tensor.valid()) {
      if (a.is_optional) continue;
      throw Error(std::string(function) + ": argument " + place(a, i) +
                  " is an invalid Tensor (default-constructed, or from no graph)");
    }
    if (!first) {
      first = &a;
      first_index = i;
    } else if (&a.tensor.graph() != &first->tensor.graph()) {
      throw Error(std::string(function) + ": arguments " + place(*first, first_index) + " and " + place(a, i) +
                  " are tensors of different graphs");
    }
  }
  if (!first) throw Error(std::string(function) + ": no tensor argument");  // only optional ones, all left out
  return first->tensor.graph();
}

Tensor build(Op op, std::span<const Arg> args, Attrs attrs) {
  Graph& g = graph_of(op_name(op), args);
  std::vector<Tensor> inputs;
  for (const Arg& a : args)
    if (a.tensor.valid()) inputs.push_back(a.tensor);
  return g.add(op, std::move(inputs), std::move(attrs));
}

}  // namespace meganeura::graph
