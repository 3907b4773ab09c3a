// The `meganeura` command line tool. `meganeura info` prints one line per Vulkan device (the
// banner users paste into bug reports), the default device marked with '*'. `meganeura optimize`
// runs the e-graph optimizer on a Llama-style model written from primitive ops and says what it
// found and how long it took (no GPU needed). `meganeura download` fetches a model's files from the
// Hugging Face Hub into the shared Hugging Face cache and prints where they are. `meganeura
// generate` (generate.cpp) completes a prompt. Every command reads its arguments through
// cli::Args (cli_args.hpp) and answers --help; usage mistakes exit 2, failures 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cli_args.hpp"
#include "commands.hpp"
#include "lower/lowered.hpp"
#include "meganeura/autodiff.hpp"
#include "meganeura/device.hpp"
#include "meganeura/error.hpp"
#include "meganeura/hub.hpp"
#include "models/llama_primitives.hpp"
#include "optimize/optimize.hpp"
#include "train/training_graph.hpp"

namespace {

constexpr const char* kInfoHelp =
    "usage: meganeura info\n"
    "\n"
    "list the Vulkan devices and what each offers (subgroup size, shared memory, fp16/bf16,\n"
    "cooperative-matrix shapes); '*' marks the one sessions use (MEGANEURA_DEVICE picks another).\n"
    "Paste it into bug reports\n";

constexpr const char* kOptimizeHelp =
    "usage: meganeura optimize [--layers N] [--seq S] [--train] [--max-seconds T] [--rule-times]\n"
    "\n"
    "run the graph optimizer on a Llama-style decoder written from primitive ops (SmolLM2-135M's\n"
    "shape) and say what it found, how long it took and the dispatches per step (no GPU needed)\n"
    "\n"
    "options:\n"
    "  --layers N         decoder layers, 0 to 1000 (default 30)\n"
    "  --seq S            sequence length, 1 to 65536 (default 128)\n"
    "  --train            add the backward graph, as a training session does\n"
    "  --max-seconds T    the optimizer's time limit in seconds, 0 to 3600 (default 0.25)\n"
    "  --rule-times       also time one search of each rule on the initial e-graph\n"
    "  -h, --help         show this help\n";

constexpr const char* kDownloadHelp =
    "usage: meganeura download <repo_id> [--revision R] [files...]\n"
    "\n"
    "fetch files of a Hugging Face Hub repository into the Hugging Face cache and print the\n"
    "snapshot directory; without files: what a model needs (config.json, tokenizer files,\n"
    "model.safetensors or every shard of its index). Resumes an interrupted download; files\n"
    "already cached are not fetched again\n"
    "\n"
    "options:\n"
    "  --revision R       a branch, a tag or a full commit hash (default main)\n"
    "  -h, --help         show this help\n";

constexpr const char* kEnvironment =
    "environment:\n"
    "  MEGANEURA_DEVICE=<index or name>   the device to run on\n"
    "  MEGANEURA_VALIDATION=1             Vulkan validation layer with synchronization checks\n"
    "  MEGANEURA_TIMEOUT_S=<seconds>      how long a step may take before it counts as a hang (60)\n"
    "  HF_TOKEN=<token>                   access token for gated or private repositories\n"
    "  HF_HUB_CACHE=<dir>, HF_HOME=<dir>  the Hugging Face cache (~/.cache/huggingface/hub)\n"
    "  HF_HUB_OFFLINE=1                   no network: files come from the cache only\n"
    "  HF_ENDPOINT=<url>                  a Hub mirror (https://huggingface.co)\n";

int info_command(cli::Args& args) {
  if (!args.done()) {
    const std::string a = args.next();
    if (cli::Args::is_option(a)) args.unknown_option(a);
    throw args.error("takes no arguments (got '" + a + "')");
  }
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

// Lowering with or without its own fusions, the exact f32 matmul tiers (what is counted is the
// dispatches, not the kernels).
meganeura::lower::LowerOptions lowering(bool fuse) {
  meganeura::lower::LowerOptions o;
  o.fuse = fuse;
  return o;
}

struct OptimizeArgs {
  meganeura::models::LlamaShape shape;
  meganeura::optimize::Limits limits;
  bool train = false, rule_times = false;
};

OptimizeArgs parse_optimize_args(cli::Args& args) {
  OptimizeArgs o;
  while (!args.done()) {
    const std::string a = args.next();
    if (a == "--layers")
      o.shape.layers = static_cast<int>(args.integer(a, 0, 1000));
    else if (a == "--seq")
      o.shape.seq = args.integer(a, 1, 65536);
    else if (a == "--train")
      o.train = true;
    else if (a == "--max-seconds")
      o.limits.max_seconds = args.number(a, 0, 3600);
    else if (a == "--rule-times")
      o.rule_times = true;
    else if (cli::Args::is_option(a))
      args.unknown_option(a);
    else
      throw args.error("unexpected argument '" + a + "' (optimize takes only options)");
  }
  return o;
}

int optimize_command(cli::Args& args) {
  namespace mn = meganeura;
  const OptimizeArgs parsed = parse_optimize_args(args);
  const mn::models::LlamaShape& shape = parsed.shape;
  const mn::optimize::Limits& limits = parsed.limits;
  const bool train = parsed.train, rule_times = parsed.rule_times;

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
    dispatches_before = mn::lower::lower(*plain.graph, plain.grads, lowering(false)).calls.size();
  } else {
    dispatches_before = mn::lower::lower(g, {}, lowering(false)).calls.size();
  }
  const size_t dispatches_after = mn::lower::lower(*out, grads, lowering(true)).calls.size();
  std::printf("%s\n", report.to_string().c_str());
  std::printf("optimize() wall time: %.1f ms (run %.1f ms, limit %.0f ms)\n", optimize_ms, report.run.seconds * 1e3,
              limits.max_seconds * 1e3);
  std::printf("dispatches per step (forward%s): %zu -> %zu\n", train ? " + backward" : "", dispatches_before,
              dispatches_after);
  std::printf("%-10s %8s %8s\n", "op", "before", "after");
  for (mn::Op op : {mn::Op::Silu, mn::Op::SwiGlu, mn::Op::RmsNorm, mn::Op::Softmax, mn::Op::Attention, mn::Op::Sigmoid,
                    mn::Op::Rsqrt, mn::Op::Exp})
    std::printf("%-10s %8d %8d\n", std::string(mn::op_name(op)).c_str(), count_op(g, op), count_op(*out, op));
  for (int i = 0; i < mn::op_count(); ++i) {  // every other op whose count changed
    const mn::Op op = mn::op_at(i);
    if (op == mn::Op::Silu || op == mn::Op::SwiGlu || op == mn::Op::RmsNorm || op == mn::Op::Softmax ||
        op == mn::Op::Attention || op == mn::Op::Sigmoid || op == mn::Op::Rsqrt || op == mn::Op::Exp)
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
      if (rule.guard)
        kept = static_cast<size_t>(
            std::count_if(matches.begin(), matches.end(), [&](const auto& m) { return rule.guard(eg, m); }));
      total += search_ms;
      std::printf("  %-22s %9.2f ms  %6zu matches (%zu pass the guard)\n", rule.name.c_str(), search_ms, matches.size(),
                  kept);
    }
    std::printf("  %-22s %9.2f ms\n", "all rules", total);
  }
  return 0;
}

