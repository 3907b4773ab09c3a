// A scatter_add whose base nothing else reads (a computed tensor, not kept) adds its updates into
// the base's bytes: no copy of the base (a tied embedding's gradient, 113 MB in SmolLM2). A
// memory decision, not a fusion: it changes no group, and runs with fusion off too.
#include <cstdio>

#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

void scatter_in_place(PassContext& c, Grouping& groups) {
  for (int id = 0; id < c.g.size(); ++id) {
    const Node& n = c.node(id);
    if (n.op != Op::ScatterAdd || !groups.alone(id)) continue;
    const int base = n.inputs[0];
    const TensorDesc& b = c.out.tensors[static_cast<size_t>(base)];
    if (b.role != Role::Intermediate || b.alias_of >= 0 || b.output || c.uses.kept[static_cast<size_t>(base)] ||
        c.uses.readers[static_cast<size_t>(base)].size() != 1 || !groups.alone(base) || is_view(c.g, c.node(base)) ||
        c.node(base).dtype != n.dtype)
      continue;
    c.out.tensors[static_cast<size_t>(id)].alias_of = base;
    if (c.options.log)
      std::fprintf(stderr, "meganeura: lower:   %%%d scatter_add adds into the bytes of %%%d\n", id, base);
  }
}

}  // namespace meganeura::lower
