#include "kernels/generated_kernel.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "kernels/disk_cache.hpp"
#include "kernels/glsl_library.hpp"
#include "kernels/shader_compiler.hpp"
#include "util/log_topic.hpp"

namespace meganeura::kernels {

namespace {

std::atomic<uint64_t> compiled{0}, from_disk{0};

constexpr uint32_t kSpirvMagic = 0x07230203;

bool plausible_spirv(const std::vector<std::byte>& bytes) {
  uint32_t magic = 0;
  if (bytes.size() < 20 || bytes.size() % 4) return false;  // 5-word header
  std::memcpy(&magic, bytes.data(), 4);
  return magic == kSpirvMagic;
}

}  // namespace

GeneratedKernelStats generated_kernel_stats() { return {compiled.load(), from_disk.load()}; }

std::string generated_cache_file(const GeneratedKernel& k) {
  std::string material = k.source;
  material += "\n// include files:\n";
  material += glsl_library_fingerprint();
  material += "\n// compiler: ";
  material += compiler_fingerprint();
  return cache_key(material) + ".spv";
}

std::vector<uint32_t> generated_spirv(const GeneratedKernel& k) {
  const DiskCache disk(cache_dir());
  const std::string file = generated_cache_file(k);
  std::vector<std::byte> bytes;
  if (disk.read(file, bytes) == CacheRead::Hit && plausible_spirv(bytes)) {
    ++from_disk;
    std::vector<uint32_t> words(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    return words;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<uint32_t> words = compile_compute_shader(k.source, k.name);
  ++compiled;
  if (util::log_topic("kernels"))
    std::fprintf(stderr, "meganeura: compiled %s (%zu words of SPIR-V) in %.0f ms\n", k.name.c_str(), words.size(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  disk.write(file, std::as_bytes(std::span(words)));
  return words;
}

}  // namespace meganeura::kernels
