// ResNets as torchvision builds them (ResNet-18/34 of basic blocks, ResNet-50/101/152 of
// bottlenecks with the stride on the 3×3 conv, "v1.5"), with torchvision's parameter and buffer
// names (conv1.weight, bn1.running_mean, layer1.0.conv1.weight, layer2.0.downsample.0.weight,
// fc.weight, ...), so that a torchvision state dict saved as safetensors loads by name
// (models::load_weights; its num_batches_tracked are ignored).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "meganeura/graph.hpp"
#include "meganeura/load_weights.hpp"
#include "meganeura/nn.hpp"

namespace meganeura::models {

struct ResNetConfig {
  std::vector<int64_t> layers = {3, 4, 6, 3};  // blocks in layer1..layer4
  bool bottleneck = true;                      // Bottleneck (expansion 4) or BasicBlock
  int64_t num_classes = 1000;
  int64_t in_channels = 3;
  static ResNetConfig resnet18() { return {{2, 2, 2, 2}, false}; }
  static ResNetConfig resnet34() { return {{3, 4, 6, 3}, false}; }
  static ResNetConfig resnet50() { return {{3, 4, 6, 3}, true}; }
  static ResNetConfig resnet101() { return {{3, 4, 23, 3}, true}; }
  static ResNetConfig resnet152() { return {{3, 8, 36, 3}, true}; }
};

// The network's layers in a graph. `training` is torchvision's model.train(): batch norms by
// batch statistics, their running statistics updated each step (momentum 0.1); false is
// model.eval(). Parameters start from the nn layers' PyTorch defaults (torchvision redraws its
// convs as kaiming_normal(fan_out); load its weights, or set them, for its exact start).
class ResNet {
 public:
  struct Block {
    nn::Conv conv1, conv2, conv3;  // conv3: bottlenecks only
    nn::BatchNorm bn1, bn2, bn3;
    std::optional<std::pair<nn::Conv, nn::BatchNorm>> downsample;  // "downsample.0", "downsample.1"
  };
  ResNet(Graph& g, const ResNetConfig& config, bool training);
  // logits [N, num_classes] of images [N, in_channels, H, W] (any size: the pooling is adaptive).
  Tensor operator()(Tensor images) const;
  ResNetConfig config;
  nn::Conv conv1;
  nn::BatchNorm bn1;
  std::vector<std::vector<Block>> layers;  // layer1..layer4
  nn::Linear fc;

 private:
  Tensor block(const Block& b, Tensor x) const;
};

// A whole graph: input "images" [batch, in_channels, height, width]; output "logits"; with
// training, input "labels" [batch] (i32 class indices) and output "loss" (mean cross-entropy).
struct ResNetGraph {
  std::unique_ptr<Graph> graph;
  Tensor logits, loss;
};
ResNetGraph resnet_graph(const ResNetConfig& config, int64_t batch, int64_t height, int64_t width, bool training);

}  // namespace meganeura::models
