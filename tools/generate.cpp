// meganeura generate: a Hugging Face model (a Hub repository, fetched into the Hugging Face
// cache, or a local directory) completing a prompt, streamed to stdout, speed to stderr.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>

#include "commands.hpp"
#include "hub/cache_layout.hpp"  // check_repo_id
#include "hub/fetch_file.hpp"    // NotCached
#include "meganeura/error.hpp"
#include "meganeura/hub.hpp"
#include "meganeura/llama.hpp"

namespace mn = meganeura;
namespace fs = std::filesystem;

// Bounds that catch typos ("--max-tokens 1e9") without limiting any real model.
constexpr int64_t kMaxTokens = 1'000'000;
constexpr int64_t kMaxSeq = 1'000'000;
constexpr int64_t kMaxTopK = 10'000'000;
constexpr double kMaxTemperature = 100;

const char* const kGenerateHelp =
    "usage: meganeura generate --model <repo_id or directory> [options]\n"
    "\n"
    "complete a prompt with a Llama-family model from the Hugging Face Hub (fetched into the\n"
    "Hugging Face cache) or a local directory (config.json, tokenizer.json, safetensors); streams\n"
    "the text, then prints tokens/s\n"
    "\n"
    "options:\n"
    "  --model M          a Hub repository id (org/name) or a model directory (required)\n"
    "  --prompt TEXT      the text to complete (default: none, start from the BOS token)\n"
    "  --max-tokens N     tokens to generate, 1 to 1000000 (default 64)\n"
    "  --temperature T    sampling temperature, 0 to 100 (default 0: greedy)\n"
    "  --top-k K          sample among the K most likely tokens, 0 to 10000000 (default 0: all)\n"
    "  --top-p P          ... within the smallest set whose probability reaches P, 0 to 1 (default 1)\n"
    "  --seed S           the sampler's seed, 0 to 18446744073709551615 (default 0)\n"
    "  --max-seq N        tokens of prompt and output together, 1 to 1000000 (default 2048)\n"
    "  --revision R       a branch, tag or commit of the Hub repository (default main)\n"
    "  -h, --help         show this help\n"
    "a value may also follow '=': --prompt=--verbose\n";

