// Device faults injected through src/vulkan/fault.hpp: every device allocation of a whole Llama
// session and a whole MLP training run failed in turn (out of device memory), a lost device at
// submit and at the fence wait, a step whose fence never signals. Each must end in its error
// class with a message that says what happened, leave the session usable or cleanly gone, and
// leak nothing (the validation layer reports Vulkan objects still alive at device destruction;
// ASan reports host leaks).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fashion_mlp.hpp"
#include "file_fixtures.hpp"
#include "meganeura/meganeura.hpp"
#include "test_util.hpp"
#include "vulkan/fault.hpp"

namespace {

using namespace meganeura;
using mntest::read_bytes;
using mntest::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace fault = meganeura::vk::fault;

// Runs a scenario with every operation through attempt(): an OutOfMemoryError is recorded and
// the operation tried again, which must then succeed (faults fire once) — so a session an
// error left behind is shown to be usable, and a failed build to leave nothing in the way of
// the next one.
struct Attempts {
  std::vector<std::string> errors;  // the OutOfMemoryError messages seen

  template <class F>
  auto operator()(F&& op) -> decltype(op()) {
    try {
      return op();
    } catch (const OutOfMemoryError& e) {
      errors.push_back(e.what());
      return op();
    }
  }
};

// Ends the process's device (a simulated loss makes the next session build get a new one): the
// validation layer then reports every Vulkan object made on it and not destroyed — a leak.
void retire_the_device() {
  Graph g;
  g.output("y", g.input("x", {4}) + 1.0f);
  {
    Session s = build_inference_session(g);
    s.set_input("x", std::vector<float>{1, 2, 3, 4});
    fault::arm_device_lost(fault::Loss::AtSubmit);
    EXPECT_THROW(s.step(), DeviceError);
  }
  Session next = build_inference_session(g);  // on a new device; the old one is destroyed
}

// What a scenario produced, compared bit for bit with the run that had no fault.
using Outcome = std::vector<std::vector<std::byte>>;
using Scenario = std::function<Outcome(Attempts&)>;

// Fails each device allocation of `scenario` in turn, one per run: every run must see exactly
// one OutOfMemoryError saying what it asked for, what is free and what to do, and still produce
// the fault-free outcome. Returns how many allocations one run makes.
uint64_t fail_every_allocation(const Scenario& scenario) {
  Attempts none;
  scenario(none);  // warm-up: kernels compiled, pipelines cached in the context
  fault::arm_allocation(0);
  const Outcome clean = scenario(none);
  const uint64_t total = fault::allocations_counted();
  EXPECT_TRUE(none.errors.empty());
  for (uint64_t n = 1; n <= total; ++n) {
    SCOPED_TRACE("allocation " + std::to_string(n) + " of " + std::to_string(total));
    fault::arm_allocation(n);
    Attempts attempts;
    Outcome got;
    try {
      got = scenario(attempts);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped: " << e.what();
      continue;
    }
    EXPECT_EQ(attempts.errors.size(), 1u) << "the injected fault was not reported exactly once";
    if (attempts.errors.empty()) continue;
    EXPECT_THAT(attempts.errors[0], AllOf(HasSubstr("meganeura: out of device memory allocating "), HasSubstr("free"),
                                          HasSubstr("Reduce the batch size")));
    EXPECT_TRUE(got == clean) << "a different result after the fault";
  }
  fault::arm_allocation(0);
  retire_the_device();
  return total;
}

// SmolLM2's shape (GQA, tied embeddings, SwiGLU, RMSNorm, rotary), tiny.
models::LlamaConfig tiny_llama() {
  models::LlamaConfig c;
  c.vocab_size = 96;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 64;
  c.tie_word_embeddings = true;
  return c;
}

std::vector<std::byte> bytes_of(const HostTensor& t) { return t.bytes; }

// A Llama inference session: built, weights drawn by the default initialisers (seed 0), one step
// over 8 tokens, the logits read back.
Outcome llama_inference(Attempts& attempt) {
  const int64_t seq = 8;
  models::LlamaGraph lg = models::llama_graph(tiny_llama(), 1, seq);
  Session s = attempt([&] { return build_inference_session(*lg.graph); });
  std::vector<int32_t> ids(seq), positions(seq);
  for (int32_t i = 0; i < seq; ++i) ids[i] = (i * 37 + 5) % 96, positions[i] = i;
  attempt([&] { s.set_input("input_ids", HostTensor::i32s({1, seq}, ids)); });
  attempt([&] { s.set_input("positions", HostTensor::i32s({seq}, positions)); });
  attempt([&] { s.step(); });
  return {attempt([&] { return bytes_of(s.read_output("logits")); })};
}

// Fashion-MNIST's shapes: a 784 -> 64 -> 10 MLP trained with AdamW on synthetic images, three
// steps, then its parameters and a checkpoint read back.
Outcome mlp_training(Attempts& attempt) {
  const mntest::FashionMlp m(32, 64);
  Session s = attempt([&] { return m.session(AdamW{.lr = 1e-3f, .weight_decay = 1e-4f}); });
  Outcome out;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> x(32 * 784);
    std::vector<int32_t> y(32);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7 + static_cast<size_t>(step)) % 256) / 255.0f;
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int32_t>((i + static_cast<size_t>(step)) % 10);
    attempt([&] { s.set_input("x", x); });
    attempt([&] { s.set_input("y", HostTensor::i32s({32}, y)); });
    attempt([&] { s.step(); });
    const float loss = attempt([&] { return s.read_loss(); });
    out.push_back(std::vector<std::byte>(reinterpret_cast<const std::byte*>(&loss),
                                         reinterpret_cast<const std::byte*>(&loss + 1)));
  }
  for (const char* p : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"})
    out.push_back(attempt([&] { return bytes_of(s.read_parameter(p)); }));
  TempDir dir;
  attempt([&] { s.save(dir / "mlp.safetensors"); });
  const std::string saved = read_bytes(dir / "mlp.safetensors");
  out.push_back(std::vector<std::byte>(reinterpret_cast<const std::byte*>(saved.data()),
                                       reinterpret_cast<const std::byte*>(saved.data() + saved.size())));
  return out;
}

