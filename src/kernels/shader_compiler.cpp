#include "kernels/shader_compiler.hpp"

#include <shaderc/shaderc.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>

#include "kernels/glsl_library.hpp"
#include "meganeura/error.hpp"

#ifndef MEGANEURA_SHADERC_VERSION
#define MEGANEURA_SHADERC_VERSION "unknown"
#endif

namespace meganeura::kernels {

namespace {

// Include files come from the embedded library, never from disk.
struct Included {
  shaderc_include_result result{};
  std::string name, error;
};

shaderc_include_result* resolve(void*, const char* requested, int, const char*, size_t) {
  auto* inc = new Included;
  std::string_view text = glsl_include(requested);
  if (text.empty()) {  // an empty source_name is how shaderc tells a failed include
    inc->error = "meganeura has no include file \"" + std::string(requested) + "\"";
    text = inc->error;
  } else {
    inc->name = requested;
  }
  inc->result.source_name = inc->name.c_str();
  inc->result.source_name_length = inc->name.size();
  inc->result.content = text.data();
  inc->result.content_length = text.size();
  inc->result.user_data = inc;
  return &inc->result;
}
void release(void*, shaderc_include_result* r) { delete static_cast<Included*>(r->user_data); }

// The first lines of a source, numbered, for error messages.
std::string head(std::string_view source, int lines) {
  std::ostringstream o;
  std::istringstream in{std::string(source)};
  std::string line;
  for (int n = 1; n <= lines && std::getline(in, line); ++n) o << "  " << n << "| " << line << "\n";
  return o.str();
}

struct Compiler {
  shaderc_compiler_t compiler = shaderc_compiler_initialize();
  shaderc_compile_options_t options = shaderc_compile_options_initialize();
  std::mutex mutex;  // one compile at a time: options carry the includer
  Compiler() {
    if (!compiler || !options) throw Error("shaderc could not be initialised");
    shaderc_compile_options_set_source_language(options, shaderc_source_language_glsl);
    shaderc_compile_options_set_target_env(options, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
    shaderc_compile_options_set_optimization_level(options, shaderc_optimization_level_zero);
    shaderc_compile_options_set_include_callbacks(options, resolve, release, nullptr);
  }
  ~Compiler() {
    shaderc_compile_options_release(options);
    shaderc_compiler_release(compiler);
  }
};

Compiler& compiler() {
  static Compiler c;
  return c;
}

}  // namespace

std::string_view compiler_fingerprint() {
  return "shaderc " MEGANEURA_SHADERC_VERSION "; glsl compute; vulkan1.1; optimization zero";
}

std::vector<uint32_t> compile_compute_shader(std::string_view source, std::string_view name) {
  Compiler& c = compiler();
  std::lock_guard lock(c.mutex);
  const std::string file(name);
  std::unique_ptr<shaderc_compilation_result, void (*)(shaderc_compilation_result_t)> result(
      shaderc_compile_into_spv(c.compiler, source.data(), source.size(), shaderc_compute_shader, file.c_str(), "main",
                               c.options),
      shaderc_result_release);
  if (!result) throw Error("internal: shaderc returned no result for the generated kernel " + file);
  if (shaderc_result_get_compilation_status(result.get()) != shaderc_compilation_status_success)
    throw Error("internal: the generated kernel " + file +
                " does not compile (a bug in meganeura's kernel generator; please report it). shaderc says:\n" +
                shaderc_result_get_error_message(result.get()) + "The source begins:\n" + head(source, 40));
  const size_t bytes = shaderc_result_get_length(result.get());
  if (bytes == 0 || bytes % 4)
    throw Error("internal: shaderc gave " + std::to_string(bytes) + " bytes of SPIR-V for " + file);
  std::vector<uint32_t> words(bytes / 4);
  std::memcpy(words.data(), shaderc_result_get_bytes(result.get()), bytes);
  return words;
}

}  // namespace meganeura::kernels
