#include "test_util.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace mntest {

uint64_t test_seed() {
  if (const char* s = std::getenv("MEGANEURA_TEST_SEED"); s && *s) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

bool optimized_run() {
  const char* v = std::getenv("MEGANEURA_TEST_OPTIMIZE");
  return v && std::strcmp(v, "1") == 0;
}

std::string seed_note(uint64_t seed) {
  return "seed " + std::to_string(seed) + " (rerun with MEGANEURA_TEST_SEED=" + std::to_string(seed) + ")";
}

int count_lines(const std::string& listing, const std::string& what) {
  int n = 0;
  for (size_t at = listing.find(what); at != std::string::npos; at = listing.find(what, at + 1)) ++n;
  return n;
}

std::string test_name(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

std::vector<float> Rng::floats(int64_t n, double lo, double hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(uniform(lo, hi));
  return v;
}

std::vector<float> Rng::floats_away(int64_t n, double lo, double hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(uniform(lo, hi) * (integer(0, 1) ? 1.0 : -1.0));
  return v;
}

std::vector<float> Rng::small_ints(int64_t n, int lo, int hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(integer(lo, hi));
  return v;
}

std::vector<int32_t> Rng::ints(int64_t n, int64_t lo, int64_t hi) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<int32_t>(integer(lo, hi));
  return v;
}

std::vector<uint32_t> Rng::uints(int64_t n, int64_t lo, int64_t hi) {
  std::vector<uint32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<uint32_t>(integer(lo, hi));
  return v;
}

namespace {
template <class T>
meganeura::HostTensor host_of(const meganeura::Shape& s, meganeura::DType t, const std::vector<T>& v) {
  meganeura::HostTensor h;
  h.shape = s;
  h.dtype = t;
  h.bytes.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(h.bytes.data(), v.data(), h.bytes.size());
  return h;
}
}  // namespace

std::vector<float> scaled(std::vector<float> v, double s) {
  for (float& x : v) x = static_cast<float>(x * s);
  return v;
}

meganeura::HostTensor host_f32(const meganeura::Shape& s, const std::vector<float>& v) {
  return host_of(s, meganeura::f32, v);
}

meganeura::HostTensor run_on(const std::function<meganeura::Tensor(meganeura::Tensor)>& f,
                             const meganeura::Shape& shape, const std::vector<float>& x) {
  meganeura::Graph g;
  g.output("y", f(g.input("x", shape)));
  meganeura::Session s = meganeura::build_inference_session(g);
  s.set_input("x", host_f32(shape, x));
  s.step();
  return s.read_output("y");
}

std::vector<float> grad_of_weighted_sum(const std::function<meganeura::Tensor(meganeura::Tensor)>& f,
                                        const meganeura::Shape& shape, const std::vector<float>& x,
                                        const meganeura::Shape& out, const std::vector<float>& c) {
  meganeura::Graph g;
  const meganeura::Tensor loss = meganeura::sum(f(g.parameter("x", shape)) * g.input("c", out));
  meganeura::Session s = meganeura::build_session(g, loss, {.optimizer = meganeura::SGD{.lr = 0.0f}});
  s.set_parameter("x", host_f32(shape, x));
  s.set_input("c", host_f32(out, c));
  s.step();
  return s.read_grad("x").to_f32();
}
std::vector<float> formula(int64_t n, int64_t a, int64_t m, int64_t offset, float d, float base) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = base + static_cast<float>((a * i) % m - offset) / d;
  return v;
}
void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, const std::string& what,
                     double tolerance) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], tolerance) << what << " element " << i;
}

meganeura::PadMode pad_mode_named(const std::string& name) {
  if (name == "reflect") return meganeura::PadMode::reflect;
  if (name == "replicate") return meganeura::PadMode::replicate;
  if (name == "circular") return meganeura::PadMode::circular;
  return meganeura::PadMode::constant;
}
std::vector<float> fixture_input(int64_t n) { return formula(n, 37, 101, 50, 64.0f); }
std::vector<float> fixture_weights(int64_t n) { return formula(n, 53, 97, 48, 64.0f); }

meganeura::HostTensor host_i32(const meganeura::Shape& s, const std::vector<int32_t>& v) {
  return host_of(s, meganeura::i32, v);
}
meganeura::HostTensor host_u32(const meganeura::Shape& s, const std::vector<uint32_t>& v) {
  return host_of(s, meganeura::u32, v);
}
meganeura::HostTensor host_f16(const meganeura::Shape& s, const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16_bits(v[i]);
  return host_of(s, meganeura::f16, h);
}
meganeura::HostTensor host_bf16(const meganeura::Shape& s, const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_bf16_bits(v[i]);
  return host_of(s, meganeura::bf16, h);
}

std::vector<double> decode(const meganeura::HostTensor& t) { return from_host(t).v; }

