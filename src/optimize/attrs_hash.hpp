// Hashing of op attributes by value, so EGraph::intern can give equal Attrs one id. Every field
// of Attrs is hashed: a field left out would merge e-nodes that differ only there.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>

#include "meganeura/graph.hpp"

namespace meganeura::optimize {

inline uint64_t hash_mix(uint64_t h, uint64_t v) {
  // splitmix64 finaliser on h ^ v: cheap and avalanches well.
  uint64_t x = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct AttrsHash {
  size_t operator()(const Attrs& a) const {
    static_assert(sizeof(Attrs) == 128, "Attrs changed: hash the new field here");
    uint64_t h = a.axes.size();
    for (int64_t v : a.axes) h = hash_mix(h, static_cast<uint64_t>(v));
    h = hash_mix(h, static_cast<uint64_t>(a.axis));
    h = hash_mix(h, static_cast<uint64_t>(a.start));
    h = hash_mix(h, static_cast<uint64_t>(a.end));
    h = hash_mix(h, static_cast<uint64_t>(a.step));
    h = hash_mix(h, static_cast<uint64_t>(a.count));
    h = hash_mix(h, static_cast<uint64_t>(a.ignore_index));
    h = hash_mix(h, static_cast<uint64_t>(a.window));
    for (double v : a.values) h = hash_mix(h, std::bit_cast<uint64_t>(v == 0 ? 0.0 : v));
    // -0.0 == 0.0 under Attrs::operator==, so they must hash alike.
    double s = a.scalar == 0 ? 0.0 : a.scalar;
    h = hash_mix(h, std::bit_cast<uint64_t>(s));
    h = hash_mix(h, (uint64_t(a.keepdim) << 0) | (uint64_t(a.transpose_a) << 1) | (uint64_t(a.transpose_b) << 2) |
                        (uint64_t(a.seq_major) << 3) | (uint64_t(a.window_padding) << 4) | (uint64_t(a.dtype) << 8));
    return static_cast<size_t>(h);
  }
};

}  // namespace meganeura::optimize
