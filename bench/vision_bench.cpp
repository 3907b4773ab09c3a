// meganeura-bench-vision: torchvision's ResNet (resnet18/34/50/101/152) or the benchmark's
// diffusion UNet (sd_unet) timed on the device, one JSON line per mode on stdout, progress on
// stderr:
//   inference  eval-mode logits of --batch images of --size² pixels (sd_unet: the prediction
//              for --batch latents of 4 × --size²)
//   train      one step: train-mode forward, cross-entropy (sd_unet: MSE against a target),
//              backward, SGD (lr 0: the weights stay, so that every run computes the same thing)
// bench/vision_torch.py prints the same lines for PyTorch with the same weights and images
// (bench/run_vision.sh runs both on the GPU machine).
//
//   meganeura-bench-vision [--model resnet50] [--batch 4] [--size 224] [--runs 30] [--warmup 5]
//                          [--modes inference,train] [--breakdown N]
//
// Weights and images come from the hash of the model tests' fixtures (u(k, i) uniform in [-1/2,
// 1/2); latents 2 u(1000, i), the UNet's target 2 u(1001, i)); wall: Session::step(); gpu: the sum of the dispatch
// timestamps in a second, profiled session; compile_s: building the first session.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "fixtures/formula.hpp"
#include "meganeura/device.hpp"
#include "meganeura/error.hpp"
#include "meganeura/resnet.hpp"
#include "meganeura/sd_unet.hpp"
#include "meganeura/train.hpp"

namespace mn = meganeura;
using bench::Json;
using mn::models::ResNetConfig;

namespace {

struct Options {
  std::string model = "resnet50";
  int64_t batch = 4, size = 224;
  int runs = 30, warmup = 5, breakdown = 0;
  std::vector<std::string> modes{"inference", "train"};
};

using mn::fixtures::set_formula_weights;  // the fixture's values for every parameter and buffer
using mn::fixtures::uniform;

std::vector<float> hashed(int64_t k, int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(2 * uniform(k, static_cast<int64_t>(i)));
  return v;
}

bool is_unet(const Options& o) { return o.model == "sd_unet"; }

void set_batch(mn::Session& s, const Options& o, bool training) {
  const int64_t channels = is_unet(o) ? 4 : 3, count = o.batch * channels * o.size * o.size;
  s.set_input(is_unet(o) ? "latents" : "images", hashed(1000, count));
  if (!training) return;
  if (is_unet(o)) {
    s.set_input("target", hashed(1001, count));
    return;
  }
  std::vector<int32_t> l(static_cast<size_t>(o.batch));
  for (int64_t i = 0; i < o.batch; ++i) l[static_cast<size_t>(i)] = static_cast<int32_t>(i % 1000);
  s.set_input("labels", mn::HostTensor::i32s({o.batch}, l));
}

ResNetConfig config_named(const std::string& name) {
  const std::map<std::string, ResNetConfig> known = {{"resnet18", ResNetConfig::resnet18()},
                                                     {"resnet34", ResNetConfig::resnet34()},
                                                     {"resnet50", ResNetConfig::resnet50()},
                                                     {"resnet101", ResNetConfig::resnet101()},
                                                     {"resnet152", ResNetConfig::resnet152()}};
  auto it = known.find(name);
  if (it == known.end())
    throw mn::Error("--model " + name + ": resnet18, resnet34, resnet50, resnet101, resnet152 or sd_unet");
  return it->second;
}

// The model's graph, its loss (training) and the output the checksum reads.
struct Model {
  std::unique_ptr<mn::Graph> graph;
  mn::Tensor loss;
  std::string output;
};

Model model_of(const Options& o, bool training) {
  if (is_unet(o)) {
    mn::models::SdUnetGraph u = mn::models::sd_unet_graph({}, o.batch, o.size, o.size, training);
    return {std::move(u.graph), u.loss, "prediction"};
  }
  mn::models::ResNetGraph r = mn::models::resnet_graph(config_named(o.model), o.batch, o.size, o.size, training);
  return {std::move(r.graph), r.loss, "logits"};
}

mn::Session make(const Model& m, bool training, bool profile) {
  if (training) return mn::build_session(*m.graph, m.loss, {.optimizer = mn::SGD{.lr = 0.0f}, .profile = profile});
  return mn::build_inference_session(*m.graph, {.profile = profile});
}

Json run_mode(const Options& o, bool training) {
  const Model r = model_of(o, training);
  Json j;
  {
    const auto t0 = std::chrono::steady_clock::now();
    mn::Session s = make(r, training, false);
    j.num("compile_s", bench::seconds_since(t0));
    set_formula_weights(s);
    set_batch(s, o, training);
    j.times("wall", bench::stats(bench::wall_ms(o.warmup, o.runs, [&] { s.step(); })));
    j.num("dispatches", s.stats().dispatches).num("barriers", s.stats().barriers);
    double checksum = 0;
    for (float v : s.read_output(r.output).to_f32()) checksum += std::fabs(v);
    j.num("checksum", checksum);
  }
  mn::Session p = make(r, training, true);
  set_formula_weights(p);
  set_batch(p, o, training);
  const std::vector<double> gpu = bench::gpu_ms(o.warmup, o.runs, p, [&] { p.step(); });
  if (o.breakdown > 0) bench::print_breakdown(p.profile(), o.breakdown);
  j.times("gpu", bench::stats(gpu));
  return j;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw mn::Error(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--model")
      o.model = v;
    else if (a == "--batch")
      o.batch = std::stoll(v);
    else if (a == "--size")
      o.size = std::stoll(v);
    else if (a == "--runs")
      o.runs = std::stoi(v);
    else if (a == "--warmup")
      o.warmup = std::stoi(v);
    else if (a == "--breakdown")
      o.breakdown = std::stoi(v);
    else if (a == "--modes") {
      o.modes = bench::split_list(v);
    } else {
      throw mn::Error("unknown option " + a);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "meganeura-bench-vision: %s\nusage: meganeura-bench-vision [--model resnet50] [--batch 4] "
                 "[--size 224] [--runs 30] [--warmup 5] [--modes inference,train] [--breakdown N]\n",
                 e.what());
    return 2;
  }
  int failures = 0;
  const std::string device = mn::default_device_info().name;
  for (const std::string& mode : o.modes) {
    Json head;
    head.str("impl", "meganeura").str("model", o.model).str("mode", mode).str("device", device);
    head.num("batch", static_cast<double>(o.batch)).num("size", static_cast<double>(o.size));
    std::string line = head.text();
    try {
      if (mode != "inference" && mode != "train") throw mn::Error("unknown mode '" + mode + "' (inference, train)");
      std::fprintf(stderr, "meganeura-bench-vision: %s %s ...\n", o.model.c_str(), mode.c_str());
      const std::string fields = run_mode(o, mode == "train").text();
      line = line.substr(0, line.size() - 1) + "," + fields.substr(1);
    } catch (const std::exception& e) {
      ++failures;
      Json err;
      err.str("error", e.what());
      line = line.substr(0, line.size() - 1) + "," + err.text().substr(1);
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}
