// Two threads using meganeura at once, as docs/api.md#threads promises they may: sessions built
// and stepped side by side on one device and on two logical devices, a shared kernel disk cache,
// saves to one path, a shared tokenizer. Each result is compared with the same work done on one
// thread. Run under ThreadSanitizer (MEGANEURA_SANITIZE=thread, docs/reliability.md#concurrency)
// a data race in the library is a report that fails the test.
#include <gtest/gtest.h>

#include <barrier>
#include <filesystem>
#include <functional>
#include <thread>

#include "file_fixtures.hpp"
#include "meganeura/meganeura.hpp"
#include "test_util.hpp"
#include "vulkan/context.hpp"

namespace mn = meganeura;
using mntest::ScopedEnv;
using mntest::TempDir;

namespace {

constexpr int64_t kBatch = 16, kIn = 24, kClasses = 5;
constexpr int kSteps = 4;

// What one thread's session did: the loss of every step and the final weights.
struct TrainRun {
  std::vector<float> losses;
  std::vector<std::byte> fc1;
  bool operator==(const TrainRun&) const = default;
};

// A small MLP (matmul, bias, GELU, scale — a fused elementwise chain, a generated kernel —
// cross-entropy) trained with AdamW on batches drawn from `seed`. A `hidden` size no earlier test
// used makes the device's pipelines anew (at once on both threads: what a race would touch).
TrainRun train_mlp(uint64_t seed, int device, int64_t hidden, float scale = 1.0f) {
  mn::Graph g;
  auto x = g.input("x", {kBatch, kIn});
  auto y = g.input("y", {kBatch}, mn::i32);
  auto h =
      mn::gelu(mn::matmul(x, g.parameter("fc1.weight", {kIn, hidden})) + g.parameter("fc1.bias", {hidden})) * scale;
  auto logits = mn::matmul(h, g.parameter("fc2.weight", {hidden, kClasses})) + g.parameter("fc2.bias", {kClasses});
  g.output("logits", logits);
  mn::TrainConfig config;
  config.optimizer = mn::AdamW{.lr = 1e-2f, .weight_decay = 1e-4f};
  config.device = device;
  mn::Session s = mn::build_session(g, mn::cross_entropy(logits, y), config);
  mn::init::linear(s, "fc1.weight", "fc1.bias", seed);
  mn::init::linear(s, "fc2.weight", "fc2.bias", seed + 1);
  mntest::Rng rng(seed);
  TrainRun run;
  for (int i = 0; i < kSteps; ++i) {
    s.set_input("x", rng.floats(kBatch * kIn, -1, 1));
    const std::vector<int32_t> labels = rng.ints(kBatch, 0, kClasses - 1);
    s.set_input("y", mn::HostTensor::i32s({kBatch}, labels));
    s.step();
    run.losses.push_back(s.read_loss());
  }
  run.fc1 = s.read_parameter("fc1.weight").bytes;
  return run;
}

// An inference session of its own graph: softmax(x·w) with w set from `seed`, run three times.
std::vector<float> infer(uint64_t seed, int device, int64_t hidden) {
  mn::Graph g;
  auto x = g.input("x", {8, 40});
  g.output("p", mn::softmax(mn::matmul(x, g.parameter("w", {40, hidden})) * 0.5f, -1));
  mn::Session s = mn::build_inference_session(g, {.device = device});
  mntest::Rng rng(seed);
  s.set_parameter("w", rng.floats(40 * hidden, -1, 1));
  std::vector<float> out;
  for (int i = 0; i < 3; ++i) {
    s.set_input("x", rng.floats(8 * 40, -2, 2));
    s.step();
    for (float v : s.read_output("p").to_f32()) out.push_back(v);
  }
  return out;
}

struct Results {
  TrainRun trained;
  std::vector<float> inferred;
  bool operator==(const Results&) const = default;
};

Results work(uint64_t seed, int device, int64_t hidden) {
  return {train_mlp(seed, device, hidden), infer(seed + 7, device, hidden)};
}

// Runs a(…) and b(…) on two threads that start together.
void side_by_side(const std::function<void()>& a, const std::function<void()>& b) {
  std::barrier start(2);
  std::exception_ptr errors[2];
  auto run = [&](const std::function<void()>& f, std::exception_ptr& error) {
    start.arrive_and_wait();
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
  };
  std::thread other(run, std::cref(b), std::ref(errors[1]));
  run(a, errors[0]);
  other.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Both threads' work at the same time (first: on pipelines nobody made yet), then each alone.
void expect_same_side_by_side(int device_a, int device_b, int64_t hidden) {
  const uint64_t seed = mntest::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with MEGANEURA_TEST_SEED=" + std::to_string(seed) + ")");
  Results a, b;
  side_by_side([&] { a = work(seed, device_a, hidden); }, [&] { b = work(seed + 100, device_b, hidden); });
  const Results alone_a = work(seed, device_a, hidden), alone_b = work(seed + 100, device_b, hidden);
  EXPECT_TRUE(a == alone_a) << "thread A's losses or outputs differ from the same work alone";
  EXPECT_TRUE(b == alone_b) << "thread B's losses or outputs differ from the same work alone";
  EXPECT_FALSE(alone_a == alone_b) << "the two threads must do different work";
}

}  // namespace