TEST(DeviceOutOfMemory, EveryAllocationOfALlamaSessionFailsCleanly) {
  const uint64_t total = fail_every_allocation(llama_inference);
  EXPECT_GT(total, 10u) << "the scenario makes too few allocations to mean anything";
  std::printf("llama inference: %llu device allocations, each failed once\n", static_cast<unsigned long long>(total));
}

// A Generator decoding with the persistent dispatch (forced on lavapipe) and its f16 weight copy
// (precision high): each device allocation of its build fails in turn. One in the session is
// an OutOfMemoryError (the build is retried); one in the decoder is absorbed: it is made again
// without the optional copy, reading the f32 weights. Either way it decodes, as the clean run
// does to the copy's rounding.
TEST(DeviceOutOfMemory, EveryAllocationOfAPersistentGeneratorFailsCleanly) {
  mntest::ScopedEnv persistent("MEGANEURA_PERSISTENT", "1"), high("MEGANEURA_MATMUL_PRECISION", "high");
  models::LlamaConfig c = tiny_llama();
  c.num_hidden_layers = 1;
  auto decoded = [&](Attempts& attempt, uint64_t fail_at, std::string& weights) {
    fault::arm_allocation(fail_at);
    auto g = attempt([&] { return std::make_unique<models::Generator>(c, models::GeneratorOptions{.max_seq = 16}); });
    const uint64_t made = fault::allocations_counted();
    fault::arm_allocation(0);
    EXPECT_TRUE(g->persistent());
    weights = g->persistent_weights();
    g->prefill({1, 2, 3});
    g->decode(4);
    std::vector<float> logits = g->decode(5);
    logits.push_back(static_cast<float>(made));
    return logits;
  };
  Attempts none;
  std::string weights;
  decoded(none, 0, weights);  // warm-up: kernels compiled, pipelines cached in the context
  std::vector<float> clean = decoded(none, 0, weights);
  EXPECT_EQ(weights, "f16");
  const auto total = static_cast<uint64_t>(clean.back());
  clean.pop_back();
  int absorbed = 0;
  for (uint64_t n = 1; n <= total; ++n) {
    SCOPED_TRACE("allocation " + std::to_string(n) + " of " + std::to_string(total));
    Attempts attempts;
    std::vector<float> got;
    try {
      got = decoded(attempts, n, weights);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "escaped: " << e.what();
      continue;
    }
    got.pop_back();
    EXPECT_LE(attempts.errors.size(), 1u);
    if (attempts.errors.empty()) {  // the decoder's: absorbed
      ++absorbed;
      EXPECT_EQ(weights, "f32");
    }
    double top = 0, worst = 0;
    for (size_t i = 0; i < clean.size(); ++i) {
      top = std::max(top, std::abs(static_cast<double>(clean[i])));
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - clean[i]));
    }
    EXPECT_LE(worst, 2e-3 * top);
  }
  EXPECT_GT(absorbed, 0) << "no allocation of the decoder was failed";
  std::printf("persistent generator: %llu device allocations, each failed once; %d absorbed by the decoder\n",
              static_cast<unsigned long long>(total), absorbed);
  retire_the_device();
}