namespace {

struct GenerateArgs {
  std::string model, prompt, revision = "main";
  mn::models::GenerateOptions options;
};

GenerateArgs parse_generate_args(cli::Args& args) {
  GenerateArgs g;
  mn::models::GenerateOptions& o = g.options;
  while (!args.done()) {
    const std::string a = args.next();
    if (a == "--model")
      g.model = args.text(a, "a Hub repository id or a model directory");
    else if (a == "--prompt")
      g.prompt = args.text_or_empty(a, "the text to complete");
    else if (a == "--revision")
      g.revision = args.text(a, "a branch, a tag or a commit hash");
    else if (a == "--max-tokens")
      o.max_tokens = args.integer(a, 1, kMaxTokens);
    else if (a == "--temperature")
      o.sampling.temperature = static_cast<float>(args.number(a, 0, kMaxTemperature));
    else if (a == "--top-k")
      o.sampling.top_k = args.integer(a, 0, kMaxTopK);
    else if (a == "--top-p")
      o.sampling.top_p = static_cast<float>(args.number(a, 0, 1));
    else if (a == "--seed")
      o.seed = args.unsigned_integer(a, 0, std::numeric_limits<uint64_t>::max());
    else if (a == "--max-seq")
      o.max_seq = args.integer(a, 1, kMaxSeq);
    else if (cli::Args::is_option(a))
      args.unknown_option(a);
    else
      throw args.error("unexpected argument '" + a + "' (the model follows --model, the text --prompt)");
  }
  if (g.model.empty()) throw args.error("which model? --model HuggingFaceTB/SmolLM2-135M (or a local directory)");
  return g;
}

// "./m", "/m", "~/m", "a/b/c" can only name a directory on this machine, never a Hub repository
// ("name" or "org/name"): a missing one is reported as a missing directory, not a bad repo id.
bool looks_like_local_path(const std::string& model) {
  return model[0] == '.' || model[0] == '/' || model[0] == '~' || model.find('\\') != std::string::npos ||
         std::count(model.begin(), model.end(), '/') > 1;
}

// A quoted "~/models/x" reaches us unexpanded; the user means their home directory.
std::string expand_home(const std::string& path) {
  const char* home = std::getenv("HOME");
  if (path.rfind("~/", 0) == 0 && home && *home) return std::string(home) + path.substr(1);
  return path;
}

// A Hub failure for a --model that could also have been a local directory ("models/x", "name"):
// the same error, saying that there is no such directory either, so that a mistyped path does
// not read as a Hub problem alone.
bool is_repo_id(const std::string& model) {
  try {
    mn::hub::check_repo_id(model);
    return true;
  } catch (const mn::HubError&) {
    return false;
  }
}

template <class HubErrorType>
[[noreturn]] void throw_with_local_note(const HubErrorType& e, const std::string& model) {
  std::string what = e.what();
  if (what.rfind("meganeura: ", 0) == 0) what.erase(0, 11);  // the constructor adds it again
  std::error_code ec;
  const fs::path here = fs::absolute(model, ec);
  const std::string shown = ec ? model : here.lexically_normal().string();
  if (fs::exists(model, ec)) throw HubErrorType(what + "; and " + shown + " is a file, not a model directory");
  throw HubErrorType(what + "; and there is no local directory " + model + " either (no " + shown + ")");
}

// The model's directory: local as given, else the Hub repository's snapshot in the cache.
std::string model_directory(const GenerateArgs& g, const cli::Args& args) {
  std::error_code ec;  // names too long or unreadable are "not a directory", not an exception
  if (fs::is_directory(g.model, ec)) return g.model;
  if (looks_like_local_path(g.model)) {
    const std::string path = expand_home(g.model);
    if (fs::is_directory(path, ec)) return path;
    if (fs::exists(path, ec)) throw args.error("--model: " + path + " is a file, not a model directory");
    throw args.error("--model: no such directory: " + path);
  }
  mn::hub::HubOptions h;
  h.revision = g.revision;
  // Where the Hub does not know the repository (or cannot be asked), the user may have meant a
  // directory: the error says there is none. A failure of a repository the Hub has (a missing
  // file, a corrupt download) is the Hub's alone.
  try {
    return mn::hub::snapshot(g.model, {}, h).string();
  } catch (const mn::HubFileNotFoundError&) {
    throw;
  } catch (const mn::HubNotFoundError& e) {
    throw_with_local_note(e, g.model);
  } catch (const mn::HubAuthError& e) {  // also the Hub's answer for a repository that does not exist
    throw_with_local_note(e, g.model);
  } catch (const mn::hub::NotCached& e) {  // offline, or the Hub unreachable, and nothing cached
    throw_with_local_note(static_cast<const mn::HubError&>(e), g.model);
  } catch (const mn::HubError& e) {
    if (is_repo_id(g.model)) throw;
    throw_with_local_note(e, g.model);  // "models/my model": not a repository id
  }
}

void print_speed(const mn::models::GenerateStats& s) {
  auto rate = [](int64_t tokens, double seconds) { return seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0; };
  std::fprintf(stderr,
               "meganeura: %lld prompt tokens in %.3f s (%.1f tokens/s), %lld generated in %.3f s (%.1f tokens/s)%s; "
               "load %.2f s\n",
               static_cast<long long>(s.prompt_tokens), s.prefill_seconds, rate(s.prompt_tokens, s.prefill_seconds),
               static_cast<long long>(s.generated_tokens), s.decode_seconds, rate(s.generated_tokens, s.decode_seconds),
               s.stopped_at_eos ? ", stopped at end of sequence" : "", s.load_seconds);
}

}  // namespace

int generate_command(cli::Args& args) {
  const GenerateArgs g = parse_generate_args(args);
  const std::string dir = model_directory(g, args);
  std::fputs(g.prompt.c_str(), stdout);
  const mn::models::GenerateStats s = mn::models::generate(dir, g.prompt, g.options, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  print_speed(s);
  return 0;
}
