// Llama models against transformers (tests/data/llama, written by
// tools/fixtures/make_llama_fixtures.py on the GPU machine): the same config and weights (filled
// from a formula both sides compute exactly), the same tokens; logits within 1e-4 (f32 path),
// loss within 1e-5 relative, every parameter's gradient within 1e-3 relative, and greedy
// generation token for token.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "llama_util.hpp"
#include "meganeura/meganeura.hpp"
#include "test_util.hpp"

namespace {

using namespace meganeura;
using nlohmann::json;

json fixture(const std::string& name) {
  const std::string path = std::string(MEGANEURA_TEST_DATA) + "/llama/" + name + ".json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing fixture " + path);
  return json::parse(in);
}

// The fixture script's recipe_values: offset + scale * (2u - 1), u a 24-bit splitmix64 fraction.
std::vector<float> recipe_values(uint64_t p, int64_t n, double scale, double offset) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t x = (p << 32) | static_cast<uint64_t>(i);
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    x ^= x >> 31;
    const double u = static_cast<double>(x >> 40) / static_cast<double>(1 << 24);
    out[static_cast<size_t>(i)] = static_cast<float>(offset + scale * (2.0 * u - 1.0));
  }
  return out;
}

void set_weights(Session& s, const json& f) {
  for (const json& r : f["recipe"]) {
    Shape shape = r["shape"].get<Shape>();
    s.set_parameter(r["name"].get<std::string>(),
                    HostTensor::f32s(shape, recipe_values(r["index"].get<uint64_t>(), numel(shape),
                                                          r["scale"].get<double>(), r["offset"].get<double>())));
  }
}

HostTensor ids_tensor(const json& rows) {
  std::vector<int32_t> v;
  for (const json& row : rows)
    for (const json& x : row) v.push_back(x.get<int32_t>());
  return HostTensor::i32s({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}, v);
}

std::vector<int32_t> arange(int64_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  return v;
}

struct Model {
  models::LlamaConfig config;
  models::LlamaGraph graph;
  Session session;
};

// A training session (SGD, lr 0: the weights stay) over the fixture's batch.
Model training_model(const json& f, uint64_t max_buffer_bytes = 0) {
  models::LlamaConfig c = models::LlamaConfig::parse(f["config"].dump(), "fixture config");
  const int64_t batch = static_cast<int64_t>(f["input_ids"].size()),
                seq = static_cast<int64_t>(f["input_ids"][0].size());
  models::LlamaGraph lg = models::llama_graph(c, batch, seq, /*training=*/true);
  TrainConfig cfg;
  cfg.optimizer = SGD{.lr = 0.0f};
  cfg.max_buffer_bytes = max_buffer_bytes;
  Session s = build_session(*lg.graph, lg.loss, cfg);
  set_weights(s, f);
  s.set_input("input_ids", ids_tensor(f["input_ids"]));
  s.set_input("positions", HostTensor::i32s({seq}, arange(seq)));
  s.set_input("labels", ids_tensor(f["labels"]));
  s.step();
  return {c, std::move(lg), std::move(s)};
}

void expect_loss(const Model& m, const json& f) {
  const double ref = f["loss"].get<double>();
  EXPECT_NEAR(m.session.read_loss(), ref, 1e-5 * std::abs(ref));
}

TEST(LlamaVsTransformers, TinyLogitsLossAndEveryGradient) {
  const json f = fixture("tiny");
  Model m = training_model(f);
  expect_loss(m, f);
  std::vector<float> logits = m.session.read_output("logits").to_f32();
  const std::vector<double> ref = f["logits"].get<std::vector<double>>();
  ASSERT_EQ(logits.size(), ref.size());
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(logits[i] - ref[i]));
  EXPECT_LE(worst, 1e-4) << "max abs logit error";
  ASSERT_EQ(f["grads"].size(), m.session.parameter_names().size());
  for (const auto& [name, g] : f["grads"].items()) {
    const std::vector<double> want = g["all"].get<std::vector<double>>();
    const std::vector<float> got = m.session.read_grad(name).to_f32();
    ASSERT_EQ(got.size(), want.size()) << name;
    double err = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err += (got[i] - want[i]) * (got[i] - want[i]);
      norm += want[i] * want[i];
    }
    EXPECT_LE(std::sqrt(err), 1e-3 * std::sqrt(norm)) << "gradient of " << name << " (relative L2 error)";
  }
}

