// Which emitter runs each archetype: the one place lowering goes from groups to kernel calls.
#include "lower/emit/emitters.hpp"
#include "meganeura/error.hpp"

namespace meganeura::lower {

namespace {

using GroupEmitter = void (*)(Emitter&, const DispatchGroup&);

struct Row {
  Archetype archetype;
  GroupEmitter emit;
};

constexpr Row kTable[] = {
    {Archetype::Elementwise, [](Emitter& e, const DispatchGroup& g) { emit_elementwise(e, g.anchor); }},
    {Archetype::Movement, [](Emitter& e, const DispatchGroup& g) { emit_movement(e, g.anchor); }},
    {Archetype::MatMul, emit_matmul},
    {Archetype::Attention,
     [](Emitter& e, const DispatchGroup& g) { emit_attention(e, g.anchor, g.extra(FusedAs::Partner)); }},
    {Archetype::Reduce, [](Emitter& e, const DispatchGroup& g) { emit_reduce(e, g.anchor, g.extra(FusedAs::Map)); }},
    {Archetype::Row, [](Emitter& e, const DispatchGroup& g) { emit_row(e, g.anchor); }},
    {Archetype::Rotary,
     [](Emitter& e, const DispatchGroup& g) { emit_rotary(e, g.anchor, g.extra(FusedAs::Partner), &g); }},
    {Archetype::Index, [](Emitter& e, const DispatchGroup& g) { emit_index(e, g.anchor); }},
    {Archetype::Backward, [](Emitter& e, const DispatchGroup& g) { emit_backward(e, g.anchor); }},
    {Archetype::NormBackward,
     [](Emitter& e, const DispatchGroup& g) { emit_norm_backward(e, g.nodes[0], g.extra(FusedAs::Add)); }},
    {Archetype::Pointwise, emit_pointwise},
    {Archetype::ProductSum, emit_product_sum},
    {Archetype::Training, emit_training},
};

}  // namespace

void emit_group(Emitter& e, const DispatchGroup& grp) {
  for (const Row& row : kTable)
    if (row.archetype == grp.archetype) return row.emit(e, grp);
  throw Error(std::string("internal: no emitter for archetype ") + archetype_name(grp.archetype));
}

}  // namespace meganeura::lower
