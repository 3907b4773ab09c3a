// meganeura-bench-ops: GPU time of one op at a time.
//
// Each benchmark builds a graph holding a single op, compiles it into a session with
// SessionOptions{.profile = true}, warms up, then times session.step() by the GPU timestamps
// of the op's own dispatches (Session::profile, those labelled "<op> %<node id> ...", summed;
// copies are not dispatches and are not counted). The time reported to Google Benchmark is
// that GPU time (UseManualTime), so the numbers measure kernels, not uploads or submission.
// A large f32 result is read back through a small slice of it (a separate, untimed dispatch)
// so that each step does not copy megabytes to the host. Counters:
//   gpu_median_us   median GPU time of one step's dispatches over all iterations
//   wall_median_us  median wall-clock time of step() (submit + wait + readback), for reference
//   GB/s            bytes the op must move at least (inputs read once + output written once)
//                   divided by gpu_median_us
//   GFLOP/s         2·M·N·K / gpu_median_us, for matmul only
//   dispatches      the op's dispatches per step
//
//   meganeura-bench-ops                       full sizes (for a GPU)
//   meganeura-bench-ops --quick               small sizes (lavapipe: a few seconds per op)
//   meganeura-bench-ops --benchmark_filter=matmul --benchmark_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <meganeura/meganeura.hpp>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace mn = meganeura;