// Weights spread over many buffers (as a model past the device's largest allocation is): the same
// logits.
TEST(LlamaVsTransformers, TinyLogitsWithParametersInManyBuffers) {
  const json f = fixture("tiny");
  models::LlamaConfig c = models::LlamaConfig::parse(f["config"].dump(), "fixture config");
  const int64_t batch = static_cast<int64_t>(f["input_ids"].size()),
                seq = static_cast<int64_t>(f["input_ids"][0].size());
  models::LlamaGraph lg = models::llama_graph(c, batch, seq);
  Session s = build_inference_session(*lg.graph, {.max_buffer_bytes = 16384});
  EXPECT_GE(s.memory().parameter_buffers, 3u) << "the 70 KB of weights span several 16 KiB buffers";
  set_weights(s, f);
  s.set_input("input_ids", ids_tensor(f["input_ids"]));
  s.set_input("positions", HostTensor::i32s({seq}, arange(seq)));
  s.step();
  const std::vector<float> logits = s.read_output("logits").to_f32();
  const std::vector<double> ref = f["logits"].get<std::vector<double>>();
  ASSERT_EQ(logits.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(logits[i], ref[i], 1e-4) << i;
  // One tensor larger than the limit cannot be split: the error names it.
  const std::string msg =
      mntest::message_of<OutOfMemoryError>([&] { build_inference_session(*lg.graph, {.max_buffer_bytes = 4096}); });
  EXPECT_NE(msg.find("bytes, more than the device's largest buffer"), std::string::npos) << msg;
}

// A training step whose activations and gradients outgrow one buffer (SmolLM2-1.7B's are 6.4 GiB
// against many devices' 4 GiB allocations): the arena spans several, the results are the same
// bit for bit.
TEST(LlamaVsTransformers, TinyTrainingWithTheArenaInManyBuffers) {
  const json f = fixture("tiny");
  Model one = training_model(f);
  Model split = training_model(f, 16384);
  EXPECT_EQ(one.session.memory().arena_buffers, 1u);
  EXPECT_GE(split.session.memory().arena_buffers, 3u) << "arena " << split.session.memory().arena << " bytes";
  EXPECT_EQ(split.session.read_loss(), one.session.read_loss());
  for (const std::string& name : one.session.parameter_names())
    EXPECT_TRUE(split.session.read_grad(name).bytes == one.session.read_grad(name).bytes) << "gradient of " << name;
  EXPECT_TRUE(split.session.read_output("logits").bytes == one.session.read_output("logits").bytes);
}

TEST(LlamaVsTransformers, SmolLM2ShapedLogitsLossAndGradients) {
  const json f = fixture("smollm2_2layers");
  Model m = training_model(f);
  expect_loss(m, f);
  const std::vector<float> logits = m.session.read_output("logits").to_f32();
  const int64_t vocab = m.config.vocab_size;
  const std::vector<double> lse = f["logits_lse"].get<std::vector<double>>();
  const std::vector<int64_t> argmax = f["logits_argmax"].get<std::vector<int64_t>>();
  for (size_t r = 0; r < lse.size(); ++r) {  // every position: log-sum-exp and argmax over the vocabulary
    const float* row = logits.data() + r * static_cast<size_t>(vocab);
    double m_ = row[0], s = 0;
    int64_t best = 0;
    for (int64_t j = 0; j < vocab; ++j)
      if (row[j] > m_) m_ = row[best = j];
    for (int64_t j = 0; j < vocab; ++j) s += std::exp(row[j] - m_);
    EXPECT_NEAR(m_ + std::log(s), lse[r], 1e-4) << "position " << r;
    EXPECT_EQ(best, argmax[r]) << "position " << r;
  }
  const json& sample = f["logits_sample"];
  double worst = 0;
  for (size_t k = 0; k < sample["index"].size(); ++k)
    worst = std::max(worst, std::abs(logits[sample["index"][k].get<size_t>()] - sample["value"][k].get<double>()));
  EXPECT_LE(worst, 1e-4) << "max abs logit error over " << sample["index"].size() << " sampled logits";
  ASSERT_EQ(f["grads"].size(), m.session.parameter_names().size());
  for (const auto& [name, g] : f["grads"].items()) {
    const std::vector<float> got = m.session.read_grad(name).to_f32();
    double norm = 0;
    for (float v : got) norm += static_cast<double>(v) * v;
    const double ref_norm = g["norm"].get<double>();
    EXPECT_NEAR(std::sqrt(norm), ref_norm, 1e-3 * ref_norm) << "gradient norm of " << name;
    const double rms = ref_norm / std::sqrt(static_cast<double>(got.size()));
    for (size_t k = 0; k < g["index"].size(); ++k) {
      const double want = g["value"][k].get<double>(), have = got[g["index"][k].get<size_t>()];
      ASSERT_NEAR(have, want, 1e-3 * std::max(std::abs(want), rms))
          << "gradient of " << name << " element " << g["index"][k];
    }
  }
}

TEST(LlamaVsTransformers, TinyGreedyTokensWithoutCache) {
  const json f = fixture("tiny");
  const std::vector<int32_t> prompt = f["generate"]["prompt"].get<std::vector<int32_t>>();
  const std::vector<int32_t> ids = mntest::greedy_uncached(
      models::LlamaConfig::parse(f["config"].dump(), "fixture config"), prompt,
      static_cast<int64_t>(prompt.size()) + 32, [&](Session& s, const Graph&) { set_weights(s, f); });
  EXPECT_EQ(ids, f["generate"]["no_cache"].get<std::vector<int32_t>>());
}

// Greedy decoding with the KV cache (transformers' generate(use_cache=True)): prefill in chunks
// of `chunk` prompt tokens, then one decode step per token, all in one session.
std::vector<int32_t> greedy_with_cache(const json& f, int64_t chunk) {
  models::LlamaConfig c = models::LlamaConfig::parse(f["config"].dump(), "fixture config");
  models::Generator gen(c, {.max_seq = 48, .prefill_chunk = chunk});
  set_weights(gen.session(), f);
  std::vector<int32_t> ids = f["generate"]["prompt"].get<std::vector<int32_t>>();
  std::mt19937_64 rng(0);
  std::vector<float> logits = gen.prefill(ids);
  while (ids.size() < f["generate"]["cache"].size()) {
    ids.push_back(models::sample_token(logits, {}, rng));
    if (ids.size() < f["generate"]["cache"].size()) logits = gen.decode(ids.back());
  }
  EXPECT_EQ(gen.position(), static_cast<int64_t>(ids.size()) - 1);
  return ids;
}

TEST(LlamaVsTransformers, TinyGreedyTokensWithCache) {
  const json f = fixture("tiny");
  const std::vector<int32_t> want = f["generate"]["cache"].get<std::vector<int32_t>>();
  EXPECT_EQ(greedy_with_cache(f, 64), want) << "prompt in one prefill chunk";
  EXPECT_EQ(greedy_with_cache(f, 4), want) << "prompt in chunks of 4 (the last padded)";
}

TEST(LlamaVsTransformers, SmolLM2ShapedGreedyTokensWithCache) {
  const json f = fixture("smollm2_2layers");
  EXPECT_EQ(greedy_with_cache(f, 8), f["generate"]["cache"].get<std::vector<int32_t>>());
}

// Every product split 4 ways along K, as a GPU splits a prefill's narrow products: the second
// layer's q/k/v group rotates q and k in its split-K summing pass, and the KV cache appends that
// joined the group follow it as their own calls (cache_appends_in_rotary).
TEST(LlamaVsTransformers, SmolLM2ShapedGreedyTokensWithCacheOnSplitProducts) {
  mntest::ScopedEnv split("MEGANEURA_SPLIT_K", "4");
  const json f = fixture("smollm2_2layers");
  EXPECT_EQ(greedy_with_cache(f, 16), f["generate"]["cache"].get<std::vector<int32_t>>());
}

TEST(Sampling, GreedyTopKTopP) {
  std::mt19937_64 rng(7);
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 3.0f, -2.0f};
  EXPECT_EQ(models::sample_token(logits, {}, rng), 1) << "greedy: the first maximum";
  // Probabilities at temperature 1: 20.1/44.0 for tokens 1 and 3 each, 2.7/44.0, 1/44.0, 0.1/44.0.
  std::map<int32_t, int> top_k, top_p, all;
  for (int i = 0; i < 2000; ++i) {
    ++top_k[models::sample_token(logits, {.temperature = 1.0f, .top_k = 2}, rng)];
    ++top_p[models::sample_token(logits, {.temperature = 1.0f, .top_p = 0.4f}, rng)];  // 0.46 > 0.4: token 1 alone
    ++all[models::sample_token(logits, {.temperature = 1.0f}, rng)];
  }
  EXPECT_EQ(top_k.size(), 2u);
  EXPECT_GT(top_k[1], 850);
  EXPECT_GT(top_k[3], 850);
  EXPECT_EQ(top_p.size(), 1u);
  EXPECT_EQ(top_p[1], 2000);
  EXPECT_NEAR(all[2], 2000 * 2.718 / 44.03, 45);  // ~123 of 2000
  EXPECT_NEAR(all[1] + all[3], 2000 * 40.17 / 44.03, 60);
}

