// Building graphs: leaves, node insertion with shape inference, scopes, labels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "graph/op_table.hpp"

namespace meganeura {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(s[i]);
  }
  return out + "]";
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

static constexpr const char* kInvalidTensor = "an invalid Tensor (default-constructed, or from no graph)";

// The last line of defence: op functions and layers name the op and argument before this.
Graph& Tensor::graph() const {
  if (!g_) throw Error(std::string("use of ") + kInvalidTensor);
  return *g_;
}

const Node& Tensor::node() const { return graph().node(id_); }

int64_t Tensor::dim(int i) const {
  int r = rank();
  if (i < -r || i >= r)
    throw ShapeError("dimension " + std::to_string(i) + " of " + shape_str(shape()) + " does not exist");
  return shape()[static_cast<size_t>(i < 0 ? i + r : i)];
}

Graph::Scope::~Scope() {
  if (g_) g_->scopes_.pop_back();
}

Graph::Scope Graph::scope(std::string_view name) {
  std::string full = scopes_.empty() ? std::string(name) : scopes_.back() + "." + std::string(name);
  scopes_.push_back(std::move(full));
  return Scope(*this);
}

std::string Graph::label(int id) const {
  const Node& n = node(id);
  std::string s = "%";
  s += std::to_string(id);
  if (!n.name.empty()) s += " " + n.name;
  return s;
}

int Graph::push(Node n) {
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size()) - 1;
}

static void check_shape(const Shape& shape, std::string_view what, const std::string& name) {
  if (shape.size() > kMaxRank)
    throw ShapeError(std::string(what) + " \"" + name + "\" has rank " + std::to_string(shape.size()) +
                     "; meganeura supports rank up to " + std::to_string(kMaxRank));
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(std::string(what) + " \"" + name + "\" has a negative dimension: " + shape_str(shape));
  // Sizes may come from files (config.json): an element count past 2^60 (so that bytes fit 64
  // bits too) is refused here, before anything multiplies it into bytes.
  int64_t elements = 1;
  for (int64_t d : shape)
    if (d != 0 && (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 60))) {
      if (std::find(shape.begin(), shape.end(), 0) != shape.end()) break;  // empty after all
      throw ShapeError(std::string(what) + " \"" + name + "\" of shape " + shape_str(shape) +
                       " has more than 2^60 elements");
    }
}

Tensor Graph::leaf(Op op, std::string name, Shape shape, DType dtype, std::string_view what) {
  if (name.empty()) throw Error(std::string(what) + " needs a name");
  check_shape(shape, what, name);
  for (const Node& n : nodes_)
    if ((n.op == Op::Input || n.op == Op::Parameter || n.op == Op::State) && n.name == name)
      throw Error("the graph already has " +
                  std::string(n.op == Op::Input       ? "an input"
                              : n.op == Op::Parameter ? "a parameter"
                                                      : "a state") +
                  " named \"" + name + "\"");
  Node n{op, {}, {}, std::move(shape), dtype, std::move(name), {}};
  return {this, push(std::move(n))};
}

Tensor Graph::input(std::string name, Shape shape, DType dtype) {
  return leaf(Op::Input, std::move(name), std::move(shape), dtype, "input");
}

static void check_init(const Init& init, DType dtype, const std::string& name) {
  if (init.kind == Init::Kind::none) return;
  if (dtype != f32)
    throw DTypeError("parameter \"" + name + "\" is " + std::string(dtype_name(dtype)) +
                     ": default initialisers fill f32 parameters");
  const bool spread = init.kind == Init::Kind::uniform || init.kind == Init::Kind::normal;
  if (!std::isfinite(init.value) || (spread && init.value < 0))
    throw Error("parameter \"" + name + "\": the initialiser's " + (spread ? "bound or std" : "value") + " " +
                std::to_string(init.value) + " is not a finite" + (spread ? " non-negative" : "") + " number");
}

Tensor Graph::parameter(std::string name, Shape shape, DType dtype, Init init) {
  check_init(init, dtype, name);
  Tensor t = leaf(Op::Parameter, std::move(name), std::move(shape), dtype, "parameter");
  nodes_.back().init = init;
  return t;
}

Tensor Graph::buffer(std::string name, Shape shape, Init init) {
  Tensor t = parameter(std::move(name), std::move(shape), f32, init);
  nodes_.back().trainable = false;
  return t;
}

