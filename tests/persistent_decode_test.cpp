// The persistent decoding dispatch (runtime/persistent_decode.hpp) against the Generator's decode
// program, which the transformers tests check: the same random weights, the same tokens, logits
// step by step — over grouped-query attention, biases, a sliding window, tied and untied heads,
// and contexts long enough that a head's keys split into many blocks. Then its fallback: a grid
// barrier whose wait runs out hands the step (and the rest) to the program.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "meganeura/meganeura.hpp"
#include "test_util.hpp"

namespace {

using namespace meganeura;

models::LlamaConfig config(int64_t heads, int64_t kv_heads, int64_t head_dim, bool biases, bool tied, int64_t window) {
  models::LlamaConfig c;
  c.vocab_size = 97;
  c.hidden_size = 24;
  c.intermediate_size = 44;
  c.num_hidden_layers = 2;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = head_dim;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500.0;
  c.tie_word_embeddings = tied;
  c.attention_bias = c.mlp_bias = biases;
  c.sliding_window = window;
  return c;
}

// Every parameter drawn from `seed`: weights small, norms near 1.
void fill(Session& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const std::string& name : s.parameter_names()) {
    const Shape shape = s.parameter_info(name).shape;
    const bool norm = name.find("norm") != std::string::npos;
    std::uniform_real_distribution<float> u(norm ? 0.5f : -0.3f, norm ? 1.5f : 0.3f);
    std::vector<float> v(static_cast<size_t>(numel(shape)));
    for (float& x : v) x = u(rng);
    s.set_parameter(name, HostTensor::f32s(shape, v));
  }
}

double worst_relative(const std::vector<float>& got, const std::vector<float>& want) {
  double top = 0, worst = 0;
  for (float w : want) top = std::max(top, std::abs(static_cast<double>(w)));
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  return worst / std::max(top, 1e-30);
}

struct Pair {
  models::Generator fast, program;
};

std::unique_ptr<Pair> pair_of(const models::LlamaConfig& c, int64_t max_seq, uint64_t seed) {
  auto p = std::unique_ptr<Pair>(
      new Pair{models::Generator(c, {.max_seq = max_seq, .prefill_chunk = 32}),
               models::Generator(c, {.max_seq = max_seq, .prefill_chunk = 32, .persistent = false})});
  fill(p->fast.session(), seed);
  fill(p->program.session(), seed);
  return p;
}

std::vector<int32_t> tokens(size_t n, uint64_t seed, int64_t vocab) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return t;
}

// On lavapipe the persistent dispatch is off unless forced (one workgroup is slower than the
// program there): every test here forces it.
struct PersistentDecoding : ::testing::Test {
  mntest::ScopedEnv on{"MEGANEURA_PERSISTENT", "1"};
};

TEST_F(PersistentDecoding, MatchesTheDecodeProgram) {
  struct Case {
    const char* what;
    models::LlamaConfig c;
    size_t prompt, steps;
  };
  const Case cases[] = {
      {"grouped-query, untied", config(4, 2, 8, false, false, 0), 5, 6},
      {"biases, tied, one kv head", config(3, 1, 12, true, true, 0), 3, 4},
      {"a sliding window shorter than the context", config(2, 2, 12, false, true, 7), 9, 5},
      {"many key blocks (a long context)", config(4, 4, 8, true, false, 0), 150, 3},
  };
  uint64_t seed = 1;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    auto p = pair_of(k.c, 200, seed++);
    ASSERT_TRUE(p->fast.persistent()) << "the device should take the persistent dispatch";
    EXPECT_FALSE(p->program.persistent());
    const std::vector<int32_t> t = tokens(k.prompt + k.steps, seed++, k.c.vocab_size);
    const std::vector<int32_t> prompt(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k.prompt));
    EXPECT_LE(worst_relative(p->fast.prefill(prompt), p->program.prefill(prompt)), 1e-6);
    for (size_t i = k.prompt; i < t.size(); ++i) {
      const std::vector<float> want = p->program.decode(t[i]);
      EXPECT_LE(worst_relative(p->fast.decode(t[i]), want), 2e-5) << "decoding token " << i;
    }
    EXPECT_TRUE(p->fast.persistent()) << "no wait ran out";
  }
}

