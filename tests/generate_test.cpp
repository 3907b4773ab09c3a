// generate() end to end from a model directory, as a Hugging Face snapshot holds it: config.json,
// the tokenizer.json of a real (trained) tokenizer, and bf16 weights in a sharded checkpoint.
// Its greedy tokens must equal those of the same model run without a cache; the streamed text
// must be the tokenizer's decoding of them. And load_weights' errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fake_hub.hpp"
#include "llama_util.hpp"
#include "meganeura/hub.hpp"
#include "meganeura/meganeura.hpp"
#include "test_util.hpp"

namespace {

using namespace meganeura;
namespace fs = std::filesystem;

const char* kConfig = R"({"model_type": "llama", "vocab_size": 2003, "hidden_size": 32, "intermediate_size": 48,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
  "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true, "hidden_act": "silu", "eos_token_id": 0})";

// A model directory with random bf16 weights in two shards and an index.
fs::path make_model_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("meganeura_generate_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << kConfig;
  fs::copy_file(fs::path(MEGANEURA_TEST_DATA) / "tokenizer" / "smollm2_like.tokenizer.json", dir / "tokenizer.json");
  const models::LlamaConfig c = models::LlamaConfig::parse(kConfig);
  models::LlamaGraph lg = models::llama_graph(c, 1, 4);
  mntest::Rng rng(42);
  TensorFile shards[2];
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  int k = 0;
  for (const Node& n : lg.graph->nodes()) {
    if (n.op != Op::Parameter) continue;
    std::vector<float> v = rng.floats(numel(n.shape), -0.3, 0.3);
    if (n.name.find("norm") != std::string::npos)
      for (float& x : v) x += 1.0f;
    HostTensor t = mntest::host_bf16(n.shape, v);
    const int shard = k++ % 2;
    shards[shard].tensors[n.name] = t;
    index["weight_map"][n.name] = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
  }
  for (int s = 0; s < 2; ++s)
    write_safetensors((dir / ("model-0000" + std::to_string(s + 1) + "-of-00002.safetensors")).string(), shards[s]);
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();
  return dir;
}

TEST(Generate, FromASnapshotDirectoryMatchesTheUncachedModel) {
  const fs::path dir = make_model_dir("greedy");
  const std::string prompt = "Once upon a time, 12 cats";
  std::string streamed;
  models::GenerateOptions o;
  o.max_tokens = 12;
  o.prefill_chunk = 4;  // the prompt spans chunks
  const models::GenerateStats s = models::generate(dir.string(), prompt, o, [&](std::string_view t) { streamed += t; });
  EXPECT_GT(s.prompt_tokens, 4);
  EXPECT_GT(s.generated_tokens, 0);

  // The same tokens from a plain forward pass over the growing sequence.
  const Tokenizer tok = Tokenizer::from_file((dir / "tokenizer.json").string());
  std::vector<int32_t> ids = tok.encode(prompt);
  const models::LlamaConfig c = models::LlamaConfig::from_file((dir / "config.json").string());
  const int64_t total = static_cast<int64_t>(ids.size()) + s.generated_tokens;
  const size_t prompt_len = ids.size();
  const Checkpoint checkpoint = Checkpoint::open(dir.string());
  const std::vector<int32_t> seq = mntest::greedy_uncached(
      c, ids, total, [&](Session& plain, const Graph& g) { models::load_weights(plain, g, checkpoint); });
  std::vector<int32_t> generated(seq.begin() + static_cast<std::ptrdiff_t>(prompt_len), seq.end());
  if (s.stopped_at_eos) generated.pop_back();  // the end-of-sequence token is not printed
  EXPECT_EQ(streamed, tok.decode(generated, /*skip_special_tokens=*/true));
  fs::remove_all(dir);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What `meganeura generate --model org/name` does: snapshot the repository from the Hub (here a
// local server shaped like it; safetensors as LFS files) into a fresh cache, then generate.
TEST(Generate, FromTheHubLikeTheSameFilesOnDisk) {
  const fs::path dir = make_model_dir("hub");
  mntest::FakeHub server;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    server.put("test-org/tiny-llama", name, read_file(entry.path()), name.ends_with(".safetensors"));
  }
  const fs::path cache = dir.string() + "-cache";
  hub::HubOptions h;
  h.endpoint = server.endpoint();
  h.cache_dir = cache;
  h.progress = false;
  const fs::path snapshot = hub::snapshot("test-org/tiny-llama", {}, h);
  EXPECT_TRUE(fs::exists(snapshot / "model-00002-of-00002.safetensors"));
  models::GenerateOptions o;
  o.max_tokens = 8;
  std::string from_hub, from_disk;
  models::generate(snapshot.string(), "The quick brown fox", o, [&](std::string_view t) { from_hub += t; });
  models::generate(dir.string(), "The quick brown fox", o, [&](std::string_view t) { from_disk += t; });
  EXPECT_FALSE(from_disk.empty());
  EXPECT_EQ(from_hub, from_disk);
  EXPECT_EQ(server.count("GET", ".safetensors"), 0) << "LFS bytes come from the CDN path";
  fs::remove_all(dir);
  fs::remove_all(cache);
}

TEST(Generate, LoadWeightsErrorsNameTheTensor) {
  const fs::path dir = make_model_dir("errors");
  models::LlamaConfig c = models::LlamaConfig::parse(kConfig);
  c.intermediate_size = 64;  // the checkpoint's MLP is 48 wide
  models::LlamaGraph lg = models::llama_graph(c, 1, 2);
  Session s = build_inference_session(*lg.graph);
  const Checkpoint ckpt = Checkpoint::open(dir.string());
  std::string msg = mntest::message_of<ShapeError>([&] { models::load_weights(s, *lg.graph, ckpt); });
  EXPECT_NE(msg.find("mlp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[48,32]"), std::string::npos) << msg;
  c.intermediate_size = 48;
  c.tie_word_embeddings = false;  // wants lm_head.weight, which the checkpoint lacks
  models::LlamaGraph untied = models::llama_graph(c, 1, 2);
  Session s2 = build_inference_session(*untied.graph);
  msg = mntest::message_of<NameError>([&] { models::load_weights(s2, *untied.graph, ckpt); });
  EXPECT_NE(msg.find("\"lm_head.weight\""), std::string::npos) << msg;
  fs::remove(dir / "model-00002-of-00002.safetensors");
  msg = mntest::message_of<Error>([&] { Checkpoint::open(dir.string()); });
  EXPECT_NE(msg.find("model-00002-of-00002.safetensors"), std::string::npos) << msg;
  fs::remove_all(dir);
}

}  // namespace