namespace {

struct InputSpec {
  std::string name;
  mn::Shape shape;
  mn::DType dtype = mn::f32;
  int32_t index_limit = 0;  // integer inputs: values drawn from [0, index_limit)
};

struct Case {
  std::string name;
  std::vector<InputSpec> inputs;
  std::function<mn::Tensor(const std::vector<mn::Tensor>&)> op;
  double bytes = 0;  // minimum bytes moved: inputs read + output written
  double flops = 0;  // 0 where flops are not meaningful
  // A composite (conv: pad, gather, product): the first input is an activation (an input, so that
  // nothing is computed once at build), and every dispatch of the step counts.
  bool composite = false;
};

// A built session for one case. Google Benchmark calls a benchmark function several times
// while it picks the iteration count, so the last session is kept and reused.
struct Prepared {
  std::string name;
  std::unique_ptr<mn::Graph> graph;  // Graph is neither copyable nor movable
  mn::Session session;
  std::string op_label;  // "matmul %2 ": the prefix of the op's dispatch labels
};
std::unique_ptr<Prepared> g_prepared;

std::unique_ptr<Prepared> prepare(const Case& c) {
  auto graph = std::make_unique<mn::Graph>();
  std::vector<mn::Tensor> ts;
  // Float operands are parameters (device-resident, set once); integer ones are inputs.
  for (const auto& in : c.inputs)
    ts.push_back(mn::is_float(in.dtype) && !(c.composite && ts.empty()) ? graph->parameter(in.name, in.shape, in.dtype)
                                                                        : graph->input(in.name, in.shape, in.dtype));
  mn::Tensor y = c.op(ts);
  std::string op_label = std::string(mn::op_name(y.node().op)) + " %" + std::to_string(y.id()) + " ";
  if (y.dtype() == mn::f32 && mn::numel(y.shape()) > 4096)
    y = mn::slice(mn::reshape(y, {-1}), 0, 0, 4096);  // reshape is a view: no copy
  graph->output("y", y);
  auto session = mn::build_inference_session(*graph, mn::SessionOptions{.profile = true});

  std::mt19937 rng(1234);
  for (const auto& in : c.inputs) {
    size_t n = static_cast<size_t>(mn::numel(in.shape));
    if (mn::is_float(in.dtype)) {
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> v(n);
      for (auto& x : v) x = dist(rng);
      if (c.composite && &in == &c.inputs.front())
        session.set_input(in.name, mn::HostTensor::f32s(in.shape, v));
      else
        session.set_parameter(in.name, v);
    } else {
      std::uniform_int_distribution<int32_t> dist(0, in.index_limit - 1);
      std::vector<int32_t> v(n);
      for (auto& x : v) x = dist(rng);
      session.set_input(in.name, mn::HostTensor::i32s(in.shape, v));
    }
  }
  for (int i = 0; i < 3; ++i) session.step();  // warm-up: first-use costs, caches, clocks
  if (c.composite) op_label.clear();           // every dispatch
  return std::make_unique<Prepared>(Prepared{c.name, std::move(graph), std::move(session), op_label});
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

void run_case(benchmark::State& state, const Case& c) {
  try {
    if (!g_prepared || g_prepared->name != c.name) {
      g_prepared.reset();  // free the previous case's device memory first
      g_prepared = prepare(c);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  mn::Session& s = g_prepared->session;
  std::vector<double> gpu_ns, wall_ns;
  bool wall_fallback = false;
  uint32_t dispatches = 0;
  for (auto _ : state) {
    try {
      auto t0 = std::chrono::steady_clock::now();
      s.step();
      auto t1 = std::chrono::steady_clock::now();
      double wall = std::chrono::duration<double, std::nano>(t1 - t0).count();
      double gpu = 0;
      uint32_t own = 0;
      std::string labels;
      for (const auto& [label, ns] : s.profile()) {
        labels += "\n  " + label;
        if (label.rfind(g_prepared->op_label, 0) != 0) continue;  // not the op's own dispatch
        gpu += ns;
        ++own;
      }
      if (own == 0) {
        state.SkipWithError(
            ("no dispatch labelled \"" + g_prepared->op_label + "...\" in the profile:" + labels).c_str());
        break;
      }
      dispatches = own;
      if (gpu <= 0) {  // no timestamps on this device: fall back to wall clock
        gpu = wall;
        wall_fallback = true;
      }
      state.SetIterationTime(gpu * 1e-9);
      gpu_ns.push_back(gpu);
      wall_ns.push_back(wall);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  if (gpu_ns.empty()) return;
  double gpu_med = median(gpu_ns);
  state.counters["gpu_median_us"] = gpu_med * 1e-3;
  state.counters["wall_median_us"] = median(wall_ns) * 1e-3;
  state.counters["dispatches"] = dispatches;
  if (c.bytes > 0) state.counters["GB/s"] = c.bytes / gpu_med;  // bytes per ns = GB/s
  if (c.flops > 0) state.counters["GFLOP/s"] = c.flops / gpu_med;
  if (wall_fallback) state.SetLabel("wall clock: the device gave no GPU timestamps");
}

std::string dims(const mn::Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out.append(i ? "x" : "").append(std::to_string(s[i]));
  return out;
}

std::vector<Case> make_cases(bool quick) {
  std::vector<Case> cs;
  const double f = 4, h = 2, idx = 4;            // bytes per f32, f16, i32
  const int64_t n = quick ? 1 << 20 : 1 << 24;   // elementwise elements
  const int64_t R = quick ? 1024 : 4096, C = R;  // rows x columns of 2-d cases
  const mn::Shape rc{R, C};
  const double rcn = static_cast<double>(R * C);

  for (auto [name, fn] : {std::pair{"exp", &mn::exp}, std::pair{"gelu", &mn::gelu}})
    cs.push_back(
        {std::string(name) + "/" + std::to_string(n), {{"x", {n}}}, [fn](auto& t) { return fn(t[0]); }, 2.0 * n * f});

  cs.push_back({"add/" + dims(rc), {{"a", rc}, {"b", rc}}, [](auto& t) { return t[0] + t[1]; }, 3 * rcn * f});
  cs.push_back({"add_broadcast/" + dims(rc) + "+" + std::to_string(C),
                {{"a", rc}, {"b", {C}}},
                [](auto& t) { return t[0] + t[1]; },
                (2 * rcn + C) * f});

  std::vector<std::array<int64_t, 3>> mm;  // M, K, N
  for (int64_t s : quick ? std::vector<int64_t>{256} : std::vector<int64_t>{256, 1024, 2048, 4096})
    mm.push_back({s, s, s});
  mm.push_back({128, 576, 1536});  // a transformer projection: 128 tokens, SmolLM2's widths
  for (auto [M, K, N] : mm)
    cs.push_back({"matmul/" + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N),
                  {{"a", {M, K}}, {"b", {K, N}}},
                  [](auto& t) { return mn::matmul(t[0], t[1]); },
                  double(M * K + K * N + M * N) * f,
                  2.0 * M * N * K});

  cs.push_back({"sum_last/" + dims(rc), {{"x", rc}}, [](auto& t) { return mn::sum(t[0], {-1}); }, (rcn + R) * f});
  cs.push_back({"softmax/" + dims(rc), {{"x", rc}}, [](auto& t) { return mn::softmax(t[0], -1); }, 2 * rcn * f});
  cs.push_back({"rms_norm/" + dims(rc),
                {{"x", rc}, {"w", {C}}},
                [](auto& t) { return mn::rms_norm(t[0], t[1]); },
                (2 * rcn + C) * f});
  cs.push_back({"layer_norm/" + dims(rc),
                {{"x", rc}, {"w", {C}}, {"b", {C}}},
                [](auto& t) { return mn::layer_norm(t[0], t[1], t[2]); },
                (2 * rcn + 2 * C) * f});

  const int64_t vocab = 49152, D = 576, tokens = quick ? 1024 : 4096;
  const int64_t table_rows = quick ? 8192 : vocab;
  cs.push_back(
      {"embedding/" + std::to_string(table_rows) + "x" + std::to_string(D) + "[" + std::to_string(tokens) + "]",
       {{"table", {table_rows, D}}, {"ids", {tokens}, mn::i32, int32_t(table_rows)}},
       [](auto& t) { return mn::embedding(t[0], t[1]); },
       tokens * idx + 2.0 * tokens * D * f});

  const int64_t ce_rows = quick ? 64 : 1024;
  cs.push_back({"cross_entropy/" + std::to_string(ce_rows) + "x" + std::to_string(vocab),
                {{"logits", {ce_rows, vocab}}, {"labels", {ce_rows}, mn::i32, int32_t(vocab)}},
                [](auto& t) { return mn::cross_entropy(t[0], t[1]); },
                double(ce_rows * vocab) * f + ce_rows * idx + f});

  const int64_t T = quick ? 1024 : 8192;
  cs.push_back({"transpose/" + std::to_string(T) + "x" + std::to_string(T),
                {{"x", {T, T}}},
                [](auto& t) { return mn::transpose(t[0]); },
                2.0 * T * T * f});
  cs.push_back({"concat/2x" + std::to_string(R) + "x" + std::to_string(C / 2),
                {{"a", {R, C / 2}}, {"b", {R, C / 2}}},
                [](auto& t) {
                  return mn::concat({t[0], t[1]}, 1);
                },
                2 * rcn * f});
  cs.push_back(
      {"cast_f32_f16/" + dims(rc), {{"x", rc}}, [](auto& t) { return mn::cast(t[0], mn::f16); }, rcn * (f + h)});
  // SmolLM2's attention: 9 query heads on 3 k/v heads of 64, causal; FLOPs of the visible half.
  for (int64_t s : quick ? std::vector<int64_t>{128} : std::vector<int64_t>{128, 1024, 4096})
    cs.push_back({"attention_causal/9on3x" + std::to_string(s) + "x64",
                  {{"q", {1, 9, s, 64}}, {"k", {1, 3, s, 64}}, {"v", {1, 3, s, 64}}},
                  [](auto& t) { return mn::attention(t[0], t[1], t[2], {.causal = true}); },
                  double(9 * s * 64 * 2 + 2 * 3 * s * 64) * f,
                  2.0 * 9 * s * s * 64});
  // ResNet-50's convolutions at batch 4, 224² (the benchmark's): every distinct shape (channels
  // in, map, channels out, kernel, stride), bench/ops_torch.py's list too. --quick: the stem and
  // a 3x3 of the first stage.
  struct ConvShape {
    int64_t n, c, hw, out, k, stride;
  };
  std::vector<ConvShape> convs = {{4, 3, 224, 64, 7, 2}, {4, 64, 56, 64, 3, 1}};
  if (!quick)
    convs.insert(convs.end(), {{4, 64, 56, 64, 1, 1},     {4, 64, 56, 256, 1, 1},   {4, 256, 56, 64, 1, 1},
                               {4, 256, 56, 128, 1, 1},   {4, 128, 56, 128, 3, 2},  {4, 128, 28, 512, 1, 1},
                               {4, 256, 56, 512, 1, 2},   {4, 512, 28, 128, 1, 1},  {4, 128, 28, 128, 3, 1},
                               {4, 512, 28, 256, 1, 1},   {4, 256, 28, 256, 3, 2},  {4, 256, 14, 1024, 1, 1},
                               {4, 512, 28, 1024, 1, 2},  {4, 1024, 14, 256, 1, 1}, {4, 256, 14, 256, 3, 1},
                               {4, 1024, 14, 512, 1, 1},  {4, 512, 14, 512, 3, 2},  {4, 512, 7, 2048, 1, 1},
                               {4, 1024, 14, 2048, 1, 2}, {4, 2048, 7, 512, 1, 1},  {4, 512, 7, 512, 3, 1}});
  for (const ConvShape& v : convs) {
    const int64_t o = (v.hw + 2 * (v.k / 2) - v.k) / v.stride + 1;
    cs.push_back({"conv2d/" + std::to_string(v.n) + "x" + std::to_string(v.c) + "x" + std::to_string(v.hw) + "x" +
                      std::to_string(v.hw) + "_" + std::to_string(v.k) + "x" + std::to_string(v.k) + "s" +
                      std::to_string(v.stride) + "x" + std::to_string(v.out),
                  {{"x", {v.n, v.c, v.hw, v.hw}}, {"w", {v.out, v.c, v.k, v.k}}},
                  [v](auto& t) { return mn::conv2d(t[0], t[1], {}, {.stride = {v.stride}, .padding = {v.k / 2}}); },
                  double(v.n * v.c * v.hw * v.hw + v.out * v.c * v.k * v.k + v.n * v.out * o * o) * f,
                  2.0 * v.n * v.out * o * o * v.c * v.k * v.k,
                  true});
  }
  return cs;
}

}  // namespace

int main(int argc, char** argv) {
  // Our own flag, --quick, and default flags that the command line may override (later wins).
  bool quick = false;
  std::vector<char*> args{argv[0]};
  std::string min_time = "--benchmark_min_time=0.25";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
      min_time = "--benchmark_min_time=0.05";
    }
  }
  args.push_back(min_time.data());
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--quick") != 0) args.push_back(argv[i]);
  int n_args = static_cast<int>(args.size());

  benchmark::Initialize(&n_args, args.data());
  if (benchmark::ReportUnrecognizedArguments(n_args, args.data())) return 1;
  try {
    benchmark::AddCustomContext("meganeura_device", mn::default_device_info().banner());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  benchmark::AddCustomContext("meganeura_sizes", quick ? "quick" : "full");

  static std::vector<Case> cases = make_cases(quick);
  for (const Case& c : cases)
    benchmark::RegisterBenchmark(c.name.c_str(), [&c](benchmark::State& st) { run_case(st, c); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);

  benchmark::RunSpecifiedBenchmarks();
  g_prepared.reset();  // release device memory before the Vulkan context goes away
  benchmark::Shutdown();
  return 0;
}
