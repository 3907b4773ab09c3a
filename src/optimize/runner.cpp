// Equality saturation, bounded. Each iteration reads (searches every rule on the same e-graph),
// then writes (builds each match's right-hand side, then merges), then rebuilds once. Rules
// marked explosive (associativity, commutativity) run under egg's backoff scheduler: a rule
// whose matches exceed match_limit << times_banned is banned for ban_length << times_banned
// iterations, so it cannot starve the others. Limits on nodes, iterations and time end the run
// early; the reason is reported.
#include <chrono>

#include "optimize/egraph.hpp"

namespace meganeura::optimize {

namespace {

struct RuleState {
  int times_banned = 0;
  int banned_until = 0;  // iteration index from which the rule runs again
};

using Clock = std::chrono::steady_clock;

}  // namespace

RunReport run(EGraph& g, const std::vector<Rewrite>& rules, const Limits& limits) {
  RunReport report;
  auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  g.rebuild();
  report.nodes_before = g.node_count();
  std::vector<RuleState> state(rules.size());
  std::vector<int> unions(rules.size(), 0);
  std::vector<std::vector<Match>> matches(rules.size());

  for (int iter = 0;; ++iter) {
    if (iter >= limits.max_iterations) {
      report.stop_reason = "iteration limit";
      break;
    }
    if (g.node_count() > limits.max_nodes) {
      report.stop_reason = "node limit";
      break;
    }
    if (elapsed() > limits.max_seconds) {
      report.stop_reason = "time limit";
      break;
    }
    report.iterations = iter + 1;

    // Read phase: every rule sees the same e-graph.
    bool banned_any = false, out_of_time = false;
    for (size_t r = 0; r < rules.size(); ++r) {
      matches[r].clear();
      if (elapsed() > limits.max_seconds) {
        out_of_time = true;
        break;
      }
      const Rewrite& rule = rules[r];
      if (!rule.explosive) {
        matches[r] = search(g, rule.lhs);
      } else {
        if (iter < state[r].banned_until) {
          banned_any = true;
          continue;
        }
        size_t threshold = limits.match_limit << state[r].times_banned;
        matches[r] = search(g, rule.lhs, threshold + 1);
        if (matches[r].size() > threshold) {
          int ban = limits.ban_length << state[r].times_banned;
          ++state[r].times_banned;
          state[r].banned_until = iter + ban;
          matches[r].clear();
          banned_any = true;
          continue;
        }
      }
      if (rule.guard) std::erase_if(matches[r], [&](const Match& m) { return !rule.guard(g, m); });
    }

    // Write phase: build every right-hand side first and merge afterwards, so the e-node
    // pointers in the matches stay valid while apply() reads them.
    size_t nodes_at_start = g.node_count();
    std::vector<std::pair<ClassId, ClassId>> pairs;
    std::vector<size_t> pair_rule;
    bool node_limit = false;
    for (size_t r = 0; r < rules.size() && !out_of_time && !node_limit; ++r) {
      if (!rules[r].apply) continue;
      for (const Match& m : matches[r]) {
        if (auto c = rules[r].apply(g, m)) {
          pairs.emplace_back(m.root, *c);
          pair_rule.push_back(r);
        }
      }
      if (g.node_count() > limits.max_nodes) node_limit = true;
      if (elapsed() > limits.max_seconds) out_of_time = true;
    }
    bool changed = false;
    for (size_t i = 0; i < pairs.size(); ++i)
      if (g.merge(pairs[i].first, pairs[i].second)) {
        changed = true;
        ++unions[pair_rule[i]];
      }
    g.rebuild();
    changed |= g.node_count() != nodes_at_start;  // a rule may add nodes without a union

    if (node_limit) {
      report.stop_reason = "node limit";
      break;
    }
    if (out_of_time) {
      report.stop_reason = "time limit";
      break;
    }
    if (!changed) {
      if (!banned_any) {
        report.stop_reason = "saturated";
        break;
      }
      // Only banned rules could still change something: lift the bans now (as egg does)
      // rather than idle through iterations.
      for (auto& s : state) s.banned_until = std::min(s.banned_until, iter + 1);
    }
  }
  report.seconds = elapsed();
  report.nodes_after = g.node_count();
  report.classes_after = g.class_count();
  for (size_t r = 0; r < rules.size(); ++r) report.applied.emplace_back(rules[r].name, unions[r]);
  return report;
}

}  // namespace meganeura::optimize
