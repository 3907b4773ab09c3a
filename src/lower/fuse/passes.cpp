// The order of lowering's fusion passes, and the log of what each changed.
#include <algorithm>
#include <cstdio>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

const std::vector<Pass>& fusion_passes() {
  static const std::vector<Pass> passes = {
      {"matmul_siblings", "matmuls reading one A with weight parameters as B: one dispatch", matmul_siblings},
      {"elementwise_chains", "elementwise nodes whose values only the chain reads: one generated kernel",
       elementwise_chains},
      {"scatter_in_place", "a scatter_add adds into its base's bytes where nothing else reads them", scatter_in_place,
       true},
      {"rotary_pairs", "two rotaries sharing cos, sin and direction: one dispatch", rotary_pairs},
      {"attention_grad_pairs", "an attention's d k and d v: one dispatch", attention_grad_pairs},
      {"norm_after_matmul", "the norm of a single product's rows: in its split-K summing pass", norm_after_matmul},
      {"add_in_norm_backward", "an add of a norm backward's d x: in the norm backward's store", add_in_norm_backward},
      {"map_in_reduction", "sum(a * b), sum(|a|), max(|a|): the map in the reduction's loads", map_in_reduction},
      {"swiglu_in_matmul", "swiglu(gate, up) of a gate/up pair: in the tensor-core or GEMV store", swiglu_in_matmul},
      {"rotary_in_matmul", "the q/k rotary pair of a q/k/v group: in its split-K summing pass", rotary_in_matmul},
      {"rms_norm_in_gemv", "rms_norm(x, w) as a GEMV's A: normalised as it loads", rms_norm_in_gemv},
      {"cache_appends_in_rotary", "KV cache appends of a rotary's k and of v beside it: in the rotary's dispatch",
       cache_appends_in_rotary},
      {"product_sums", "dq·Wq + dk·Wk + dv·Wv and the like: one split-K dispatch", product_sums},
      {"update_packs", "optimizer updates (and accumulations) of many parameters: one dispatch a pack", update_packs,
       true},
  };
  return passes;
}

void run_passes(PassContext& c, Grouping& groups) {
  if (c.options.log)
    std::fprintf(stderr, "meganeura: lower: %zu dispatch groups before fusion\n", groups.emission_order().size());
  groups.take_changed();
  for (const Pass& pass : fusion_passes()) {
    if (!c.options.fuse && !pass.always) continue;
    const auto& skip = c.options.skip_passes;
    if (std::find(skip.begin(), skip.end(), pass.name) != skip.end()) continue;
    pass.run(c, groups);
    if (!c.options.log) continue;
    const std::vector<int> changed = groups.take_changed();
    std::fprintf(stderr, "meganeura: lower: %s (%s): %zu groups changed, %zu in all\n", pass.name, pass.claims,
                 changed.size(), groups.emission_order().size());
    for (int i : changed) std::fprintf(stderr, "meganeura: lower:   %s\n", groups.describe(c.g, i).c_str());
  }
}

}  // namespace meganeura::lower
