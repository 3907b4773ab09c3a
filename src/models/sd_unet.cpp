// The benchmark's diffusion UNet (meganeura/sd_unet.hpp), level by level.
#include "meganeura/sd_unet.hpp"

#include <algorithm>
#include <string>

#include "graph/op_args.hpp"
#include "meganeura/error.hpp"

namespace meganeura::models {

namespace {

nn::Conv conv(Graph& g, const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t stride = 1) {
  return nn::Conv(g, name, in, out, {kernel, kernel}, {.stride = {stride}, .padding = {kernel / 2}}, false);
}

SdUnet::ResBlock make_res_block(Graph& g, const std::string& name, int64_t in, int64_t out, const SdUnetConfig& c) {
  SdUnet::ResBlock b{nn::GroupNorm(g, name + ".norm1", c.groups, in, c.eps),
                     nn::GroupNorm(g, name + ".norm2", c.groups, out, c.eps), conv(g, name + ".conv1", in, out, 3),
                     conv(g, name + ".conv2", out, out, 3), std::nullopt};
  if (in != out) b.res_conv = conv(g, name + ".res_conv", in, out, 1);
  return b;
}

// Every GroupNorm's channel count divides into the groups: each level's, and each decoder
// block's input (the level below's channels and the skip's).
void check(const SdUnetConfig& c) {
  const std::string what = "SdUnetConfig: ";
  if (c.in_channels < 1 || c.base_channels < 1 || c.groups < 1)
    throw Error(what + "in_channels, base_channels and groups must be positive");
  if (c.levels < 1 || c.levels > 16) throw Error(what + "levels must be 1 to 16, not " + std::to_string(c.levels));
  for (int64_t l = 0; l < c.levels; ++l) {
    const int64_t channels = c.base_channels << l, below = c.base_channels << std::min(l + 1, c.levels - 1);
    for (const int64_t n : {channels, below + channels})
      if (n % c.groups != 0)
        throw Error(what + "level " + std::to_string(l) + " normalises " + std::to_string(n) + " channels, which " +
                    std::to_string(c.groups) + " groups do not divide");
  }
}

}  // namespace

SdUnet::SdUnet(Graph& g, const SdUnetConfig& c) : config(c) {
  check(c);
  conv_in = conv(g, "conv_in", c.in_channels, c.base_channels, 3);
  int64_t channels = c.base_channels;
  for (int64_t l = 0; l < c.levels; ++l) {
    const int64_t out = c.base_channels << l;
    encoder_blocks.push_back(make_res_block(g, "encoder_blocks." + std::to_string(l), channels, out, c));
    if (l + 1 < c.levels) downsamples.push_back(conv(g, "downsamples." + std::to_string(l), out, out, 3, 2));
    channels = out;
  }
  middle = make_res_block(g, "middle", channels, channels, c);
  for (int64_t l = c.levels - 1; l >= 0; --l) {
    const int64_t out = c.base_channels << l;
    const auto i = static_cast<int64_t>(decoder_blocks.size());
    decoder_blocks.push_back(make_res_block(g, "decoder_blocks." + std::to_string(i), channels + out, out, c));
    channels = out;
  }
  norm_out = nn::GroupNorm(g, "norm_out", c.groups, c.base_channels, c.eps);
  conv_out = conv(g, "conv_out", c.base_channels, c.in_channels, 3);
}

Tensor SdUnet::res_block(const ResBlock& b, Tensor x) const {
  Tensor h = b.conv1(silu(b.norm1(x)));
  h = b.conv2(silu(b.norm2(h)));
  return h + (b.res_conv ? (*b.res_conv)(x) : x);
}

Tensor SdUnet::operator()(Tensor latents) const {
  graph::graph_of("SdUnet", {{"latents", latents}});
  const Shape s = latents.shape();
  const int64_t step = int64_t{1} << (config.levels - 1);
  if (s.size() != 4 || s[1] != config.in_channels || s[2] % step != 0 || s[3] % step != 0)
    throw ShapeError("SdUnet: latents of shape " + shape_str(s) + "; it takes [N, " +
                     std::to_string(config.in_channels) + ", H, W] with H and W multiples of " + std::to_string(step) +
                     " (" + std::to_string(config.levels) + " levels)");
  Tensor x = conv_in(latents);
  std::vector<Tensor> skips;
  for (size_t l = 0; l < encoder_blocks.size(); ++l) {
    x = res_block(encoder_blocks[l], x);
    skips.push_back(x);
    if (l < downsamples.size()) x = downsamples[l](x);
  }
  x = res_block(middle, x);
  for (size_t i = 0; i < decoder_blocks.size(); ++i) {
    const Tensor skip = skips[skips.size() - 1 - i];
    if (i > 0) x = upsample(x, {skip.dim(2), skip.dim(3)});
    x = res_block(decoder_blocks[i], concat({x, skip}, 1));
  }
  return conv_out(silu(norm_out(x)));
}

SdUnetGraph sd_unet_graph(const SdUnetConfig& config, int64_t batch, int64_t height, int64_t width, bool training) {
  SdUnetGraph out;
  out.graph = std::make_unique<Graph>();
  Graph& g = *out.graph;
  const Tensor latents = g.input("latents", {batch, config.in_channels, height, width});
  const SdUnet model(g, config);
  out.prediction = model(latents);
  g.output("prediction", out.prediction);
  if (training) {
    out.loss = mse_loss(out.prediction, g.input("target", latents.shape()));
    g.output("loss", out.loss);
  }
  return out;
}

}  // namespace meganeura::models
