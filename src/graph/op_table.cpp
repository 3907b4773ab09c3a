// Expands MN_OP_LIST into the table that drives shape inference, printing and lowering.
#include "graph/op_table.hpp"

namespace meganeura::graph {
namespace {

constexpr OpInfo kOps[] = {
#define MN_OP_ROW(e, name, kind, lo, hi, rule, grad, lowering) {name, OpKind::kind, lo, hi, rule},
    MN_OP_LIST(MN_OP_ROW)
#undef MN_OP_ROW
};

#define MN_OP_ONE(...) +1
constexpr int kOpCount = 0 MN_OP_LIST(MN_OP_ONE);
#undef MN_OP_ONE
static_assert(sizeof(kOps) / sizeof(kOps[0]) == kOpCount);

}  // namespace

const OpInfo& op_info(Op op) { return kOps[static_cast<int>(op)]; }

}  // namespace meganeura::graph

namespace meganeura {

std::string_view op_name(Op op) { return graph::op_info(op).name; }
OpKind op_kind(Op op) { return graph::op_info(op).kind; }
int op_count() { return graph::kOpCount; }
Op op_at(int i) { return static_cast<Op>(i); }

}  // namespace meganeura
