// The forward-op test table: each case builds a small graph with random inputs; the harness
// runs it on the device and compares every output with the CPU reference.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "meganeura/meganeura.hpp"
#include "test_util.hpp"

namespace mntest {

// What a case builds: the graph, the values fed to its inputs and parameters, and its tolerance.
class CaseBuilder {
 public:
  explicit CaseBuilder(Rng& rng) : rng(rng) {}

  meganeura::Graph g;
  Rng& rng;
  double rtol = 1e-5;  // exact f32 paths (DESIGN.md: Precision)
  double scale = 0;    // floor of the comparison's scale (see compare())
  std::map<std::string, meganeura::HostTensor> feeds;

  // f32 input with values uniform in [lo, hi).
  meganeura::Tensor input(const std::string& name, const meganeura::Shape& s, double lo = -1, double hi = 1);
  // f32 input with |x| in [lo, hi] and a random sign.
  meganeura::Tensor input_away(const std::string& name, const meganeura::Shape& s, double lo, double hi);
  // f32 input holding small integers (ties for comparisons, max, argmax).
  meganeura::Tensor input_small_ints(const std::string& name, const meganeura::Shape& s, int lo, int hi);
  // Integer input (i32 or u32) with values in [lo, hi].
  meganeura::Tensor input_ints(const std::string& name, const meganeura::Shape& s, int64_t lo, int64_t hi,
                               meganeura::DType t = meganeura::i32);
  // Input or parameter with the given host data (its dtype is the node's dtype).
  meganeura::Tensor input_host(const std::string& name, const meganeura::HostTensor& h);
  meganeura::Tensor param_host(const std::string& name, const meganeura::HostTensor& h);
  meganeura::Tensor param(const std::string& name, const meganeura::Shape& s, double lo = -1, double hi = 1);

  void output(const std::string& name, meganeura::Tensor t) { g.output(name, t); }
};

// One row of the table: the op under test (the key), a name, and the graph builder.
struct OpCase {
  meganeura::Op op;
  std::string name;
  std::function<void(CaseBuilder&)> build;
};

std::vector<OpCase>& op_cases();

// Registers cases from a static initializer: `static Register r{{...}};`.
struct Register {
  explicit Register(std::vector<OpCase> cases);
};

// Feeds every input and parameter of `b.feeds` to a session (by the node kind in the graph).
void feed(meganeura::Session& s, const CaseBuilder& b);
// Reads every output of the graph and compares it with the reference (ADD_FAILUREs on mismatch).
void check_outputs(const meganeura::Session& s, const CaseBuilder& b);
// Builds an inference session, feeds, steps once and checks every output.
void run_case(CaseBuilder& b);

}  // namespace mntest