TEST(DeviceOutOfMemory, EveryAllocationOfAnMlpTrainingRunFailsCleanly) {
  const uint64_t total = fail_every_allocation(mlp_training);
  EXPECT_GT(total, 10u);
  std::printf("mlp training: %llu device allocations, each failed once\n", static_cast<unsigned long long>(total));
}

// A pipeline (and shader module) made for the first time fails too: a kernel no other test
// generates (an elementwise chain with this test's own constant).
TEST(DeviceOutOfMemory, APipelineCreatedForTheFirstTimeFailsCleanly) {
  auto build = [] {
    Graph g;
    auto x = g.input("x", {64});
    g.output("y", exp(x * 0.123456f) + 0.654321f);
    return build_inference_session(g);
  };
  for (uint64_t n = 1;; ++n) {  // until a build gets through: each of its allocations failed once
    SCOPED_TRACE("allocation " + std::to_string(n));
    fault::arm_allocation(n);
    try {
      Session s = build();
      break;
    } catch (const OutOfMemoryError& e) {
      EXPECT_THAT(e.what(), AllOf(HasSubstr("free"), HasSubstr("Reduce the batch size")));
    }
    ASSERT_LT(n, 1000u);
  }
  fault::arm_allocation(0);
}

// A buffer the device cannot hold at all: the message says how much was asked and what is free.
TEST(DeviceOutOfMemory, TheMessageSaysWhatWasAskedAndWhatIsFree) {
  fault::arm_allocation(1);
  Graph g;
  auto x = g.input("x", {1000});
  g.output("y", x * 2.0f);
  const std::string msg = mntest::message_of<OutOfMemoryError>([&] { build_inference_session(g); });
  fault::arm_allocation(0);
  EXPECT_THAT(msg,
              AllOf(HasSubstr("meganeura: out of device memory allocating the "), HasSubstr(" on "), HasSubstr("heap "),
                    HasSubstr("free"), HasSubstr("Reduce the batch size or sequence length, or set MEGANEURA_DEVICE")));
}

std::vector<float> ramp() {
  std::vector<float> v(256);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return v;
}

// y = 2x over 256 values.
struct Doubling {
  Graph g;
  Doubling() { g.output("y", g.input("x", {256}) * 2.0f); }
  Session session() const {  // with x set to 0, 1, ..., 255
    Session s = build_inference_session(g);
    s.set_input("x", ramp());
    return s;
  }
};

// A lost device: the step throws DeviceError saying so, every later step of a session on that
// device says it was lost, and a new session gets a new device and works.
void lost_device_case(fault::Loss where) {
  const Doubling d;
  {
    Session s = d.session();
    fault::arm_device_lost(where);
    EXPECT_THAT(mntest::message_of<DeviceError>([&] { s.step(); }),
                AllOf(HasSubstr("the GPU was lost (device lost) during a step"), HasSubstr("dmesg")));
    EXPECT_THAT(mntest::message_of<DeviceError>([&] { s.step(); }),
                HasSubstr("was lost earlier; a step cannot run on it"));
  }  // destroyed cleanly, the device with it
  Session fresh = d.session();
  fresh.step();
  EXPECT_EQ(fresh.read_output("y").to_f32()[255], 510.0f);
}

TEST(DeviceLost, AtSubmit) { lost_device_case(fault::Loss::AtSubmit); }
TEST(DeviceLost, AtTheFenceWait) { lost_device_case(fault::Loss::AtWait); }

// A step whose fence never signals: a DeviceError after MEGANEURA_TIMEOUT_S, not a hang; the
// next step first waits for the late one, and the session goes on.
TEST(HungStep, TimesOutWithAClearErrorAndTheSessionGoesOn) {
  const Doubling d;
  Session s = d.session();
  mntest::ScopedEnv timeout("MEGANEURA_TIMEOUT_S", "0.3");
  fault::arm_hang();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(
      mntest::message_of<DeviceError>([&] { s.step(); }),
      AllOf(HasSubstr("the GPU did not finish a step within 0.3 s (a hang?)"), HasSubstr("MEGANEURA_TIMEOUT_S")));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 5.0);
  s.step();
  EXPECT_EQ(s.read_output("y").to_f32()[100], 200.0f);
}

