// Parameter initialisation on the host, from a seed (reproducible), written into a session.
// Parameters made by the nn layers need none of this: each records PyTorch's default with the
// parameter (Graph::parameter's Init), and the session draws it on first use unless the
// parameter was set or loaded. These functions are for plain Graph::parameter weights, and for
// drawing the defaults again from another seed.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "meganeura/session.hpp"

namespace meganeura::init {

// Uniform in [-bound, bound].
void uniform(Session& s, std::string_view name, float bound, uint64_t seed);
// Normal with mean 0 and standard deviation `std`.
void normal(Session& s, std::string_view name, float std, uint64_t seed);
void constant(Session& s, std::string_view name, float value);

// torch.nn.Linear's default: weight and bias uniform in ±1/sqrt(fan_in) (kaiming_uniform with
// a = sqrt(5)), fan_in being the weight's input axis. Which axis that is: `layout` if given, else
// the one the graph recorded (nn::Linear: [out, in]), else the bias tells (its length is `out`),
// else a square weight needs no telling; anything else is a ShapeError asking for the layout.
// A layout that contradicts the recorded one or the bias is a ShapeError too. An empty bias
// name: none.
void linear(Session& s, std::string_view weight, std::string_view bias, uint64_t seed,
            WeightLayout layout = WeightLayout::unknown);

// Draws every parameter that has a default initialiser again, from `seed`, whether or not it was
// set (PyTorch's reset_parameters for every layer). The session itself draws the unset ones
// with seed 0 on first use.
void defaults(Session& s, uint64_t seed);

// The values `init` gives a parameter named `name` of `shape` from `seed`. Each name has its own
// random stream, so a parameter's values do not depend on the other parameters or on the order
// they are drawn in. Init::Kind::none is an Error.
std::vector<float> draw(const Init& init, const Shape& shape, std::string_view name, uint64_t seed);

}  // namespace meganeura::init
