// The graph IR: a model is a DAG of nodes, each an op from the op table with attributes, a
// shape and a dtype inferred (and checked) when the node is added.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "meganeura/dtype.hpp"
#include "meganeura/op_list.hpp"

namespace meganeura {

inline constexpr int kMaxRank = 8;

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "[2,3,4]"
int64_t numel(const Shape& s);

enum class Op : uint8_t {
#define MN_OP_ENUM(e, name, kind, lo, hi, rule, grad, lowering) e,
  MN_OP_LIST(MN_OP_ENUM)
#undef MN_OP_ENUM
};

enum class OpKind : uint8_t {
  Leaf,
  Unary,
  Binary,
  Compare,
  Select,
  Convert,
  Contract,
  Reduce,
  Row,
  Movement,
  Index,
  Loss,
  Train
};

std::string_view op_name(Op op);
OpKind op_kind(Op op);
int op_count();   // number of rows in the op table
Op op_at(int i);  // the i-th row, for tests that enumerate every op

// Attributes of a node. One flat struct so that hashing, equality and printing see every field;
// each op documents which fields it uses.
struct Attrs {
  std::vector<int64_t> axes;                      // reduce: axes (sorted, non-negative); permute: the permutation;
                                                  // reshape/broadcast_to: the target shape as given (-1 resolved)
  int64_t axis = 0;                               // softmax, argmax, slice, concat, gather, scatter_add
  int64_t start = 0, end = 0, step = 1;           // slice (normalised: 0 <= start, end <= dim)
  int64_t count = 0;                              // one_hot: number of classes; linear: the activation (LinearAct)
  int64_t ignore_index = -100;                    // cross_entropy
  double scalar = 0;                              // pow: exponent; rms_norm/layer_norm: eps
  bool keepdim = false;                           // reduce
  bool transpose_a = false, transpose_b = false;  // matmul
  bool seq_major = false;                         // attention: q, k, v, out are [..., S, H, D] (else [..., H, S, D])
  bool window_padding = false;  // gather, scatter_add (a window map's: conv, max_pool2d): an index equal to
                                // the axis's length is a padding tap, which reads `scalar` (0 for conv,
                                // -inf for max pooling) and adds nothing
  int64_t window = 0;           // attention: sliding window (a query sees the last `window` keys; 0: all)
  DType dtype = DType::f32;     // cast: target
  std::vector<double> values;   // training ops: their hyperparameters (src/train/update_graph.hpp)
  bool operator==(const Attrs&) const = default;
};

// Which axis of a 2-D weight is its input (fan-in) axis: x·W reads a weight declared [in, out];
// x·Wᵀ (PyTorch's nn.Linear, nn::Linear) reads [out, in]. init::linear needs it for fan_in.
enum class WeightLayout : uint8_t { unknown, in_out, out_in };

// A parameter's default initialiser: what its layer draws when nothing else sets it (PyTorch's
// defaults, recorded by the nn layers; a plain Graph::parameter has none and must be set).
struct Init {
  enum class Kind : uint8_t { none, uniform, normal, constant };
  Kind kind = Kind::none;
  float value = 0;  // uniform: the bound b of U(-b, b); normal: the std (mean 0); constant: the value
  WeightLayout layout = WeightLayout::unknown;  // a 2-D weight's layout, for init::linear