TEST(Concurrency, TwoSessionsOnOneDevice) { expect_same_side_by_side(-1, -1, 32); }

// -1 (the default device) and 0 get a context each: two VkInstances and VkDevices, on lavapipe
// two logical devices of the one CPU device.
TEST(Concurrency, TwoSessionsOnTwoLogicalDevices) {
  expect_same_side_by_side(-1, 0, 48);  // context 0 is made here, beside -1's work
  EXPECT_NE(mn::vk::Context::get(-1), mn::vk::Context::get(0));
  EXPECT_NE(mn::vk::Context::get(-1)->device(), mn::vk::Context::get(0)->device());
}

// A device that does not exist is an error listing the devices, not a crash.
TEST(Concurrency, UnknownDeviceIsAnError) {
  mn::Graph g;
  g.output("y", mn::relu(g.input("x", {4})));
  const std::string msg = mntest::message_of<mn::DeviceError>([&] { mn::build_inference_session(g, {.device = 99}); });
  EXPECT_NE(msg.find("device 99 does not exist"), std::string::npos) << msg;
  EXPECT_NE(msg.find("0: "), std::string::npos) << "lists the devices: " << msg;
}

// Two threads compiling the same generated kernels into an empty disk cache at once (a scale no
// other test uses: kernels no context has made yet), then two threads reading them back.
TEST(Concurrency, SharedKernelDiskCache) {
  TempDir dir;
  ScopedEnv cache("MEGANEURA_CACHE_DIR", dir.path().string());  // set before the threads start
  const uint64_t seed = mntest::test_seed();
  TrainRun a, b;
  side_by_side([&] { a = train_mlp(seed, -1, 40, 0.75f); }, [&] { b = train_mlp(seed, 0, 40, 0.75f); });
  EXPECT_TRUE(a == b) << "the same session on two logical devices";
  size_t kernels = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "a temp file left: " << e.path();
    kernels += e.path().extension() == ".spv";
  }
  EXPECT_GT(kernels, 0u) << "the MLP's fused chains are generated kernels";
  side_by_side([&] { a = train_mlp(seed, -1, 40, 0.75f); }, [&] { b = train_mlp(seed, 0, 40, 0.75f); });
  EXPECT_TRUE(a == b);
}