Tensor Graph::state(std::string name, Shape shape, DType dtype) {
  return leaf(Op::State, std::move(name), std::move(shape), dtype, "state");
}

Tensor Graph::constant_raw(const void* data, size_t count, Shape shape, DType dtype) {
  check_shape(shape, "constant", scopes_.empty() ? "constant" : scopes_.back());
  if (static_cast<int64_t>(count) != numel(shape))
    throw SizeError("constant of shape " + shape_str(shape) + " needs " + std::to_string(numel(shape)) +
                    " values, got " + std::to_string(count));
  Node n{Op::Constant, {}, {}, std::move(shape), dtype, scopes_.empty() ? "" : scopes_.back(), {}};
  n.constant.resize(count * dtype_size(dtype));
  if (count) std::memcpy(n.constant.data(), data, n.constant.size());
  return {this, push(std::move(n))};
}

Tensor Graph::constant(std::span<const float> values, Shape shape) {
  return constant_raw(values.data(), values.size(), std::move(shape), f32);
}

Tensor Graph::constant(std::span<const int32_t> values, Shape shape) {
  return constant_raw(values.data(), values.size(), std::move(shape), i32);
}

Tensor Graph::scalar(float value) { return constant(std::span<const float>(&value, 1), {}); }

std::unique_ptr<Graph> Graph::clone() const {
  auto copy = std::make_unique<Graph>();
  copy->nodes_ = nodes_;
  copy->outputs_ = outputs_;
  copy->effects_ = effects_;
  return copy;
}

void Graph::output(std::string name, Tensor t) {
  if (!t.valid()) throw Error("output \"" + name + "\" is " + kInvalidTensor);
  if (&t.graph() != this) throw Error("output \"" + name + "\" is a tensor of another graph");
  for (auto& [n, id] : outputs_)
    if (n == name) throw Error("the graph already has an output named \"" + name + "\"");
  outputs_.emplace_back(std::move(name), t.id());
}

// Ops that only move or reinterpret bytes may keep 16-bit storage; everything else computes in
// f32, so f16/bf16 inputs get a cast node in front.
static bool keeps_storage_dtype(Op op) { return op == Op::Cast || op == Op::Reshape; }

Tensor Graph::add(Op op, std::vector<Tensor> inputs, Attrs attrs) {
  const graph::OpInfo& info = graph::op_info(op);
  auto next_label = [&] {  // Graph::label of the node about to be added
    std::string s = "%";
    s += std::to_string(nodes_.size());
    if (!scopes_.empty()) s += " " + scopes_.back();
    return s;
  };
  std::string label = next_label();
  if (info.kind == OpKind::Leaf)
    throw Error("use Graph::input, parameter or constant to make a " + std::string(info.name));
  int n_in = static_cast<int>(inputs.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs)
    throw ShapeError("node \"" + label + "\" (" + std::string(info.name) + ") takes " +
                     std::to_string(info.min_inputs) +
                     (info.max_inputs != info.min_inputs ? " to " + std::to_string(info.max_inputs) : "") +
                     " inputs, got " + std::to_string(n_in));
  std::vector<int> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor& t = inputs[i];
    auto input = [&] {
      return "node \"" + label + "\" (" + std::string(info.name) + "): input " + std::to_string(i + 1);
    };
    if (!t.valid()) throw Error(input() + " is " + kInvalidTensor);
    if (&t.graph() != this) throw Error(input() + " is a tensor of another graph");
    if (dtype_size(t.dtype()) == 2 && !keeps_storage_dtype(op)) {
      Attrs to_f32;
      to_f32.dtype = f32;
      t = add(Op::Cast, {t}, to_f32);
    }
    ids.push_back(t.id());
  }
  label = next_label();
  std::vector<graph::InputType> types;
  for (int id : ids) types.push_back({node(id).shape, node(id).dtype, this->label(id)});
  graph::OutType out = graph::infer(op, std::move(types), attrs, label);
  Node n{op, std::move(ids), std::move(attrs), std::move(out.shape), out.dtype, scopes_.empty() ? "" : scopes_.back(),
         {}};
  const int id = push(std::move(n));
  if (op == Op::Assign) effects_.push_back(id);
  return {this, id};
}

}  // namespace meganeura
