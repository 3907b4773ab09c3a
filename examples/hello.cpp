// hello: build a small graph, compile it into a session on the default Vulkan device, run one
// step and print the results, plus what the session did (dispatches, memory, the command list).
#include <cstdio>
#include <meganeura/meganeura.hpp>
#include <random>
#include <vector>

namespace mn = meganeura;

static std::vector<float> random_values(size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

static void print(const mn::HostTensor& t, const char* name) {
  std::vector<float> v = t.to_f32();
  int64_t cols = t.shape.empty() ? 1 : t.shape.back();
  std::printf("%s %s:\n", name, mn::shape_str(t.shape).c_str());
  for (size_t i = 0; i < v.size(); ++i)
    std::printf("%s%8.4f%s", i % cols == 0 ? "  " : " ", v[i], (i + 1) % cols == 0 ? "\n" : "");
}

int main() try {
  mn::Graph g;
  auto x = g.input("x", {4, 8});
  auto w = g.parameter("w", {8, 6});
  auto b = g.parameter("b", {6});
  auto h = mn::gelu(mn::matmul(x, w) + b);  // [4,6]; b broadcasts over the rows
  auto probs = mn::softmax(h, -1);          // each row sums to 1
  g.output("probs", probs);
  g.output("row_sum", mn::sum(probs, {-1}));  // [4], a reduction: should print 1s
  g.output("mean_h", mn::mean(h));            // rank 0: mean over every element

  auto session = mn::build_inference_session(g);
  std::printf("%s\n\n", mn::default_device_info().banner().c_str());

  std::mt19937 rng(42);  // fixed seed: the same numbers on every run and every device
  session.set_parameter("w", random_values(8 * 6, rng, 0.5f));
  session.set_parameter("b", random_values(6, rng, 0.1f));
  session.set_input("x", random_values(4 * 8, rng, 1.0f));
  session.step();

  for (const auto& name : session.output_names()) print(session.read_output(name), name.c_str());

  mn::SessionStats stats = session.stats();
  mn::MemoryStats mem = session.memory();
  std::printf(
      "\n%u dispatches, %u barriers per step; arena peak %llu bytes (%llu without reuse), "
      "%llu bytes on the device\n",
      stats.dispatches, stats.barriers, (unsigned long long)mem.arena, (unsigned long long)mem.arena_unshared,
      (unsigned long long)mem.total_device);
  std::printf("\n%s", session.listing().c_str());
  return 0;
} catch (const mn::Error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
