// Shared test helpers: seeded random data, host tensors, and the GPU-vs-reference comparison.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "meganeura/meganeura.hpp"
#include "reference.hpp"

namespace mntest {

// Sets (or, given nullopt, unsets) an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    save();
    ::setenv(name, value.c_str(), 1);
  }
  ScopedEnv(const char* name, std::nullopt_t) : name_(name) {
    save();
    ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void save() {
    if (const char* old = std::getenv(name_)) old_ = old;
  }
  const char* name_;
  std::optional<std::string> old_;
};

// A seed for one test: MEGANEURA_TEST_SEED if set, else fresh from std::random_device.
uint64_t test_seed();

// Random source of a test; its seed is what a failure prints.
class Rng {
 public:
  Rng() : Rng(test_seed()) {}
  explicit Rng(uint64_t seed) : seed_(seed), gen_(seed) {}
  uint64_t seed() const { return seed_; }
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen_); }
  int64_t integer(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(gen_); }  // inclusive
  std::vector<float> floats(int64_t n, double lo, double hi);
  // |x| in [lo, hi] with a random sign: for reciprocal/division away from zero.
  std::vector<float> floats_away(int64_t n, double lo, double hi);
  // Integers in [lo, hi] as floats: makes ties (eq, argmax, max) likely.
  std::vector<float> small_ints(int64_t n, int lo, int hi);
  std::vector<int32_t> ints(int64_t n, int64_t lo, int64_t hi);
  std::vector<uint32_t> uints(int64_t n, int64_t lo, int64_t hi);
  std::mt19937_64& engine() { return gen_; }

 private:
  uint64_t seed_;
  std::mt19937_64 gen_;
};

// MEGANEURA_TEST_OPTIMIZE=1: the op tables run with the optimizer and elementwise fusion on.
bool optimized_run();

// Runs f, expects it to throw E, and returns the message ("" and a failure otherwise).
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << typeid(E).name() << ", got " << typeid(e).name() << ": " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected " << typeid(E).name() << ", nothing was thrown";
  return "";
}

// An error message that should name `part`.
inline void expect_has(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << message;
}

// "seed 1234 (rerun with MEGANEURA_TEST_SEED=1234)"
std::string seed_note(uint64_t seed);

// How many times `what` occurs in a session's listing (dispatches of a kernel, labels).
int count_lines(const std::string& listing, const std::string& what);
// `s` as a GoogleTest parameter name: every character that is not a letter or digit becomes '_'.
std::string test_name(std::string s);

meganeura::HostTensor host_f32(const meganeura::Shape& s, const std::vector<float>& v);
// f(x) for an f32 input x of `shape`, from one step of an inference session.
meganeura::HostTensor run_on(const std::function<meganeura::Tensor(meganeura::Tensor)>& f,
                             const meganeura::Shape& shape, const std::vector<float>& x);
// The gradient of sum(f(x) * c) with respect to x (a parameter of `shape`, c shaped as f's output
// `out`), from one training step.
std::vector<float> grad_of_weighted_sum(const std::function<meganeura::Tensor(meganeura::Tensor)>& f,
                                        const meganeura::Shape& shape, const std::vector<float>& x,
                                        const meganeura::Shape& out, const std::vector<float>& c);
// A vector as the PyTorch fixture generators (tools/fixtures) make one, exact in f32: element i
// is base + ((a i) mod m - offset) / d.
std::vector<float> formula(int64_t n, int64_t a, int64_t m, int64_t offset, float d, float base = 0.0f);
// Every element of `got` within `tolerance` of `want` (same length), failures naming `what` and
// the element.
void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, const std::string& what,
                     double tolerance);
// A PadMode by its name in PyTorch's F.pad (reflect, replicate, circular; else constant).
meganeura::PadMode pad_mode_named(const std::string& name);
// The fixtures' inputs, and the weights c of their losses sum(y * c).
std::vector<float> fixture_input(int64_t n);
std::vector<float> fixture_weights(int64_t n);
// Every value of `v` times `s` (operands at magnitudes far from 1).
std::vector<float> scaled(std::vector<float> v, double s);
meganeura::HostTensor host_i32(const meganeura::Shape& s, const std::vector<int32_t>& v);
meganeura::HostTensor host_u32(const meganeura::Shape& s, const std::vector<uint32_t>& v);
// Rounds each value to f16/bf16 (nearest even) and stores the raw 16-bit words.
meganeura::HostTensor host_f16(const meganeura::Shape& s, const std::vector<float>& v);
meganeura::HostTensor host_bf16(const meganeura::Shape& s, const std::vector<float>& v);

// Element-wise check |gpu - ref| <= rtol * max(|ref|, mean(|ref|)); integer dtypes and rtol == 0
// must match exactly (NaN matches NaN). The message names the worst element (index, gpu, ref).
// `scale` floors max(|ref|, mean(|ref|)) for tensors too small for their mean to give the scale of
// their values (a single element near a zero of the function).
::testing::AssertionResult compare(const RefTensor& ref, const meganeura::HostTensor& gpu, double rtol,
                                   const std::string& what, double scale = 0);

// Raw bits of a HostTensor as decoded by the reference (independent of HostTensor::to_f32).
std::vector<double> decode(const meganeura::HostTensor& t);

// Uniform f32 values in [lo, hi) for every input and parameter of g, by name.
std::map<std::string, meganeura::HostTensor> random_leaf_feeds(const meganeura::Graph& g, Rng& rng, double lo,
                                                               double hi);
// Sets every input and parameter of g in s from `feeds`.
void feed_leaves(meganeura::Session& s, const meganeura::Graph& g,
                 const std::map<std::string, meganeura::HostTensor>& feeds);

// Feeds a and b the same random leaves of g (both graphs name their leaves as g does) and steps
// both once; returns the feeds.
std::map<std::string, meganeura::HostTensor> step_both(meganeura::Session& a, meganeura::Session& b,
                                                       const meganeura::Graph& g, Rng& rng, double lo, double hi);

// Runs this test binary again as a child process running only `test` (a DISABLED_ test), with
// this process's environment minus gtest's variables and those starting with a prefix in
// `drop`, plus `add` ("NAME=value"); stdout and stderr go to `log`. Returns the child's pid and
// exit status (-1: it could not start or did not exit normally).
struct ChildRun {
  int pid = -1;
  int status = -1;
};
ChildRun run_self_child(const std::string& test, const std::vector<std::string>& drop,
                        const std::vector<std::string>& add, const std::string& log);
// The same child, started and not waited for: its pid (-1 if it could not start).
int spawn_self_child(const std::string& test, const std::vector<std::string>& drop, const std::vector<std::string>& add,
                     const std::string& log);

}  // namespace mntest