::testing::AssertionResult compare(const RefTensor& ref, const meganeura::HostTensor& gpu, double rtol,
                                   const std::string& what, double scale) {
  using meganeura::shape_str;
  if (gpu.dtype != ref.dtype)
    return ::testing::AssertionFailure() << what << ": dtype " << meganeura::dtype_name(gpu.dtype) << ", reference "
                                         << meganeura::dtype_name(ref.dtype);
  if (gpu.shape != ref.shape)
    return ::testing::AssertionFailure() << what << ": shape " << shape_str(gpu.shape) << ", reference "
                                         << shape_str(ref.shape);
  std::vector<double> g;
  try {
    g = decode(gpu);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << what << ": " << e.what();
  }
  const bool exact = rtol == 0 || meganeura::is_integer(ref.dtype);
  double mean_abs = 0;
  for (double r : ref.v)
    if (std::isfinite(r)) mean_abs += std::fabs(r);
  mean_abs /= ref.v.empty() ? 1.0 : static_cast<double>(ref.v.size());
  mean_abs = std::max(mean_abs, scale);

  size_t bad = 0, worst = 0;
  double worst_ratio = -1;
  for (size_t i = 0; i < ref.v.size(); ++i) {
    const double r = ref.v[i], x = g[i];
    double ratio;
    if (std::isnan(r) || std::isnan(x))
      ratio = (std::isnan(r) && std::isnan(x)) ? 0 : INFINITY;
    else if (std::isinf(r) || std::isinf(x))
      ratio = r == x ? 0 : INFINITY;
    else if (exact)
      ratio = r == x ? 0 : INFINITY;
    else {
      const double bound = rtol * std::max(std::fabs(r), mean_abs);
      const double d = std::fabs(x - r);
      ratio = bound > 0 ? d / bound : (d == 0 ? 0 : INFINITY);
    }
    if (ratio > 1) ++bad;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(9);
  os << what << " " << shape_str(ref.shape) << " " << meganeura::dtype_name(ref.dtype) << ": " << bad << " of "
     << ref.v.size() << " elements differ (rtol " << rtol << ", mean|ref| " << mean_abs << "); worst at [" << worst
     << "]: gpu " << g[worst] << ", ref " << ref.v[worst] << ", |diff| " << std::fabs(g[worst] - ref.v[worst]);
  return ::testing::AssertionFailure() << os.str();
}

std::map<std::string, meganeura::HostTensor> random_leaf_feeds(const meganeura::Graph& g, Rng& rng, double lo,
                                                               double hi) {
  std::map<std::string, meganeura::HostTensor> feeds;
  for (const meganeura::Node& n : g.nodes())
    if (n.op == meganeura::Op::Input || n.op == meganeura::Op::Parameter)
      feeds[n.name] = host_f32(n.shape, rng.floats(meganeura::numel(n.shape), lo, hi));
  return feeds;
}

void feed_leaves(meganeura::Session& s, const meganeura::Graph& g,
                 const std::map<std::string, meganeura::HostTensor>& feeds) {
  for (const meganeura::Node& n : g.nodes()) {
    if (n.op == meganeura::Op::Input) s.set_input(n.name, feeds.at(n.name));
    if (n.op == meganeura::Op::Parameter) s.set_parameter(n.name, feeds.at(n.name));
  }
}

std::map<std::string, meganeura::HostTensor> step_both(meganeura::Session& a, meganeura::Session& b,
                                                       const meganeura::Graph& g, Rng& rng, double lo, double hi) {
  auto feeds = random_leaf_feeds(g, rng, lo, hi);
  feed_leaves(a, g, feeds);
  feed_leaves(b, g, feeds);
  a.step();
  b.step();
  return feeds;
}

int spawn_self_child(const std::string& test, const std::vector<std::string>& drop, const std::vector<std::string>& add,
                     const std::string& log) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    bool keep = v.rfind("GTEST_", 0) != 0;
    for (const std::string& prefix : drop) keep = keep && v.rfind(prefix, 0) != 0;
    if (keep) env.push_back(v);
  }
  env.insert(env.end(), add.begin(), add.end());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=" + test, disabled = "--gtest_also_run_disabled_tests";
  std::vector<char*> argv = {exe.data(), filter.data(), disabled.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t child = 0;
  const int rc = posix_spawn(&child, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? static_cast<int>(child) : -1;
}

ChildRun run_self_child(const std::string& test, const std::vector<std::string>& drop,
                        const std::vector<std::string>& add, const std::string& log) {
  const pid_t child = spawn_self_child(test, drop, add, log);
  if (child < 0) return {};
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return {static_cast<int>(child), -1};
  return {static_cast<int>(child), WEXITSTATUS(status)};
}

}  // namespace mntest
