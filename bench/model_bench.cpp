// meganeura-bench-model: a Llama model (a Hugging Face directory: config.json + safetensors) timed
// on the device at --batch rows (decode: 1) in three modes, one JSON line per mode on stdout, progress on stderr:
//   inference  the forward over --seq tokens (logits of every position)
//   decode     the Generator's KV-cache decode after a --seq-token prefill, per token
//   train      one step: forward, next-token cross-entropy, backward, SGD
// bench/model_torch.py prints the same lines for PyTorch on the same weights and tokens, and
// bench/model_table.py joins them (bench/run_models.sh runs all three on the GPU machine).
//
//   meganeura-bench-model --model DIR [--name NAME] [--batch 1] [--seq 128] [--runs 30] [--warmup 5]
//                         [--modes inference,decode,train] [--optimize on|off] [--lr 1e-4]
//                         [--breakdown N] [--listing DIR]
//
// wall: Session::step() (host submit, every dispatch, fence wait) in a session without timestamps.
// gpu: the sum of the per-dispatch timestamps (SessionOptions::profile) in a second session of the
// same graph, so the timestamps never slow the wall-clock runs. compile_s: building the first
// session (optimize, autodiff, lower, plan, pipelines, recording); weights load after it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "meganeura/device.hpp"
#include "meganeura/error.hpp"
#include "meganeura/io.hpp"
#include "meganeura/llama.hpp"
#include "meganeura/ops.hpp"
#include "meganeura/train.hpp"

namespace mn = meganeura;
using bench::Json;
using bench::seconds_since;
using bench::Stats;
using bench::stats;
using bench::wall_ms;
using mn::HostTensor;
using mn::Session;
using mn::Tensor;
using mn::models::LlamaConfig;