// The same hang, and the session destroyed right away: its late step is waited for first (the
// validation layer would report freeing what a pending submission uses).
TEST(HungStep, ASessionDestroyedAfterATimeoutFreesCleanly) {
  const Doubling d;
  mntest::ScopedEnv timeout("MEGANEURA_TIMEOUT_S", "0.2");
  {
    Session s = d.session();
    fault::arm_hang();
    EXPECT_THROW(s.step(), DeviceError);
  }
  Session again = d.session();
  again.step();
  EXPECT_EQ(again.read_output("y").to_f32()[1], 2.0f);
}

// A transfer (set_parameter's upload through a staging buffer) that times out: the next upload
// waits for it, and the session computes with the values set last.
TEST(HungStep, ATransferTimesOutAndTheNextOneWaitsForIt) {
  Graph g;
  g.output("y", g.input("x", {4}) * g.parameter("w", {4}));
  Session s = build_inference_session(g);
  s.set_input("x", std::vector<float>{1, 2, 3, 4});
  mntest::ScopedEnv timeout("MEGANEURA_TIMEOUT_S", "0.2");
  fault::arm_hang();
  EXPECT_THAT(mntest::message_of<DeviceError>([&] {
                s.set_parameter("w", std::vector<float>{5, 5, 5, 5});
              }),
              HasSubstr("the GPU did not finish a transfer within 0.2 s"));
  s.set_parameter("w", std::vector<float>{2, 2, 2, 2});
  s.step();
  EXPECT_EQ(s.read_output("y").to_f32(), (std::vector<float>{2, 4, 6, 8}));
}

TEST(HungStep, ABadTimeoutIsAnError) {
  const Doubling d;
  Session s = d.session();
  mntest::ScopedEnv timeout("MEGANEURA_TIMEOUT_S", "soon");
  EXPECT_THAT(mntest::message_of<DeviceError>([&] { s.step(); }),
              HasSubstr("MEGANEURA_TIMEOUT_S=soon is not a positive number"));
}

// MEGANEURA_SPIN_US: waits poll their fence that long before sleeping (off on a CPU device by
// default); read when a device is made, so the case makes new ones. A bad value names the variable.
TEST(FenceSpin, PollingWaitsGiveTheSameResults) {
  const Doubling d;
  auto doubled = [](Session& s) {
    s.step();
    const std::vector<float> y = s.read_output("y").to_f32();
    for (size_t k = 0; k < y.size(); ++k) ASSERT_EQ(y[k], 2.0f * static_cast<float>(k)) << k;
  };
  {
    mntest::ScopedEnv spin("MEGANEURA_SPIN_US", "200000");
    retire_the_device();  // the next device polls
    Session s = d.session();
    for (int i = 0; i < 3; ++i) doubled(s);
    fault::arm_device_lost(fault::Loss::AtSubmit);  // and the one after is made anew
    EXPECT_THROW(s.step(), DeviceError);
  }
  {
    mntest::ScopedEnv spin("MEGANEURA_SPIN_US", "soon");
    EXPECT_THAT(mntest::message_of<Error>([&] { d.session(); }), HasSubstr("MEGANEURA_SPIN_US=soon: expected"));
  }
  Session after = d.session();
  doubled(after);
}

// A device that binds fewer storage buffers to a stage than a kernel needs (a few mobile GPUs
// allow 4 to 8): the build names the kernel and the limit, and a later build on a device with
// room succeeds.
TEST(DeviceLimits, TooFewStorageBuffersAStageIsAClearError) {
  Graph g;
  g.output("y", matmul(g.input("a", {5, 7}), g.input("b", {7, 3})));
  fault::arm_storage_buffers(3);
  const std::string msg = mntest::message_of<DeviceError>([&] { build_inference_session(g); });
  fault::arm_storage_buffers(0);
  EXPECT_THAT(msg, AllOf(HasSubstr("kernel matmul"), HasSubstr("storage buffers"),
                         HasSubstr("maxPerStageDescriptorStorageBuffers 3")));
  Session s = build_inference_session(g);
  s.set_input("a", std::vector<float>(35, 1));
  s.set_input("b", std::vector<float>(21, 1));
  s.step();
  EXPECT_EQ(s.read_output("y").to_f32(), std::vector<float>(15, 7));
}

}  // namespace
