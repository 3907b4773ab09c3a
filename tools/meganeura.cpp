// The `meganeura` command line tool. `meganeura info` prints one line per Vulkan device (the
// banner users paste into bug reports), the default device marked with '*'. `meganeura optimize`
// runs the e-graph optimizer on a Llama-style model written from primitive ops and says what it
// found and how long it took (no GPU needed). `meganeura download` fetches a model's files from the
// Hugging Face Hub into the shared Hugging Face cache and prints where they are.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "meganeura/autodiff.hpp"
#include "meganeura/device.hpp"
#include "meganeura/error.hpp"
#include "meganeura/hub.hpp"
#include "lower/lowered.hpp"
#include "commands.hpp"
#include "models/llama_primitives.hpp"
#include "optimize/optimize.hpp"
#include "train/training_graph.hpp"

namespace {

constexpr const char* kUsage =
    "usage: meganeura <command>\n"
    "\n"
    "commands:\n"
    "  info      list the Vulkan devices and what each offers ('*' marks the default)\n"
    "  optimize [--layers N] [--seq S] [--train] [--max-seconds T] [--rule-times]\n"
    "            run the graph optimizer on a Llama-style decoder written from primitive ops\n"
    "            (SmolLM2-135M's shape: 30 layers, seq 128); --train adds the backward graph;\n"
    "            --max-seconds overrides the optimizer's time limit (default 0.25);\n"
    "            --rule-times also times one search of each rule on the initial e-graph\n"
    "  download <repo_id> [--revision R] [files...]\n"
    "            fetch files of a Hugging Face Hub repository into the Hugging Face cache and\n"
    "            print the snapshot directory; without files: what a model needs (config.json,\n"
    "            tokenizer files, model.safetensors or every shard of its index). Resumes an\n"
    "            interrupted download; files already cached are not fetched again\n"
    "  generate --model <repo_id or directory> [--prompt TEXT] [--max-tokens N] [--temperature T]\n"
    "           [--top-k K] [--top-p P] [--seed S] [--max-seq N] [--revision R]\n"
    "            complete a prompt with a Llama-family model from the Hugging Face Hub (fetched\n"
    "            into the Hugging Face cache) or a local directory (config.json, tokenizer.json,\n"
    "            safetensors); streams the text, then prints tokens/s. Greedy unless --temperature\n"
    "  help      show this message (also --help, -h)\n"
    "\n"
    "environment:\n"
    "  MEGANEURA_DEVICE=<index or name>   the device to run on\n"
    "  MEGANEURA_VALIDATION=1             Vulkan validation layer with synchronization checks\n"
    "  MEGANEURA_TIMEOUT_S=<seconds>      how long a step may take before it counts as a hang (60)\n"
    "  HF_TOKEN=<token>                   access token for gated or private repositories\n"
    "  HF_HUB_CACHE=<dir>, HF_HOME=<dir>  the Hugging Face cache (~/.cache/huggingface/hub)\n"
    "  HF_HUB_OFFLINE=1                   no network: files come from the cache only\n"
    "  HF_ENDPOINT=<url>                  a Hub mirror (https://huggingface.co)\n";

int info() {
  const auto devices = meganeura::list_devices();
  // The default is chosen separately so a bad MEGANEURA_DEVICE still lists the devices first.
  std::string error;
  int chosen = -1;
  try {
    chosen = meganeura::default_device_info().index;
  } catch (const meganeura::Error& e) {
    error = e.what();
  }
  for (const auto& d : devices) std::printf("%s %s\n", d.index == chosen ? "*" : " ", d.banner().c_str());
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  return 0;
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int count_op(const meganeura::Graph& g, meganeura::Op op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.op == op;
  return n;
}

int optimize_command(int argc, char** argv) {
  namespace mn = meganeura;
  mn::models::LlamaShape shape;
  bool train = false, rule_times = false;
  mn::optimize::Limits limits;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw mn::Error("optimize: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--layers") shape.layers = std::atoi(value());
    else if (a == "--seq") shape.seq = std::atoll(value());
    else if (a == "--train") train = true;
    else if (a == "--max-seconds") limits.max_seconds = std::atof(value());
    else if (a == "--rule-times") rule_times = true;
    else throw mn::Error("optimize: unknown option '" + a + "' (see meganeura --help)");
  }
  if (shape.layers < 0 || shape.seq < 1) throw mn::Error("optimize: --layers >= 0 and --seq >= 1");

  auto t0 = Clock::now();
  mn::Graph g;
  mn::Tensor loss = mn::models::llama_from_primitives(g, shape);
  const double build_ms = ms_since(t0);
  std::printf("model: %d layers, hidden %lld, heads %lld/%lld, seq %lld, %s; graph %d nodes (build %.1f ms)\n",
              shape.layers, static_cast<long long>(shape.hidden), static_cast<long long>(shape.heads),
              static_cast<long long>(shape.kv_heads), static_cast<long long>(shape.seq),
              train ? "training (forward + backward)" : "inference", g.size(), build_ms);

  // Training: exactly what build_session does (fuse forward, differentiate, optimize again).
  mn::optimize::Report report;
  std::unique_ptr<mn::Graph> out;
  std::vector<int> grads;
  auto t2 = Clock::now();
  if (train) {
    mn::train::TrainingGraph tg = mn::train::build_training_graph(g, loss, {}, limits);
    std::printf("forward pass first: %s\n", tg.forward_report.to_string().c_str());
    report = std::move(tg.report);
    out = std::move(tg.graph);
    grads = std::move(tg.grads);
  } else {
    out = mn::optimize::optimize(g, &report, {}, nullptr, limits);
  }
  const double optimize_ms = ms_since(t2);
  // Dispatches per step as lowering emits them (the optimizer's update calls of a training
  // session come on top): the graph as written, then optimized with lowering's fusions.
  size_t dispatches_before = 0;
  if (train) {
    mn::train::TrainingGraph plain = mn::train::build_training_graph(g, loss, {.optimize = false});
    dispatches_before = mn::lower::lower(*plain.graph, plain.grads, {.fuse = false}).calls.size();
  } else {
    dispatches_before = mn::lower::lower(g, {}, {.fuse = false}).calls.size();
  }
  const size_t dispatches_after = mn::lower::lower(*out, grads, {.fuse = true}).calls.size();
  std::printf("%s\n", report.to_string().c_str());
  std::printf("optimize() wall time: %.1f ms (run %.1f ms, limit %.0f ms)\n", optimize_ms, report.run.seconds * 1e3,
              limits.max_seconds * 1e3);
  std::printf("dispatches per step (forward%s): %zu -> %zu\n", train ? " + backward" : "", dispatches_before,
              dispatches_after);
  std::printf("%-10s %8s %8s\n", "op", "before", "after");
  for (mn::Op op : {mn::Op::Silu, mn::Op::SwiGlu, mn::Op::RmsNorm, mn::Op::Softmax, mn::Op::Attention, mn::Op::Sigmoid, mn::Op::Rsqrt, mn::Op::Exp})
    std::printf("%-10s %8d %8d\n", std::string(mn::op_name(op)).c_str(), count_op(g, op), count_op(*out, op));
  for (int i = 0; i < mn::op_count(); ++i) {  // every other op whose count changed
    const mn::Op op = mn::op_at(i);
    if (op == mn::Op::Silu || op == mn::Op::SwiGlu || op == mn::Op::RmsNorm || op == mn::Op::Softmax || op == mn::Op::Attention || op == mn::Op::Sigmoid ||
        op == mn::Op::Rsqrt || op == mn::Op::Exp)
      continue;
    if (int before = count_op(g, op), after = count_op(*out, op); before != after)
      std::printf("%-10s %8d %8d\n", std::string(mn::op_name(op)).c_str(), before, after);
  }

  if (rule_times) {  // one search of every rule on the initial e-graph, as the runner's first iteration does
    std::vector<mn::optimize::ClassId> class_of;
    mn::optimize::EGraph eg = mn::optimize::to_egraph(g, class_of);
    eg.rebuild();
    std::printf("rule search times on the initial e-graph (%zu e-nodes):\n", eg.node_count());
    double total = 0;
    for (const auto& rule : mn::optimize::rules()) {
      auto t = Clock::now();
      auto matches = mn::optimize::search(eg, rule.lhs);
      const double search_ms = ms_since(t);
      size_t kept = matches.size();
      if (rule.guard) kept = static_cast<size_t>(std::count_if(matches.begin(), matches.end(), [&](const auto& m) {
                        return rule.guard(eg, m);
                      }));
      total += search_ms;
      std::printf("  %-22s %9.2f ms  %6zu matches (%zu pass the guard)\n", rule.name.c_str(), search_ms,
                  matches.size(), kept);
    }
    std::printf("  %-22s %9.2f ms\n", "all rules", total);
  }
  return 0;
}

int download_command(int argc, char** argv) {
  namespace hub = meganeura::hub;
  hub::HubOptions options;
  std::string repo_id;
  std::vector<std::string> files;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--revision") {
      if (i + 1 >= argc) throw meganeura::Error("download: --revision needs a value");
      options.revision = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      throw meganeura::Error("download: unknown option '" + a + "' (see meganeura --help)");
    } else if (repo_id.empty()) {
      repo_id = a;
    } else {
      files.push_back(a);
    }
  }
  if (repo_id.empty()) throw meganeura::Error("download: which repository? meganeura download <repo_id> [--revision R] [files...]");
  std::printf("%s\n", hub::snapshot(repo_id, files, options).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "info" && argc > 2) {
    std::fprintf(stderr, "meganeura: info takes no arguments\n\n%s", kUsage);
    return 2;
  }
  try {
    if (command == "info") return info();
    if (command == "optimize") return optimize_command(argc, argv);
    if (command == "download") return download_command(argc, argv);
    if (command == "generate") return generate_command(argc, argv);
  } catch (const meganeura::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "meganeura: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
