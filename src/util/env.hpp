// Environment switches (docs/environment.md): the stages read their MEGANEURA_* variables through
// these, so that a value outside a switch's choices is an Error naming the variable, the value
// and what it takes, the same way everywhere.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace meganeura::util {

// The value, or "" where the variable is unset or empty.
std::string env(const char* name);
// The value if it is one of `choices`; "" where unset or empty. Anything else throws Error
// ("NAME=value: expected a, b or c").
std::string env_choice(const char* name, std::initializer_list<std::string_view> choices);
// A switch that is on unless set to "0".
bool env_on(const char* name);
// A whole number in [0, max]; `fallback` where unset or empty. Anything else throws Error
// ("NAME=value: expected <what>").
uint64_t env_number(const char* name, uint64_t max, uint64_t fallback, std::string_view what);

}  // namespace meganeura::util
