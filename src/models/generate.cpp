// generate(): a model directory in, streamed text out (what `meganeura generate` runs).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>
#include <utility>

#include "meganeura/error.hpp"
#include "meganeura/llama.hpp"
#include "meganeura/tokenizer.hpp"

namespace meganeura::models {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The two files without which nothing can start, checked before the slow work, each named with
// what it is for, so a wrong directory is recognised at once.
void check_model_files(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("generate: no such model directory: " + dir.string());
  const std::pair<const char*, const char*> needed[] = {
      {"config.json", "the model's architecture (layers, sizes, heads, vocabulary), needed to build its network"},
      {"tokenizer.json", "the tokenizer, needed to turn the prompt into tokens and tokens into text"}};
  for (const auto& [file, why] : needed)
    if (!fs::exists(dir / file, ec))
      throw Error("generate: the model directory " + dir.string() + " has no " + file + ": it holds " + why +
                  ". Is this a Hugging Face model snapshot (config.json, tokenizer.json, *.safetensors)?");
}

}  // namespace

GenerateStats generate(const std::string& model_dir, const std::string& prompt, const GenerateOptions& options,
                       const std::function<void(std::string_view)>& on_text) {
  namespace fs = std::filesystem;
  GenerateStats stats;
  const auto t0 = Clock::now();
  const fs::path dir(model_dir);
  check_model_files(dir);
  const LlamaConfig config = LlamaConfig::from_file((dir / "config.json").string());
  const Tokenizer tokenizer = Tokenizer::from_file((dir / "tokenizer.json").string());
  std::vector<int32_t> ids = tokenizer.encode(prompt);
  if (ids.empty() && tokenizer.bos_id()) ids.push_back(*tokenizer.bos_id());
  if (ids.empty()) throw Error("generate: the prompt is empty and the tokenizer has no BOS token to start from");
  for (int32_t id : ids)
    if (id >= config.vocab_size)
      throw Error("generate: token " + std::to_string(id) + " of the prompt is outside the model's vocabulary of " +
                  std::to_string(config.vocab_size) + " (tokenizer.json and config.json disagree)");
  std::vector<int64_t> eos = config.eos_token_ids;
  if (eos.empty() && tokenizer.eos_id()) eos.push_back(*tokenizer.eos_id());

  const int64_t max_seq = std::min<int64_t>(options.max_seq, static_cast<int64_t>(ids.size()) + options.max_tokens);
  Generator gen(config, {.max_seq = std::max<int64_t>(max_seq, static_cast<int64_t>(ids.size())),
                         .prefill_chunk = std::min<int64_t>(options.prefill_chunk, static_cast<int64_t>(ids.size()))});
  gen.load(Checkpoint::open(model_dir));
  stats.load_seconds = seconds_since(t0);
  stats.prompt_tokens = static_cast<int64_t>(ids.size());

  std::mt19937_64 rng(options.seed);
  DecodeStream stream = tokenizer.decode_stream(/*skip_special_tokens=*/true);
  auto t1 = Clock::now();
  std::vector<float> logits = gen.prefill(ids);
  stats.prefill_seconds = seconds_since(t1);
  t1 = Clock::now();
  while (stats.generated_tokens < options.max_tokens) {
    const int32_t next = sample_token(logits, options.sampling, rng);
    ++stats.generated_tokens;
    if (std::find(eos.begin(), eos.end(), next) != eos.end()) {
      stats.stopped_at_eos = true;
      break;
    }
    on_text(stream.step(next));
    if (stats.generated_tokens == options.max_tokens || gen.position() >= max_seq) break;
    logits = gen.decode(next);
  }
  on_text(stream.finish());
  stats.decode_seconds = seconds_since(t1);
  return stats;
}

}  // namespace meganeura::models