// Two threads saving different tensors to one path at once: each save is atomic, so the file
// is always one of the two, whole (with a temp file per process they overwrote each other's).
TEST(Concurrency, SavesToOnePath) {
  TempDir dir;
  const std::string path = dir / "shared.safetensors";
  mn::TensorFile files[2];
  for (int t = 0; t < 2; ++t) {
    std::vector<float> values(1 << 20, static_cast<float>(t + 1));  // 4 MiB: the writes overlap
    files[t].tensors["w"] = mn::HostTensor::f32s({1 << 20}, values);
  }
  std::string bytes[2];
  for (int t = 0; t < 2; ++t) {
    mn::write_safetensors(path, files[t]);
    bytes[t] = mntest::read_bytes(path);
  }
  for (int round = 0; round < 8; ++round) {
    side_by_side([&] { mn::write_safetensors(path, files[0]); }, [&] { mn::write_safetensors(path, files[1]); });
    const std::string now = mntest::read_bytes(path);
    EXPECT_TRUE(now == bytes[0] || now == bytes[1]) << "round " << round << ": a mix of the two saves";
  }
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "shared.safetensors") << "a temp file left";
}

// One Tokenizer shared by two threads (encode is const; its BPE cache is locked): the same ids
// as on one thread.
TEST(Concurrency, SharedTokenizer) {
  const mn::Tokenizer tok = mn::Tokenizer::from_file(MEGANEURA_TOKENIZER_DATA "/smollm2_like.tokenizer.json");
  std::vector<std::string> texts;
  for (int i = 0; i < 200; ++i)
    texts.push_back("Sample " + std::to_string(i * 7919) + ": the quick brown fox's " + std::string(i % 13, 'z') +
                    " jumps — over the lazy dog " + std::to_string(i));
  auto encode_all = [&](size_t from) {
    std::vector<std::vector<int32_t>> ids;
    for (size_t i = 0; i < texts.size(); ++i) ids.push_back(tok.encode(texts[(from + i) % texts.size()]));
    return ids;
  };
  const auto alone = encode_all(0);
  std::vector<std::vector<int32_t>> a, b;
  side_by_side([&] { a = encode_all(0); }, [&] { b = encode_all(100); });
  EXPECT_EQ(a, alone);
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(b[i], alone[(100 + i) % texts.size()]) << texts[i];
}

// One finished Graph, two threads building sessions from it (build reads the graph, never
// writes it) and stepping them.
TEST(Concurrency, OneGraphBuiltTwice) {
  mn::Graph g;
  auto x = g.input("x", {6, 10});
  g.output("y", mn::tanh(mn::matmul(x, g.parameter("w", {10, 3}))) + 1.0f);
  const std::vector<float> w = mntest::Rng(5).floats(30, -1, 1), xs = mntest::Rng(6).floats(60, -1, 1);
  auto run = [&](int device) {
    mn::Session s = mn::build_inference_session(g, {.device = device});
    s.set_parameter("w", w);
    s.set_input("x", xs);
    s.step();
    return s.read_output("y").to_f32();
  };
  const std::vector<float> alone = run(-1);
  std::vector<float> a, b;
  side_by_side([&] { a = run(-1); }, [&] { b = run(0); });
  EXPECT_EQ(a, alone);
  EXPECT_EQ(b, alone);
}

// One Checkpoint (a read-only map of the files) read by two threads at once.
TEST(Concurrency, SharedCheckpointReads) {
  TempDir dir;
  mn::TensorFile file;
  for (int i = 0; i < 6; ++i)
    file.tensors["t" + std::to_string(i)] = mn::HostTensor::f32s({1000}, mntest::Rng(i).floats(1000, -1, 1));
  mn::write_safetensors(dir / "c.safetensors", file);
  const mn::Checkpoint ckpt = mn::Checkpoint::open(dir / "c.safetensors");
  auto read_all = [&] {
    std::vector<mn::HostTensor> out;
    for (int round = 0; round < 20; ++round)
      for (const std::string& name : ckpt.names()) out.push_back(ckpt.read(name, mn::f32));
    return out;
  };
  std::vector<mn::HostTensor> a, b;
  side_by_side([&] { a = read_all(); }, [&] { b = read_all(); });
  ASSERT_EQ(a.size(), 120u);
  ASSERT_EQ(b.size(), 120u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].bytes, file.tensors.at("t" + std::to_string(i % 6)).bytes);
    EXPECT_EQ(b[i].bytes, a[i].bytes);
  }
}
