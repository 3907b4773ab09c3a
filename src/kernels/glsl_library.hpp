// The text of the GLSL include files (src/kernels/*.glsl: common.glsl, math.glsl, ...), embedded
// at build time, so a kernel generated at session build #includes the very same math as the
// precompiled kernels.
#pragma once
#include <string_view>

namespace meganeura::kernels {

// The text of include file `name` ("common.glsl"); empty when there is none.
std::string_view glsl_include(std::string_view name);
// Every include file, name and text, one after another: what a generated kernel's SPIR-V depends
// on besides its own source (part of the on-disk cache key).
std::string_view glsl_library_fingerprint();

}  // namespace meganeura::kernels
