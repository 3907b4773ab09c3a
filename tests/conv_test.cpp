// conv (1 to 3 spatial dimensions: stride, padding symmetric, asymmetric and 'same', padding
// modes, dilation, groups, depthwise, bias, unbatched) and conv_transpose (stride, padding,
// output_padding, dilation, groups) against a reference written here in double: every output as
// a sum of input × weight products. Forward, and the gradients of sum(y * c) with respect to the
// input, the weight and the bias, from one training step; and their errors.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace mntest {
namespace {

using namespace meganeura;

struct ConvCase {
  std::string name;
  Shape x, w;
  bool bias = true;
  bool transposed = false;
  ConvOptions conv = {};                // !transposed
  ConvTransposeOptions transpose = {};  // transposed
};

int64_t count(const Shape& s) { return numel(s); }

// Value i of a setting that holds one value for all dimensions, one each, or none (fallback).
int64_t at(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  return v.empty() ? fallback : v.size() == 1 ? v[0] : v[i];
}

// Where padded position p (from -before) of a dimension of n reads, or -1 for a zero.
int64_t source(int64_t p, int64_t n, PadMode mode) {
  if (p >= 0 && p < n) return p;
  switch (mode) {
    case PadMode::constant: return -1;
    case PadMode::reflect: return p < 0 ? -p : 2 * (n - 1) - p;
    case PadMode::replicate: return p < 0 ? 0 : n - 1;
    case PadMode::circular: return ((p % n) + n) % n;
  }
  return -1;
}

// One product of the convolution: output element `out` gets x[x_at] * w[w_at].
struct Term {
  int64_t out, x_at, w_at;
};

// Row-major flat index of `idx` in `shape`.
int64_t flat(const Shape& shape, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

// Every index of `shape`, in row-major order, to f.
void each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < count(shape); ++i) {
    f(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// The output shape (batched) and every product, written from the definitions.
std::vector<Term> reference(const ConvCase& c, Shape& out) {
  const size_t dims = c.w.size() - 2;
  const bool batched = c.x.size() == dims + 2;
  Shape xs = c.x;
  if (!batched) xs.insert(xs.begin(), 1);
  const int64_t n = xs[0], channels = xs[1];
  std::vector<Term> terms;
  Shape kernel(c.w.begin() + 2, c.w.end());
  if (!c.transposed) {
    const ConvOptions& o = c.conv;
    const int64_t groups = o.groups, out_channels = c.w[0], in_per_group = channels / groups;
    std::vector<int64_t> before(dims), stride(dims), dilation(dims);
    out = {n, out_channels};
    for (size_t d = 0; d < dims; ++d) {
      stride[d] = at(o.stride, d, 1);
      dilation[d] = at(o.dilation, d, 1);
      const int64_t reach = dilation[d] * (kernel[d] - 1) + 1;
      int64_t b = 0, a = 0;
      if (o.same) {
        b = (reach - 1) / 2;
        a = reach - 1 - b;
      } else if (o.padding.size() == 2 * dims) {
        b = o.padding[2 * d];
        a = o.padding[2 * d + 1];
      } else {
        b = a = at(o.padding, d, 0);
      }
      before[d] = b;
      out.push_back((xs[2 + d] + b + a - reach) / stride[d] + 1);
    }
    each_index(out, [&](const std::vector<int64_t>& y) {
      const int64_t co = y[1], g = co / (out_channels / groups);
      each_index(Shape(c.w.begin() + 1, c.w.end()), [&](const std::vector<int64_t>& wt) {
        std::vector<int64_t> xi = {y[0], g * in_per_group + wt[0]};
        for (size_t d = 0; d < dims; ++d) {
          const int64_t s =
              source(y[2 + d] * stride[d] + wt[1 + d] * dilation[d] - before[d], xs[2 + d], o.padding_mode);
          if (s < 0) return;
          xi.push_back(s);
        }
        std::vector<int64_t> wi = {co};
        wi.insert(wi.end(), wt.begin(), wt.end());
        terms.push_back({flat(out, y), flat(xs, xi), flat(c.w, wi)});
      });
    });
    return terms;
  }
  const ConvTransposeOptions& o = c.transpose;
  const int64_t groups = o.groups, out_per_group = c.w[1], in_per_group = channels / groups;
  std::vector<int64_t> stride(dims), dilation(dims), padding(dims);
  out = {n, out_per_group * groups};
  for (size_t d = 0; d < dims; ++d) {
    stride[d] = at(o.stride, d, 1);
    dilation[d] = at(o.dilation, d, 1);
    padding[d] = at(o.padding, d, 0);
    out.push_back((xs[2 + d] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel[d] - 1) +
                  at(o.output_padding, d, 0) + 1);
  }
  each_index(xs, [&](const std::vector<int64_t>& xi) {
    const int64_t ci = xi[1], g = ci / in_per_group;
    each_index(Shape(c.w.begin() + 1, c.w.end()), [&](const std::vector<int64_t>& wt) {
      std::vector<int64_t> y = {xi[0], g * out_per_group + wt[0]};
      for (size_t d = 0; d < dims; ++d) {
        const int64_t p = xi[2 + d] * stride[d] + wt[1 + d] * dilation[d] - padding[d];
        if (p < 0 || p >= out[2 + d]) return;
        y.push_back(p);
      }
      std::vector<int64_t> wi = {ci};
      wi.insert(wi.end(), wt.begin(), wt.end());
      terms.push_back({flat(out, y), flat(xs, xi), flat(c.w, wi)});
    });
  });
  return terms;
}

Tensor apply(const ConvCase& c, Tensor x, Tensor w, Tensor b) {
  return c.transposed ? conv_transpose(x, w, b, c.transpose) : conv(x, w, b, c.conv);
}

const std::vector<ConvCase>& cases() {
  using P = PadMode;
  static const std::vector<ConvCase> all = {
      {"conv2d 3x3 padding 1", {2, 3, 7, 9}, {5, 3, 3, 3}, true, false, {.padding = {1}}},
      {"conv2d stride (2, 1), padding (1, 0), dilation (1, 2), 2 groups",
       {2, 4, 8, 7},
       {6, 2, 3, 2},
       true,
       false,
       {.stride = {2, 1}, .padding = {1, 0}, .dilation = {1, 2}, .groups = 2}},
      {"conv2d depthwise, stride 2",
       {1, 4, 6, 7},
       {4, 1, 3, 3},
       false,
       false,
       {.stride = {2}, .padding = {1}, .groups = 4}},
      {"conv2d asymmetric padding", {1, 2, 5, 6}, {3, 2, 2, 3}, true, false, {.padding = {0, 1, 2, 1}}},
      {"conv2d same, dilation 2, even kernel",
       {1, 2, 7, 6},
       {2, 2, 4, 3},
       true,
       false,
       {.same = true, .dilation = {2}}},
      {"conv2d reflect", {1, 2, 5, 6}, {3, 2, 3, 3}, true, false, {.padding = {2, 1}, .padding_mode = P::reflect}},
      {"conv2d replicate", {2, 2, 4, 5}, {3, 2, 3, 2}, false, false, {.padding = {1}, .padding_mode = P::replicate}},
      {"conv2d circular", {1, 3, 5, 4}, {2, 3, 3, 3}, true, false, {.padding = {2}, .padding_mode = P::circular}},
      {"conv2d unbatched", {3, 7, 9}, {4, 3, 2, 2}, true, false, {.stride = {3, 2}}},
      {"conv2d 1x1 stride 2", {2, 5, 7, 5}, {3, 5, 1, 1}, true, false, {.stride = {2}}},
      {"conv1d stride 2 padding 2", {2, 3, 11}, {4, 3, 5}, true, false, {.stride = {2}, .padding = {2}}},
      {"conv1d asymmetric, groups 3", {1, 6, 9}, {3, 2, 3}, true, false, {.padding = {2, 0}, .groups = 3}},
      {"conv3d", {1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, true, false, {.padding = {1}}},
      {"conv_transpose2d stride 2, padding 1, output_padding 1",
       {2, 4, 3, 5},
       {4, 3, 3, 3},
       true,
       true,
       {},
       {.stride = {2}, .padding = {1}, .output_padding = {1}}},
      {"conv_transpose2d 2 groups, dilation 2",
       {1, 4, 4, 3},
       {4, 2, 3, 2},
       true,
       true,
       {},
       {.dilation = {2}, .groups = 2}},
      {"conv_transpose2d stride (2, 3), padding (0, 2)",
       {1, 2, 3, 4},
       {2, 3, 2, 4},
       false,
       true,
       {},
       {.stride = {2, 3}, .padding = {0, 2}, .output_padding = {1, 2}}},
      {"conv_transpose1d stride 3, padding 2", {1, 2, 7}, {2, 3, 4}, true, true, {}, {.stride = {3}, .padding = {2}}},
      {"conv_transpose2d unbatched", {3, 4, 4}, {3, 2, 2, 2}, true, true, {}, {.stride = {2}}},
  };
  return all;
}

TEST(Conv, OutputsAndGradientsMatchTheReference) {
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(c.name);
    Rng rng;
    SCOPED_TRACE(seed_note(rng.seed()));
    Shape out;
    const std::vector<Term> terms = reference(c, out);
    const int64_t out_channels = out[1];
    Shape y_shape = out;
    if (c.x.size() == c.w.size() - 1) y_shape.erase(y_shape.begin());
    const std::vector<float> x = rng.floats(count(c.x), -1, 1), w = rng.floats(count(c.w), -1, 1),
                             b = rng.floats(out_channels, -1, 1), weights = rng.floats(count(out), -1, 1);
    Graph g;
    Tensor bias = c.bias ? g.parameter("b", {out_channels}) : Tensor{};
    Tensor y = apply(c, g.parameter("x", c.x), g.parameter("w", c.w), bias);
    ASSERT_EQ(y.shape(), y_shape);
    g.output("y", y);
    Session s = build_session(g, sum(y * g.input("c", y_shape)), {.optimizer = SGD{.lr = 0.0f}});
    s.set_parameter("x", host_f32(c.x, x));
    s.set_parameter("w", host_f32(c.w, w));
    if (c.bias) s.set_parameter("b", host_f32({out_channels}, b));
    s.set_input("c", host_f32(y_shape, weights));
    s.step();

    const int64_t per_channel = count(out) / (out[0] * out_channels);
    std::vector<double> want_y(static_cast<size_t>(count(out)), 0.0), dx(x.size(), 0.0), dw(w.size(), 0.0),
        db(b.size(), 0.0);
    for (int64_t o = 0; o < count(out); ++o) {
      const auto channel = static_cast<size_t>((o / per_channel) % out_channels);
      if (c.bias) want_y[static_cast<size_t>(o)] = b[channel];
      db[channel] += weights[static_cast<size_t>(o)];
    }
    for (const Term& t : terms) {
      const auto o = static_cast<size_t>(t.out), xi = static_cast<size_t>(t.x_at), wi = static_cast<size_t>(t.w_at);
      want_y[o] += double(x[xi]) * w[wi];
      dx[xi] += double(weights[o]) * w[wi];
      dw[wi] += double(weights[o]) * x[xi];
    }
    expect_near_all(s.read_output("y").to_f32(), want_y, "y", 1e-4);
    expect_near_all(s.read_grad("x").to_f32(), dx, "d x", 1e-4);
    expect_near_all(s.read_grad("w").to_f32(), dw, "d weight", 1e-4);
    if (c.bias) expect_near_all(s.read_grad("b").to_f32(), db, "d bias", 1e-4);
  }
}

// Zero padding lives in the window map (a tap in the padding reads 0, Attrs::window_padding): the
// graph reads x as it is, with no pad of x before the gather; conv_transpose's taps in the
// cropped padding add nothing, with no crop after the scatter. Other modes still pad x first.
TEST(Conv, ZeroPaddingIsInTheWindowMap) {
  auto ops_of = [](const ConvCase& c) {
    Graph g;
    Tensor w = g.parameter("w", c.w);
    g.output("y", apply(c, g.input("x", c.x), w, {}));
    std::multiset<Op> ops;
    bool window = false;
    for (const Node& n : g.nodes()) {
      ops.insert(n.op);
      if (n.op == Op::Gather || n.op == Op::ScatterAdd) window = window || n.attrs.window_padding;
    }
    return std::pair{ops, window};
  };
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto [ops, window] = ops_of(c);
    EXPECT_TRUE(window);
    if (c.transposed || c.conv.padding_mode == PadMode::constant) {
      EXPECT_EQ(ops.count(Op::Concat) + ops.count(Op::Slice), 0u) << "a pad or crop of the data";
    } else {
      EXPECT_GE(ops.count(Op::Gather) + ops.count(Op::Concat), 2u) << "x padded before the window's gather";
    }
  }
}

TEST(Conv, Errors) {
  Graph g;
  Tensor x = g.input("x", {2, 4, 8, 8}), w = g.parameter("w", {6, 2, 3, 3});
  expect_has(message_of<ShapeError>([&] { conv2d(x, w); }), "4 input channels in 1 groups do not match the weight");
  expect_has(message_of<ShapeError>([&] { conv2d(x, w, {}, {.groups = 3}); }), "must divide by the groups");
  expect_has(message_of<ShapeError>([&] { conv2d(x, w, g.parameter("b", {5}), {.groups = 2}); }), "needs [6]");
  expect_has(message_of<ShapeError>([&] {
               conv2d(x, w, {}, {.padding = {1, 1, 1}, .groups = 2});
             }),
             "padding (1, 1, 1) needs one value, or one for each of the 2 spatial dimensions");
  expect_has(message_of<ShapeError>([&] { conv2d(x, w, {}, {.stride = {2}, .same = true, .groups = 2}); }),
             "padding 'same' needs a stride of 1");
  expect_has(message_of<ShapeError>([&] { conv2d(x, w, {}, {.padding = {-1}, .groups = 2}); }), "must not be negative");
  expect_has(message_of<ShapeError>([&] { conv2d(x, w, {}, {.dilation = {5}, .groups = 2}); }),
             "smaller than the kernel's reach of 11");
  expect_has(message_of<ShapeError>([&] { conv1d(x, w, {}, {.groups = 2}); }), "conv1d takes one of rank 3");
  expect_has(message_of<ShapeError>([&] { conv(g.input("v", {4, 8}), w, {}, {.groups = 2}); }), "[N, C, *spatial]");
  expect_has(message_of<DTypeError>([&] {
               conv2d(g.input("i", {2, 4, 8, 8}, i32), w, {}, {.groups = 2});
             }),
             "f32 only");
  Tensor wt = g.parameter("wt", {4, 3, 3, 3});
  expect_has(message_of<ShapeError>([&] { conv_transpose2d(x, wt, {}, {.stride = {2}, .output_padding = {2}}); }),
             "output_padding 2 must be smaller than the stride or the dilation");
  expect_has(message_of<ShapeError>([&] { conv_transpose2d(x, wt, {}, {.padding = {6}}); }), "would be -2 long");
  expect_has(message_of<ShapeError>([&] { conv_transpose2d(x, w); }), "do not match the weight");
}

}  // namespace
}  // namespace mntest