namespace {

struct Options {
  std::string model_dir, name;
  int64_t batch = 1, seq = 128;  // batch: inference and train (decoding is one sequence)
  int runs = 30, warmup = 5;
  std::vector<std::string> modes{"inference", "decode", "train"};
  bool optimize = true;
  float lr = 1e-4f;
  int breakdown = 0;    // print the N kinds of dispatch that take the most GPU time (stderr)
  std::string listing;  // a folder: each mode's recorded step (<mode>.txt), GPU time per dispatch (<mode>-profile.txt);
                        // decode also the Generator's program (decode-program*.txt)
};

struct Bench {
  Options opt;
  LlamaConfig config;
  mn::Checkpoint weights;
};

// The token at position i, the same in bench/model_torch.py.
int32_t token(int64_t i, int64_t vocab) { return static_cast<int32_t>((i * 7919 + 13) % vocab); }

std::vector<int32_t> iota_from(int64_t start, int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>(start + i);
  return v;
}

// With --listing: `text` to <dir>/<file>.
void write_listing_file(const Options& o, const std::string& file, const std::string& text) {
  if (o.listing.empty()) return;
  const std::string path = o.listing + "/" + file;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw mn::Error("--listing: cannot write " + path);
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

// The session's recorded step (dispatch labels, copies, barriers) to <dir>/<mode>.txt.
void write_listing(const Options& o, const std::string& mode, const Session& s) {
  if (!o.listing.empty()) write_listing_file(o, mode + ".txt", s.listing());
}

// A profile, one dispatch a line (GPU µs, label), to <dir>/<file>.
void write_profile_lines(const Options& o, const std::string& file,
                         const std::vector<std::pair<std::string, double>>& profile) {
  std::string text;
  char us[32];
  for (const auto& [label, ns] : profile) {
    std::snprintf(us, sizeof us, "%9.2f  ", ns / 1e3);
    text += us + label + "\n";
  }
  write_listing_file(o, file, text);
}

// The profiled session's last step to <dir>/<mode>-profile.txt.
void write_profile(const Options& o, const std::string& mode, const Session& s) {
  if (!o.listing.empty()) write_profile_lines(o, mode + "-profile.txt", s.profile());
}

// The GPU ms of each timed run (bench::gpu_ms), and where the last one's time went.
std::vector<double> gpu_ms(const Options& o, const Session& s, const std::function<void()>& f) {
  std::vector<double> ms = bench::gpu_ms(o.warmup, o.runs, s, f);
  if (o.breakdown > 0) bench::print_breakdown(s.profile(), o.breakdown);
  return ms;
}

std::vector<float> first(const std::vector<float>& v, size_t n) {
  return {v.begin(), v.begin() + std::min(n, v.size())};
}

double abs_sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += std::abs(x);
  return s;
}

double sum(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s;
}

// --- inference: all positions' logits, reduced on the device to what the host reads (the last
// row, and each row's sum and sum of |x|) so no 25 MB download enters the timing; the PyTorch
// twin computes the same three reductions inside its timed call.
std::unique_ptr<mn::Graph> inference_graph(const LlamaConfig& c, int64_t batch, int64_t seq) {
  auto g = std::make_unique<mn::Graph>();
  Tensor ids = g->input("input_ids", {batch, seq}, mn::i32);
  Tensor positions = g->input("positions", {seq}, mn::i32);
  Tensor logits = mn::models::Llama(*g, c)(ids, positions);
  g->output("last", mn::slice(logits, 1, seq - 1, seq));
  g->output("row_sum", mn::sum(logits, {-1}));
  g->output("row_abs_sum", mn::sum(mn::abs(logits), {-1}));
  return g;
}

// Row r's tokens continue row r - 1's: token(r * seq + i).
std::vector<int32_t> batch_tokens(const Bench& b, int64_t shift) {
  const int64_t seq = b.opt.seq;
  std::vector<int32_t> ids(static_cast<size_t>(b.opt.batch * seq));
  for (int64_t i = 0; i < b.opt.batch * seq; ++i) ids[static_cast<size_t>(i)] = token(i + shift, b.config.vocab_size);
  return ids;
}

void set_tokens(Session& s, const Bench& b) {
  s.set_input("input_ids", HostTensor::i32s({b.opt.batch, b.opt.seq}, batch_tokens(b, 0)));
  s.set_input("positions", HostTensor::i32s({b.opt.seq}, iota_from(0, b.opt.seq)));
}

Json inference(const Bench& b) {
  auto g = inference_graph(b.config, b.opt.batch, b.opt.seq);
  Json j;
  {  // one session at a time, as train() does
    auto t0 = std::chrono::steady_clock::now();
    Session s = mn::build_inference_session(*g, {.optimize = b.opt.optimize});
    j.num("compile_s", seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    mn::models::load_weights(s, *g, b.weights);
    j.num("load_s", seconds_since(t0));
    set_tokens(s, b);
    j.times("wall", stats(wall_ms(b.opt.warmup, b.opt.runs, [&] { s.step(); })));
    j.num("dispatches", s.stats().dispatches).num("barriers", s.stats().barriers);
    write_listing(b.opt, "inference", s);
    j.nums("sample", first(s.read_output("last").to_f32(), 4));
    j.num("checksum", sum(s.read_output("row_abs_sum").to_f32()));
    j.num("sum", sum(s.read_output("row_sum").to_f32()));
  }
  Session p = mn::build_inference_session(*g, {.profile = true, .optimize = b.opt.optimize});
  mn::models::load_weights(p, *g, b.weights);
  set_tokens(p, b);
  j.times("gpu", stats(gpu_ms(b.opt, p, [&] { p.step(); })));
  write_profile(b.opt, "inference", p);
  j.str("note", "sample: logits[0, -1, :4]; checksum: sum |logits| over all positions");
  return j;
}

// --- decode: the Generator (prefill and decode programs of one session; a token decoded by
// the persistent dispatch where the device takes it). Its GPU time comes from a second, profiled
// Generator at the same cache positions: timestamps serialise dispatches, so the timed one has none.
Json decode(const Bench& b) {
  const int64_t vocab = b.config.vocab_size, seq = b.opt.seq;
  mn::models::GeneratorOptions go;
  go.max_seq = seq + 2 * (b.opt.warmup + b.opt.runs) + 1;  // the timed decodes, then the timed advances
  go.prefill_chunk = seq;                                  // the prompt is one prefill run
  go.session.optimize = b.opt.optimize;
  Json j;
  auto t0 = std::chrono::steady_clock::now();
  mn::models::Generator gen(b.config, go);
  j.num("compile_s", seconds_since(t0));
  t0 = std::chrono::steady_clock::now();
  gen.load(b.weights);
  j.num("load_s", seconds_since(t0));
  std::vector<int32_t> prompt(static_cast<size_t>(seq));
  for (int64_t i = 0; i < seq; ++i) prompt[static_cast<size_t>(i)] = token(i, vocab);
  const Stats prefill = stats(wall_ms(b.opt.warmup, b.opt.runs, [&] { gen.prefill(prompt); }));
  gen.prefill(prompt);
  std::vector<float> logits;
  j.times("wall", stats(wall_ms(b.opt.warmup, b.opt.runs, [&] { logits = gen.decode(token(gen.position(), vocab)); })));
  const int64_t sampled_at = gen.position() - 1;  // the position `logits` predict from
  // The same step without the logits' trip to the host (what the PyTorch twin times).
  j.times("run", stats(wall_ms(b.opt.warmup, b.opt.runs, [&] { gen.advance(token(gen.position(), vocab)); })));
  // Workgroups of the persistent dispatch that decoded (0: the decode program did).
  j.num("persistent_grid", gen.persistent_grid());
  j.str("persistent_weights", gen.persistent_weights());  // "f16", "f32", "" (the program)

  go.session.profile = true;
  mn::models::Generator timed(b.config, go);
  timed.load(b.weights);
  timed.prefill(prompt);
  j.times("gpu", stats(bench::gpu_ms(
                     b.opt.warmup, b.opt.runs, [&] { timed.advance(token(timed.position(), vocab)); },
                     [&] { return timed.decode_profile(); })));
  if (b.opt.breakdown > 0) bench::print_breakdown(timed.decode_profile(), b.opt.breakdown);
  j.num("dispatches", static_cast<double>(timed.decode_profile().size()));
  if (!b.opt.listing.empty()) {
    write_profile_lines(b.opt, "decode-profile.txt", timed.decode_profile());
    // The Generator's decoding program (what decodes where the persistent dispatch does not),
    // listed and profiled.
    go.persistent = false;
    mn::models::Generator profiled(b.config, go);
    profiled.load(b.weights);
    profiled.prefill(prompt);
    for (int i = 0; i < 3; ++i) profiled.advance(token(profiled.position(), vocab));
    write_listing_file(b.opt, "decode-program.txt", profiled.session().listing(1));
    write_profile_lines(b.opt, "decode-program-profile.txt", profiled.session().profile(1));
  }
  j.times("prefill", prefill);
  j.nums("sample", first(logits, 4));
  j.num("checksum", abs_sum(logits));
  j.num("position", static_cast<double>(sampled_at));
  j.str("note",
        "ms per token (Generator::decode: inputs, run, logits to the host); sample: the last decode's "
        "logits[:4], checksum: sum |logits| of it; prefill: Generator::prefill of the prompt; gpu: a "
        "profiled Generator's decoding step (Generator::decode_profile)");
  return j;
}

// --- train: next-token cross-entropy (labels = the tokens shifted left, the last ignored, as
// Hugging Face's labels=input_ids); only the loss comes back to the host.
Json train(const Bench& b) {
  const int64_t seq = b.opt.seq;
  auto g = std::make_unique<mn::Graph>();
  const int64_t batch = b.opt.batch;
  Tensor ids = g->input("input_ids", {batch, seq}, mn::i32);
  Tensor positions = g->input("positions", {seq}, mn::i32);
  Tensor labels = g->input("labels", {batch, seq}, mn::i32);
  Tensor loss = mn::cross_entropy(mn::models::Llama(*g, b.config)(ids, positions), labels);
  std::vector<int32_t> next = batch_tokens(b, 1);
  for (int64_t r = 0; r < batch; ++r) next[static_cast<size_t>(r * seq + seq - 1)] = -100;
  auto prepare = [&](Session& s) {
    mn::models::load_weights(s, *g, b.weights);
    set_tokens(s, b);
    s.set_input("labels", HostTensor::i32s({batch, seq}, next));
  };
  mn::TrainConfig cfg;
  cfg.optimizer = mn::SGD{.lr = b.opt.lr};
  cfg.optimize = b.opt.optimize;
  Json j;
  float first_loss = 0, last_loss = 0;
  std::vector<float> grad;
  {  // one session at a time: at 1.7B parameters and 8 x 512 tokens two would not fit
    auto t0 = std::chrono::steady_clock::now();
    Session s = mn::build_session(*g, loss, cfg);
    j.num("compile_s", seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    prepare(s);
    j.num("load_s", seconds_since(t0));
    s.step();  // the first step sees the checkpoint's weights, as PyTorch's first step does
    first_loss = s.read_loss();
    grad = s.read_grad("model.norm.weight").to_f32();
    j.times("wall", stats(wall_ms(b.opt.warmup, b.opt.runs, [&] { s.step(); })));
    last_loss = s.read_loss();
    j.num("dispatches", s.stats().dispatches).num("barriers", s.stats().barriers);
    j.num("device_gib", static_cast<double>(s.memory().total_device) / (1 << 30));
    write_listing(b.opt, "train", s);
  }
  cfg.profile = true;
  Session p = mn::build_session(*g, loss, cfg);
  prepare(p);
  j.times("gpu", stats(gpu_ms(b.opt, p, [&] { p.step(); })));
  write_profile(b.opt, "train", p);
  j.num("loss", first_loss);
  j.num("loss_last", last_loss);
  j.nums("sample", first(grad, 4));
  j.num("checksum", abs_sum(grad));
  j.num("lr", b.opt.lr);
  j.str("note",
        "SGD; loss: step 1 (the checkpoint's weights); sample: grad of model.norm.weight[:4] at step 1, "
        "checksum: sum |that grad|");
  return j;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw mn::Error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--model")
      o.model_dir = value();
    else if (a == "--name")
      o.name = value();
    else if (a == "--batch")
      o.batch = std::stoll(value());
    else if (a == "--seq")
      o.seq = std::stoll(value());
    else if (a == "--runs")
      o.runs = std::stoi(value());
    else if (a == "--warmup")
      o.warmup = std::stoi(value());
    else if (a == "--modes")
      o.modes = bench::split_list(value());
    else if (a == "--optimize")
      o.optimize = value() != "off";
    else if (a == "--lr")
      o.lr = std::stof(value());
    else if (a == "--breakdown")
      o.breakdown = std::stoi(value());
    else if (a == "--listing")
      o.listing = value();
    else
      throw mn::Error("unknown option '" + a + "'");
  }
  if (o.model_dir.empty()) throw mn::Error("--model DIR (config.json + model.safetensors) is required");
  if (o.batch < 1 || o.seq < 2 || o.runs < 1 || o.warmup < 0)
    throw mn::Error("--batch must be at least 1, --seq at least 2, --runs at least 1");
  if (o.name.empty()) {
    std::string dir = o.model_dir;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    o.name = dir.substr(dir.find_last_of('/') + 1);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(
        stderr,
        "meganeura-bench-model: %s\nusage: meganeura-bench-model --model DIR [--name NAME] [--batch 1] [--seq 128] "
        "[--runs 30] [--warmup 5] [--modes inference,decode,train] [--optimize on|off] [--lr 1e-4] "
        "[--breakdown N] [--listing DIR]\n",
        e.what());
    return 2;
  }
  std::string device;
  std::unique_ptr<Bench> bench;
  try {
    device = mn::default_device_info().name;
    bench.reset(new Bench{o, LlamaConfig::from_file(o.model_dir + "/config.json"), mn::Checkpoint::open(o.model_dir)});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meganeura-bench-model: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "meganeura-bench-model: %s on %s\n", o.model_dir.c_str(), device.c_str());
  const Bench& b = *bench;
  const std::vector<std::pair<std::string, std::function<Json(const Bench&)>>> modes = {
      {"inference", inference}, {"decode", decode}, {"train", train}};
  int failures = 0;
  for (const std::string& mode : o.modes) {
    Json head;
    head.str("impl", "meganeura").str("model", o.name).str("mode", mode).str("device", device);
    head.num("batch", static_cast<double>(mode == "decode" ? 1 : o.batch))
        .num("seq", static_cast<double>(o.seq))
        .num("runs", o.runs)
        .flag("optimize", o.optimize);
    std::string line;
    try {
      auto it = std::find_if(modes.begin(), modes.end(), [&](const auto& m) { return m.first == mode; });
      if (it == modes.end()) throw mn::Error("unknown mode '" + mode + "' (inference, decode, train)");
      std::fprintf(stderr, "meganeura-bench-model: %s ...\n", mode.c_str());
      const std::string fields = it->second(b).text();
      line = head.text();
      line = line.substr(0, line.size() - 1) + "," + fields.substr(1);
    } catch (const std::exception& e) {
      ++failures;
      line = head.str("error", e.what()).text();
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}