TEST(LlamaConfig, ErrorsNameTheField) {
  auto error_of = [](const std::string& text) {
    try {
      models::LlamaConfig::parse(text, "config.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("{\"model_type\": \"llama\"}").find("\"vocab_size\" is missing"), std::string::npos);
  EXPECT_NE(error_of("{\"model_type\": \"gpt2\"}").find("model_type"), std::string::npos);
  const std::string base = R"("vocab_size": 10, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
                               "num_attention_heads": 2)";
  EXPECT_NE(error_of("{" + base + ", \"num_key_value_heads\": 3}").find("does not divide"), std::string::npos);
  EXPECT_NE(error_of("{" + base + ", \"rope_scaling\": {\"rope_type\": \"llama3\"}}").find("llama3"),
            std::string::npos);
  EXPECT_NE(error_of("{" + base + ", \"hidden_act\": \"gelu\"}").find("hidden_act"), std::string::npos);
  EXPECT_NE(error_of("{oops").find("not valid JSON"), std::string::npos);
  const models::LlamaConfig c = models::LlamaConfig::parse(
      "{" + base + ", \"rope_parameters\": {\"rope_theta\": 5e5, \"rope_type\": \"default\"}}");
  EXPECT_EQ(c.rope_theta, 5e5);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 4);
}

