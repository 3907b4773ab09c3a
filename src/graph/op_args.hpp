// An op function's tensor arguments, checked before anything reads them: a Tensor{} or a tensor
// of another graph becomes an Error naming the function and the argument, never a null
// dereference. The op functions (ops.cpp) and the nn layers build every node through here.
#pragma once
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "meganeura/graph.hpp"

namespace meganeura::graph {

struct Arg {
  Arg(std::string name, Tensor t, int position = 0) : name(std::move(name)), tensor(t), position(position) {}
  // An argument that may be Tensor{} (a norm's weight): then it is left out of the node's inputs.
  static Arg optional(std::string name, Tensor t) {
    Arg a(std::move(name), t);
    a.is_optional = true;
    return a;
  }
  std::string name;  // as in the function's signature: "x", "weight", "xs[2]"
  Tensor tensor;
  int position = 0;  // 1-based in the signature; 0: the argument's place in the list
  bool is_optional = false;
};

// The graph every argument belongs to. Throws Error "relu: argument 1 (x) is an invalid Tensor
// (...)" or "add: arguments 1 (a) and 2 (b) are tensors of different graphs".
Graph& graph_of(std::string_view function, std::span<const Arg> args);
inline Graph& graph_of(std::string_view function, std::initializer_list<Arg> args) {
  return graph_of(function, std::span(args.begin(), args.size()));
}

// graph_of, then the node: the valid arguments, in order, are its inputs.
Tensor build(Op op, std::span<const Arg> args, Attrs attrs = {});
inline Tensor build(Op op, std::initializer_list<Arg> args, Attrs attrs = {}) {
  return build(op, std::span(args.begin(), args.size()), std::move(attrs));
}

}  // namespace meganeura::graph
