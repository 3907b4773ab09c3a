// ResNet (meganeura/resnet.hpp): torchvision's structure and names, block by block.
#include "meganeura/resnet.hpp"

#include <string>

#include "graph/op_args.hpp"
#include "meganeura/error.hpp"

namespace meganeura::models {

namespace {

nn::Conv conv(Graph& g, const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv(g, name, in, out, {kernel, kernel}, {.stride = {stride}, .padding = {kernel / 2}}, false);
}

nn::BatchNorm norm(Graph& g, const std::string& name, int64_t channels, bool training) {
  nn::BatchNorm bn(g, name, channels);
  bn.training = training;
  return bn;
}

}  // namespace

ResNet::ResNet(Graph& g, const ResNetConfig& c, bool training)
    : config(c),
      conv1(g, "conv1", c.in_channels, 64, {7, 7}, {.stride = {2}, .padding = {3}}, false),
      bn1(norm(g, "bn1", 64, training)) {
  if (c.layers.size() != 4)
    throw Error("ResNetConfig: layers holds " + std::to_string(c.layers.size()) + " counts, not 4");
  const int64_t expansion = c.bottleneck ? 4 : 1;
  int64_t in = 64;
  for (size_t l = 0; l < 4; ++l) {
    const int64_t planes = int64_t{64} << l;
    if (c.layers[l] < 1) throw Error("ResNetConfig: layer" + std::to_string(l + 1) + " needs a block at least");
    layers.emplace_back();
    for (int64_t i = 0; i < c.layers[l]; ++i) {
      const std::string name = "layer" + std::to_string(l + 1) + "." + std::to_string(i);
      const int64_t stride = i == 0 && l > 0 ? 2 : 1, out = planes * expansion;
      Block b;
      if (c.bottleneck) {  // 1×1 down to `planes`, the strided 3×3, 1×1 up
        b.conv1 = conv(g, name + ".conv1", in, planes, 1, 1);
        b.bn1 = norm(g, name + ".bn1", planes, training);
        b.conv2 = conv(g, name + ".conv2", planes, planes, 3, stride);
        b.bn2 = norm(g, name + ".bn2", planes, training);
        b.conv3 = conv(g, name + ".conv3", planes, out, 1, 1);
        b.bn3 = norm(g, name + ".bn3", out, training);
      } else {
        b.conv1 = conv(g, name + ".conv1", in, planes, 3, stride);
        b.bn1 = norm(g, name + ".bn1", planes, training);
        b.conv2 = conv(g, name + ".conv2", planes, planes, 3, 1);
        b.bn2 = norm(g, name + ".bn2", planes, training);
      }
      if (stride != 1 || in != out)
        b.downsample.emplace(conv(g, name + ".downsample.0", in, out, 1, stride),
                             norm(g, name + ".downsample.1", out, training));
      layers.back().push_back(std::move(b));
      in = out;
    }
  }
  fc = nn::Linear(g, "fc", in, c.num_classes);
}

Tensor ResNet::block(const Block& b, Tensor x) const {
  Tensor y = relu(b.bn1(b.conv1(x)));
  y = b.bn2(b.conv2(y));
  if (config.bottleneck) y = b.bn3(b.conv3(relu(y)));
  const Tensor identity = b.downsample ? b.downsample->second(b.downsample->first(x)) : x;
  return relu(y + identity);
}

Tensor ResNet::operator()(Tensor images) const {
  graph::graph_of("ResNet", {{"images", images}});
  const Shape s = images.shape();
  if (s.size() != 4 || s[1] != config.in_channels)
    throw ShapeError("ResNet: images of shape " + shape_str(s) + "; it takes [N, " +
                     std::to_string(config.in_channels) + ", H, W]");
  Tensor x = relu(bn1(conv1(images)));
  x = max_pool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
  for (const std::vector<Block>& layer : layers)
    for (const Block& b : layer) x = block(b, x);
  return fc(flatten(adaptive_avg_pool2d(x, {1, 1}), 1));
}

ResNetGraph resnet_graph(const ResNetConfig& config, int64_t batch, int64_t height, int64_t width, bool training) {
  ResNetGraph out;
  out.graph = std::make_unique<Graph>();
  Graph& g = *out.graph;
  const Tensor images = g.input("images", {batch, config.in_channels, height, width});
  const ResNet model(g, config, training);
  out.logits = model(images);
  g.output("logits", out.logits);
  if (training) {
    out.loss = cross_entropy(out.logits, g.input("labels", {batch}, i32));
    g.output("loss", out.loss);
  }
  return out;
}

}  // namespace meganeura::models