// Configs found by fuzzing (issue 16; tests/data/reliability): each was a crash, a terabyte
// allocation, a signed overflow or an nlohmann exception; each is now an Error naming the file
// and the field, raised by parse, before anything is sized from it.
TEST(LlamaConfig, FuzzedConfigsAreErrorsNamingTheFileAndField) {
  const std::string dir = std::string(MEGANEURA_TEST_DATA) + "/reliability/";
  const std::pair<const char*, const char*> cases[] = {
      {"F3-config-rotary-huge-alloc.json", "\"max_position_embeddings\" is 4294967295"},
      {"F4-config-attention-int-overflow.json", "\"num_attention_heads\" is 9223372036854775807"},
      {"F5-config-rotary-int-overflow.json", "\"max_position_embeddings\" is 4611686018427387904"},
      {"F10b-config-number-overflow.json", "\"vocab_size\" is not valid JSON"},
      {"F10c-config-rope-type-not-string.json", "\"rope_scaling.rope_type\" is not a string: 1"},
  };
  for (const auto& [file, field] : cases) {
    SCOPED_TRACE(file);
    try {
      models::LlamaConfig::from_file(dir + file);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(dir + file + ": " + field), std::string::npos) << e.what();
    }
  }
}

TEST(LlamaConfig, SizesAreBoundedAndEveryJsonProblemIsAnError) {
  auto error_of = [](const std::string& text) {
    try {
      models::LlamaConfig::parse(text, "config.json");
    } catch (const Error& e) {
      return std::string(e.what());
    } catch (const std::exception& e) {
      return std::string("not a meganeura::Error: ") + e.what();
    }
    return std::string("no error");
  };
  const json base = json::parse(R"({"vocab_size": 10, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
                                    "num_attention_heads": 2})");
  auto with = [&](const char* field, json v) {
    json j = base;
    j[field] = std::move(v);
    return j.dump();
  };
  // Every integer the model is sized by: too large (2^40), beyond int64 (read as unsigned), negative.
  for (const char* field :
       {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "head_dim", "max_position_embeddings", "sliding_window", "bos_token_id"}) {
    SCOPED_TRACE(field);
    const std::string named = std::string("config.json: \"") + field + "\"";
    EXPECT_NE(error_of(with(field, int64_t{1} << 40)).find(named + " is 1099511627776, not in ["), std::string::npos)
        << error_of(with(field, int64_t{1} << 40));
    EXPECT_NE(error_of(with(field, uint64_t{18446744073709551615u})).find(named + " is 18446744073709551615, not in ["),
              std::string::npos);
    EXPECT_NE(error_of(with(field, -7)).find(named), std::string::npos);
    EXPECT_NE(error_of(with(field, json::array({1}))).find(named + " is not an integer: an array"), std::string::npos);
  }
  // Products: the rotary tables (max_position_embeddings x head_dim) are bounded too.
  json big = base;
  big["max_position_embeddings"] = int64_t{1} << 24;
  big["head_dim"] = 128;
  EXPECT_NE(error_of(big.dump()).find("\"max_position_embeddings\" is 16777216: its rotary tables"), std::string::npos);
  EXPECT_NE(error_of(with("head_dim", 3)).find("\"head_dim\" is 3; rotary embeddings need it even"), std::string::npos);
  // Non-integers where integers belong, non-strings where strings belong.
  EXPECT_NE(error_of(with("eos_token_id", json::array({1, "x"}))).find("\"eos_token_id[1]\" is not an integer: \"x\""),
            std::string::npos);
  EXPECT_NE(error_of(with("eos_token_id", 2.5)).find("\"eos_token_id\" is not an integer: 2.5"), std::string::npos);
  EXPECT_NE(error_of(with("rope_parameters", json::parse(R"({"type": ["default"]})")))
                .find("\"rope_parameters.type\" is not a string: an array"),
            std::string::npos);
  EXPECT_NE(error_of(with("hidden_act", std::string(1000, 'x'))).find("... (1000 bytes); only silu"),
            std::string::npos);
  EXPECT_NE(error_of(with("rms_norm_eps", json::object())).find("\"rms_norm_eps\" is not a number: an object"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"vocab_size": 10, "rope_theta": -1e999})").find("config.json: \"rope_theta\" is not valid JSON"),
      std::string::npos);
  // A config that still parses: the bounds are far above real models'.
  json real = base;
  real["vocab_size"] = 128256;
  real["max_position_embeddings"] = 131072;
  real["eos_token_id"] = json::array({128001, 128008, 128009});
  real["sliding_window"] = nullptr;
  const models::LlamaConfig c = models::LlamaConfig::parse(real.dump());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
  EXPECT_EQ(c.sliding_window, 0);
}