  static Init uniform(float bound, WeightLayout layout = WeightLayout::unknown) {
    return {Kind::uniform, bound, layout};
  }
  static Init normal(float std) { return {Kind::normal, std, WeightLayout::unknown}; }
  static Init constant(float value) { return {Kind::constant, value, WeightLayout::unknown}; }
  bool operator==(const Init&) const = default;
};

struct Node {
  Op op;
  std::vector<int> inputs;
  Attrs attrs;
  Shape shape;
  DType dtype;
  std::string name;                 // input/parameter name, else the scope it was built in
  std::vector<std::byte> constant;  // data of a Constant node, in dtype
  Init init{};                      // a Parameter's default initialiser (kind none: set it yourself)
  bool trainable = true;            // a Parameter made by Graph::buffer: never trained
};

class Graph;

// A handle to a node of a graph: what user code passes around, like torch.Tensor.
class Tensor {
 public:
  Tensor() = default;
  Tensor(Graph* g, int id) : g_(g), id_(id) {}
  Graph& graph() const;  // throws Error for an invalid Tensor
  int id() const { return id_; }
  const Node& node() const;
  // By value: a reference into the graph would dangle once another node is added.
  Shape shape() const { return node().shape; }
  DType dtype() const { return node().dtype; }
  int rank() const { return static_cast<int>(shape().size()); }
  int64_t dim(int i) const;  // negative i counts from the end
  bool valid() const { return g_ != nullptr; }

 private:
  Graph* g_ = nullptr;
  int id_ = -1;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;  // Tensors point at their graph
  Graph& operator=(const Graph&) = delete;

  Tensor input(std::string name, Shape shape, DType dtype = f32);
  // `init`: drawn from a seed on the session's first use unless the parameter is set or loaded
  // first (the nn layers pass PyTorch's defaults); an initialiser needs an f32 parameter.
  Tensor parameter(std::string name, Shape shape, DType dtype = f32, Init init = {});
  // A parameter that is never trained (PyTorch's buffers: batch norm's running statistics): set,
  // read, saved and loaded by name like a parameter, its initialiser drawn the same way, but no
  // training session computes its gradient or updates it.
  Tensor buffer(std::string name, Shape shape, Init init = {});
  // Persistent state (a KV cache): zeros when the session is built, kept between steps, changed
  // only in place by cache_write. Not a parameter: never trained, saved or loaded.
  Tensor state(std::string name, Shape shape, DType dtype = f32);
  Tensor constant(std::span<const float> values, Shape shape);
  Tensor constant(std::span<const int32_t> values, Shape shape);
  Tensor scalar(float value);  // a rank-0 f32 constant
  void output(std::string name, Tensor t);

  // Names the nodes built while the returned guard lives ("blocks.3.attn"); errors quote it.
  class Scope {
   public:
    explicit Scope(Graph& g) : g_(&g) {}
    Scope(Scope&& o) noexcept : g_(o.g_) { o.g_ = nullptr; }
    Scope(const Scope&) = delete;
    ~Scope();

   private:
    Graph* g_;
  };
  [[nodiscard]] Scope scope(std::string_view name);

  // Adds a node: checks arity, promotes f16/bf16 inputs to f32 where the op computes, infers
  // shape and dtype. Throws ShapeError/DTypeError naming the node.
  Tensor add(Op op, std::vector<Tensor> inputs, Attrs attrs = {});

  // A copy with the same node ids (so Tensor{copy.get(), t.id()} is t in the copy): passes
  // that append nodes (autodiff) work on a copy and leave the user's graph as it was.
  std::unique_ptr<Graph> clone() const;

  const Node& node(int id) const { return nodes_.at(static_cast<size_t>(id)); }
  const std::vector<Node>& nodes() const { return nodes_; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const std::vector<std::pair<std::string, int>>& outputs() const { return outputs_; }
  // Nodes run for what they write, not for a value anyone reads (assign): every step runs them,
  // after the rest of the step has read what they overwrite. Passes that rebuild a graph keep them.
  const std::vector<int>& effects() const { return effects_; }
  // "%12" or "%12 blocks.3.attn": how errors refer to a node.
  std::string label(int id) const;
  std::string to_string() const;  // one line per node

 private:
  int push(Node n);
  Tensor constant_raw(const void* data, size_t count, Shape shape, DType dtype);
  Tensor leaf(Op op, std::string name, Shape shape, DType dtype, std::string_view what);
  std::vector<Node> nodes_;
  std::vector<std::pair<std::string, int>> outputs_;
  std::vector<int> effects_;
  std::vector<std::string> scopes_;
};

}  // namespace meganeura
