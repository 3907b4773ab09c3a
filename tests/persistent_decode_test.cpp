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

// At matmul precision high the step reads an f16 copy of the weight matrices, each row scaled by
// a power of two: within f16's rounding of the program's exact f32 (k % 8 == 4 included: the
// intermediate size 44, q of 3 x 12). At highest (the other tests) it reads f32.
TEST_F(PersistentDecoding, F16WeightsAtHighPrecision) {
  mntest::ScopedEnv high("MEGANEURA_MATMUL_PRECISION", "high");
  const models::LlamaConfig cases[] = {config(4, 2, 8, false, false, 0), config(3, 1, 12, true, true, 0)};
  uint64_t seed = 31;
  for (const models::LlamaConfig& c : cases) {
    auto p = pair_of(c, 64, seed++);
    ASSERT_TRUE(p->fast.persistent());
    EXPECT_EQ(p->fast.persistent_weights(), "f16");
    const std::vector<int32_t> t = tokens(9, seed++, c.vocab_size);
    const std::vector<int32_t> prompt(t.begin(), t.begin() + 4);
    p->fast.prefill(prompt);
    p->program.prefill(prompt);
    double worst = 0;
    for (size_t i = 4; i < t.size(); ++i) {
      const double e = worst_relative(p->fast.decode(t[i]), p->program.decode(t[i]));
      EXPECT_LE(e, 2e-3) << "decoding token " << i;
      worst = std::max(worst, e);
    }
    EXPECT_GT(worst, 1e-6) << "f16 weights round: an exact match means f32 was read";
  }
  mntest::ScopedEnv f32("MEGANEURA_DECODE_WEIGHTS", "f32");
  EXPECT_EQ(models::Generator(cases[0], {.max_seq = 16}).persistent_weights(), "f32");
}

// Each row takes its own exponent: LM head rows 1e20 and 1e-20 apart keep their 11 bits (one
// exponent a matrix would flush the small rows to zero and the large ones to infinity).
TEST_F(PersistentDecoding, F16RowsKeepTheirOwnRange) {
  mntest::ScopedEnv high("MEGANEURA_MATMUL_PRECISION", "high");
  const models::LlamaConfig c = config(4, 2, 8, false, false, 0);
  auto p = pair_of(c, 32, 41);
  const std::string head = "lm_head.weight";
  const Shape shape = p->fast.session().parameter_info(head).shape;
  std::vector<float> w = p->fast.session().read_parameter(head).to_f32();
  std::vector<double> row_scale(static_cast<size_t>(shape[0]));
  for (size_t r = 0; r < row_scale.size(); ++r) {
    row_scale[r] = r % 3 == 0 ? 1e20 : r % 3 == 1 ? 1e-20 : 1.0;
    for (int64_t k = 0; k < shape[1]; ++k)
      w[r * static_cast<size_t>(shape[1]) + static_cast<size_t>(k)] *= static_cast<float>(row_scale[r]);
  }
  p->fast.session().set_parameter(head, HostTensor::f32s(shape, w));
  p->program.session().set_parameter(head, HostTensor::f32s(shape, w));
  p->fast.prefill({1, 2, 3});
  p->program.prefill({1, 2, 3});
  std::vector<float> got = p->fast.decode(4), want = p->program.decode(4);
  for (size_t r = 0; r < got.size(); ++r) {
    got[r] = static_cast<float>(got[r] / row_scale[r]);
    want[r] = static_cast<float>(want[r] / row_scale[r]);
  }
  EXPECT_LE(worst_relative(got, want), 2e-3);
}

// The copy is made again after any parameter write, at the next step.
TEST_F(PersistentDecoding, F16WeightsFollowAParameterWrite) {
  mntest::ScopedEnv high("MEGANEURA_MATMUL_PRECISION", "high");
  const models::LlamaConfig c = config(4, 2, 8, false, false, 0);
  auto p = pair_of(c, 32, 51);
  p->fast.prefill({1, 2, 3});
  p->program.prefill({1, 2, 3});
  EXPECT_LE(worst_relative(p->fast.decode(4), p->program.decode(4)), 2e-3);
  fill(p->fast.session(), 52);
  fill(p->program.session(), 52);
  EXPECT_LE(worst_relative(p->fast.decode(5), p->program.decode(5)), 2e-3) << "new weights";
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