// F7: a value nested 200,000 levels deep. Its error message dump()ed the value, recursing once a
// level until the stack overflowed; nesting is now refused while parsing, by depth, naming the field.
TEST(LlamaConfig, DeepNestingIsRefusedWithoutRecursion) {
  for (const char* field : {"vocab_size", "quantization_config"}) {
    const std::string text =
        std::string("{\"") + field + "\":" + std::string(200000, '[') + std::string(200000, ']') + "}";
    try {
      models::LlamaConfig::parse(text, "config.json");
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("config.json: \"") + field +
                                           "\" nests arrays and objects deeper than 64 levels"),
                std::string::npos)
          << e.what();
    }
  }
}

// The layers the config sizes, built directly: products that overflow or tables beyond the limit
// are errors before anything is allocated.
TEST(LlamaConfig, LayerSizesAreOverflowChecked) {
  {
    Graph g;
    EXPECT_THROW((void)nn::Rotary(g, {.head_dim = 2, .theta = 10000.0, .max_positions = int64_t{1} << 62}), SizeError);
    EXPECT_THROW((void)nn::Rotary(g, {.head_dim = 2, .theta = 10000.0, .max_positions = 4294967295}), SizeError);
    EXPECT_THROW(
        (void)nn::MultiHeadAttention(g, "attn", {.hidden = 2, .heads = INT64_MAX, .kv_heads = 1, .head_dim = 64}),
        SizeError);
    EXPECT_THROW((void)nn::Linear(g, "fc", int64_t{1} << 40, int64_t{1} << 40), ShapeError);
    EXPECT_THROW(g.parameter("p", {INT64_MAX, 2, 1}), ShapeError);
    EXPECT_NO_THROW(g.parameter("empty", {INT64_MAX, INT64_MAX, 0}));
  }
  models::LlamaConfig c;  // bypassing parse's bounds
  c.vocab_size = 1;
  c.hidden_size = 2;
  c.intermediate_size = 1;
  c.num_hidden_layers = 1;
  c.num_attention_heads = c.num_key_value_heads = 1;
  c.head_dim = 2;
  c.max_position_embeddings = 4294967295;
  EXPECT_THROW(models::llama_graph(c, 1, 4, false), SizeError);
}

}  // namespace
