#version 450
// RotaryAppend: Rotary (one or two parts, not transposed) and up to two KV cache appends in one
// dispatch, a decoding step's rotary of q and k with the appends of k and v that would each
// take a dispatch of their own. Append a writes the rows of its source (part 0's or part 1's y,
// or the rows at binding 8) into its cache at the position read on the device, as CacheWrite
// does; a position out of range reports to the status block (value pos, limit len - n_idx, the
// append's node) and that append writes nothing. Invocation i works on element i of part 0, of
// part 1, then of the rows at binding 8. See kernel_abi.hpp (RotaryAppend).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "rotary_common.glsl"

struct CacheAppend { uint source, outer, len, inner, n_idx, node, pad0, pad1; };
struct RotaryAppendParams { uint parts, appends, copied, pad0; RotaryPart part[2]; CacheAppend append[2]; };
PARAMS_BLOCK { RotaryAppendParams p; };
#define ROTARY_PART(k) p.part[k]
#include "rotary_index.glsl"
#include "rotary_parts.glsl"
layout(std430, set = 0, binding = 8) readonly buffer Rows { uint rows[]; };
layout(std430, set = 0, binding = 9) readonly buffer Position { int position[]; };
layout(std430, set = 0, binding = 10) writeonly buffer Cache0 { uint cache0[]; };
layout(std430, set = 0, binding = 11) writeonly buffer Cache1 { uint cache1[]; };

const uint FROM_ROWS = 2u;  // CacheAppend::source of the rows at binding 8

// Element e of append a's rows into its cache at slot pos.
void append_at(uint a, uint e, uint pos, uint word) {
  const CacheAppend c = p.append[a];
  const uint i = e % c.inner, os = e / c.inner, s = os % c.n_idx, o = os / c.n_idx;
  const uint at = (o * c.len + pos + s) * c.inner + i;
  if (a == 0u) cache0[at] = word;
  else cache1[at] = word;
}

void main() {
  const int pos = position[0];
  bool fits[2];
  for (uint a = 0u; a < 2u; ++a) {
    fits[a] = a < p.appends && pos >= 0 && pos <= int(p.append[a].len) - int(p.append[a].n_idx);
    if (a < p.appends && !fits[a] && gl_GlobalInvocationID.x == 0u)
      report(STATUS_INDEX_OUT_OF_RANGE, p.append[a].node, pos, p.append[a].len - p.append[a].n_idx);
  }
  const uint rotated = rotary_elements();
  for (uint i = gl_GlobalInvocationID.x; i < rotated + p.copied; i += gl_NumWorkGroups.x * WG) {
    uint source = FROM_ROWS, e = i - rotated, word;
    if (i < rotated)
      word = floatBitsToUint(rotate_element(i, false, source, e));
    else
      word = rows[e];
    for (uint a = 0u; a < 2u; ++a)
      if (fits[a] && p.append[a].source == source) append_at(a, e, uint(pos), word);
  }
}
