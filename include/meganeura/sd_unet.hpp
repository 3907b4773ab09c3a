// The diffusion UNet of the benchmark suite: Stable Diffusion's denoising backbone simplified as
// Inferena and the original Meganeura run it — convolutions, group norms and skip connections,
// no attention and no timestep. conv_in → a ResBlock a level (channels base · 2^level), a
// stride-2 conv between levels → a middle ResBlock → a level at a time back up: nearest 2×
// upsampling, the level's skip concatenated, a ResBlock → GroupNorm, SiLU, conv_out. A ResBlock
// is GN-SiLU-conv3×3 twice plus the input (through a 1×1 conv where the channels change). Every
// conv is bias-free. Parameter names are those of the benchmark's PyTorch module (conv_in.weight,
// encoder_blocks.0.norm1.weight, downsamples.0.weight, middle.conv2.weight,
// decoder_blocks.2.res_conv.weight, norm_out.bias, ...), so its state dict loads by name.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "meganeura/graph.hpp"
#include "meganeura/nn.hpp"

namespace meganeura::models {

struct SdUnetConfig {
  int64_t in_channels = 4;     // latent channels, in and out
  int64_t base_channels = 64;  // level l has base · 2^l channels
  int64_t levels = 3;
  int64_t groups = 16;  // of every GroupNorm
  float eps = 1e-5f;
};

// The network's layers in a graph, parameters at PyTorch's default initialisation.
class SdUnet {
 public:
  struct ResBlock {
    nn::GroupNorm norm1, norm2;
    nn::Conv conv1, conv2;
    std::optional<nn::Conv> res_conv;  // where the channels change
  };
  SdUnet(Graph& g, const SdUnetConfig& config);
  // The prediction [N, in_channels, H, W] for latents of that shape; H and W divisible by
  // 2^(levels - 1), so that each level's upsampled maps meet its skip.
  Tensor operator()(Tensor latents) const;
  SdUnetConfig config;
  nn::Conv conv_in, conv_out;
  std::vector<ResBlock> encoder_blocks, decoder_blocks;  // decoder_blocks[0] is the deepest level
  std::vector<nn::Conv> downsamples;                     // between levels: levels - 1 of them
  ResBlock middle;
  nn::GroupNorm norm_out;

 private:
  Tensor res_block(const ResBlock& b, Tensor x) const;
};

// A whole graph: input "latents" [batch, in_channels, height, width]; output "prediction" of the
// same shape; with training, input "target" (that shape too) and output "loss", the mean squared
// error (the noise-prediction objective).
struct SdUnetGraph {
  std::unique_ptr<Graph> graph;
  Tensor prediction, loss;
};
SdUnetGraph sd_unet_graph(const SdUnetConfig& config, int64_t batch, int64_t height, int64_t width, bool training);

}  // namespace meganeura::models
