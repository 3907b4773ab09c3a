// meganeura generate: a Hugging Face model (a Hub repository, fetched into the Hugging Face
// cache, or a local directory) completing a prompt, streamed to stdout, speed to stderr.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "commands.hpp"
#include "meganeura/error.hpp"
#include "meganeura/hub.hpp"
#include "meganeura/llama.hpp"

int generate_command(int argc, char** argv) {
  namespace mn = meganeura;
  std::string model, prompt, revision = "main";
  mn::models::GenerateOptions o;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw mn::Error("generate: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--model") model = value();
    else if (a == "--prompt") prompt = value();
    else if (a == "--revision") revision = value();
    else if (a == "--max-tokens") o.max_tokens = std::stoll(value());
    else if (a == "--temperature") o.sampling.temperature = std::stof(value());
    else if (a == "--top-k") o.sampling.top_k = std::stoll(value());
    else if (a == "--top-p") o.sampling.top_p = std::stof(value());
    else if (a == "--seed") o.seed = std::stoull(value());
    else if (a == "--max-seq") o.max_seq = std::stoll(value());
    else throw mn::Error("generate: unknown option '" + a + "' (see meganeura --help)");
  }
  if (model.empty()) throw mn::Error("generate: which model? --model HuggingFaceTB/SmolLM2-135M (or a local directory)");
  if (o.max_tokens < 1) throw mn::Error("generate: --max-tokens must be at least 1");
  std::string dir = model;
  if (!std::filesystem::is_directory(model)) {
    mn::hub::HubOptions h;
    h.revision = revision;
    dir = mn::hub::snapshot(model, {}, h).string();
  }
  std::fputs(prompt.c_str(), stdout);
  const mn::models::GenerateStats s = mn::models::generate(dir, prompt, o, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  const double decode_rate = s.decode_seconds > 0 ? static_cast<double>(s.generated_tokens) / s.decode_seconds : 0;
  std::fprintf(stderr, "meganeura: %lld prompt tokens in %.3f s (%.1f tokens/s), %lld generated in %.3f s (%.1f tokens/s)%s; load %.2f s\n",
               static_cast<long long>(s.prompt_tokens), s.prefill_seconds,
               s.prefill_seconds > 0 ? static_cast<double>(s.prompt_tokens) / s.prefill_seconds : 0.0,
               static_cast<long long>(s.generated_tokens), s.decode_seconds, decode_rate,
               s.stopped_at_eos ? ", stopped at end of sequence" : "", s.load_seconds);
  return 0;
}