int download_command(cli::Args& args) {
  namespace hub = meganeura::hub;
  hub::HubOptions options;
  std::string repo_id;
  std::vector<std::string> files;
  while (!args.done()) {
    const std::string a = args.next();
    if (a == "--revision")
      options.revision = args.text(a, "a branch, a tag or a full commit hash");
    else if (cli::Args::is_option(a))
      args.unknown_option(a);
    else if (repo_id.empty())
      repo_id = a;
    else
      files.push_back(a);
  }
  if (repo_id.empty()) throw args.error("which repository? meganeura download <repo_id> [--revision R] [files...]");
  std::printf("%s\n", hub::snapshot(repo_id, files, options).c_str());
  return 0;
}

struct Command {
  std::string_view name;
  const char* summary;  // its line in the general usage
  const char* help;     // what `meganeura <name> --help` prints
  int (*run)(cli::Args&);
};

const Command kCommands[] = {
    {"info", "list the Vulkan devices and what each offers ('*' marks the default)", kInfoHelp, info_command},
    {"optimize", "run the graph optimizer on a Llama-style decoder and report what it found", kOptimizeHelp,
     optimize_command},
    {"download", "fetch a Hugging Face Hub repository's files into the Hugging Face cache", kDownloadHelp,
     download_command},
    {"generate", "complete a prompt with a Llama-family model (Hub repository or directory)", kGenerateHelp,
     generate_command},
};

const Command* find_command(std::string_view name) {
  for (const Command& c : kCommands)
    if (c.name == name) return &c;
  return nullptr;
}

void print_usage(std::FILE* out) {
  std::fputs("usage: meganeura <command> [options]\n\ncommands:\n", out);
  for (const Command& c : kCommands) std::fprintf(out, "  %-10s%s\n", std::string(c.name).c_str(), c.summary);
  std::fputs("  help      this message; help <command>: that command's options (also <command> --help)\n\n", out);
  std::fputs(kEnvironment, out);
}

// Every failure ends here, so none escapes as an abort: usage mistakes exit 2, failures of the
// work itself 1, each naming the command.
int run_command(const Command& c, cli::Args& args) {
  const std::string name(c.name);
  try {
    return c.run(args);
  } catch (const cli::UsageError& e) {
    std::fprintf(stderr, "%s\nrun 'meganeura %s --help' for its options\n", e.what(), name.c_str());
    return 2;
  } catch (const meganeura::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "meganeura %s failed: %s\n", name.c_str(), e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "meganeura %s failed with an unknown exception\n", name.c_str());
    return 1;
  }
}

// `meganeura help [command]`.
int help_command(const std::vector<std::string>& args) {
  if (args.empty()) {
    print_usage(stdout);
    return 0;
  }
  const Command* c = find_command(args[0]);
  if (!c || args.size() > 1) {
    const std::string problem = c ? "takes one command" : "unknown command '" + args[0] + "'";
    std::fprintf(stderr, "meganeura help: %s\n\n", problem.c_str());
    print_usage(stderr);
    return 2;
  }
  std::fputs(c->help, stdout);
  return 0;
}

int dispatch(const std::string& name, const std::vector<std::string>& rest) {
  if (name == "help" || cli::is_help_flag(name)) return help_command(rest);
  const Command* c = find_command(name);
  if (!c) {
    std::fprintf(stderr, "meganeura: unknown command '%s'\n\n", name.c_str());
    print_usage(stderr);
    return 2;
  }
  // --help anywhere wins over everything else on the line, as in git.
  if (std::any_of(rest.begin(), rest.end(), cli::is_help_flag)) {
    std::fputs(c->help, stdout);
    return 0;
  }
  cli::Args args(name, rest);
  return run_command(*c, args);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  try {
    return dispatch(argv[1], std::vector<std::string>(argv + 2, argv + argc));
  } catch (const std::exception& e) {  // outside any command: out of memory copying arguments
    std::fprintf(stderr, "meganeura: %s\n", e.what());
    return 1;
  }
}