TEST_F(PersistentDecoding, AWaitThatRunsOutHandsTheStepToTheProgram) {
  const models::LlamaConfig c = config(4, 2, 8, false, false, 0);
  auto p = pair_of(c, 64, 11);
  ASSERT_TRUE(p->fast.persistent());
  if (default_device_info().type == "CPU") {
    EXPECT_EQ(p->fast.persistent_grid(), 1u) << "one workgroup on a CPU";
  }
  const std::vector<int32_t> t = tokens(8, 12, c.vocab_size);
  const std::vector<int32_t> prompt(t.begin(), t.begin() + 4);
  p->fast.prefill(prompt);
  p->program.prefill(prompt);
  EXPECT_LE(worst_relative(p->fast.decode(t[4]), p->program.decode(t[4])), 2e-5);
  p->fast.arm_persistent_timeout_for_test();
  EXPECT_LE(worst_relative(p->fast.decode(t[5]), p->program.decode(t[5])), 2e-5) << "the step redone";
  EXPECT_FALSE(p->fast.persistent()) << "the program decodes from then on";
  EXPECT_LE(worst_relative(p->fast.decode(t[6]), p->program.decode(t[6])), 2e-5);
}

TEST_F(PersistentDecoding, ATokenOutsideTheVocabularyIsAnError) {
  const models::LlamaConfig c = config(4, 2, 8, false, false, 0);
  auto p = pair_of(c, 64, 21);
  p->fast.prefill({1, 2, 3});
  try {
    p->fast.decode(97);
    ADD_FAILURE() << "no error";
  } catch (const RuntimeDataError& e) {
    mntest::expect_has(e.what(), "token 97 is outside the vocabulary [0, 97)");
  }
}

// Generator::decode_profile: the dispatch that decoded, persistent or the program's.
TEST_F(PersistentDecoding, DecodeProfileIsWhatDecoded) {
  for (bool persistent : {true, false}) {
    SCOPED_TRACE(persistent ? "persistent" : "program");
    models::Generator g(config(4, 2, 8, false, false, 0),
                        {.max_seq = 16, .session = {.profile = true}, .persistent = persistent});
    fill(g.session(), 5);
    g.prefill({1, 2, 3});
    g.decode(4);
    const auto profile = g.decode_profile();
    if (persistent) {
      ASSERT_EQ(profile.size(), 1u);
      EXPECT_EQ(profile[0].first.rfind("decode_step (persistent, ", 0), 0u) << profile[0].first;
    } else {
      EXPECT_GT(profile.size(), 5u);
    }
    for (const auto& [label, ns] : profile) EXPECT_GT(ns, 0.0) << label;
  }
}

TEST_F(PersistentDecoding, MEGANEURA_PERSISTENTTurnsItOffAndOn) {
  const models::LlamaConfig c = config(4, 2, 8, false, false, 0);
  {
    mntest::ScopedEnv off("MEGANEURA_PERSISTENT", "0");
    EXPECT_FALSE(models::Generator(c, {.max_seq = 16}).persistent());
  }
  {
    mntest::ScopedEnv on("MEGANEURA_PERSISTENT", "1");
    EXPECT_TRUE(models::Generator(c, {.max_seq = 16}).persistent());
    EXPECT_FALSE(models::Generator(c, {.max_seq = 16, .persistent = false}).persistent());
  }
  mntest::ScopedEnv unset("MEGANEURA_PERSISTENT", std::nullopt);
  EXPECT_EQ(models::Generator(c, {.max_seq = 16}).persistent(), default_device_info().type != "CPU")
      << "on by default, except on a CPU";
}

}  // namespace
