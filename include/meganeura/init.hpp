// Parameter initialisation on the host, from a seed (reproducible), written into a session.
#pragma once
#include <cstdint>
#include <string_view>

#include "meganeura/session.hpp"

namespace meganeura::init {

// Uniform in [-bound, bound].
void uniform(Session& s, std::string_view name, float bound, uint64_t seed);
void constant(Session& s, std::string_view name, float value);
// torch.nn.Linear's default: weight [in, out] (x · W) and bias [out] uniform in
// ±1/sqrt(in) (kaiming_uniform with a = sqrt(5)). Pass an empty bias name for none.
void linear(Session& s, std::string_view weight, std::string_view bias, uint64_t seed);

}  // namespace meganeura::init
