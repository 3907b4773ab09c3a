// The SPIR-V of generated kernels on disk (src/kernels/disk_cache.cpp, generated_kernel.cpp): a
// kernel is compiled once and read back after, also by another process; a corrupt file is
// recompiled and rewritten; an unwritable directory costs a warning, never a failure. And the
// driver's pipeline cache file, used only for the device that wrote it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <vulkan/vulkan.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "file_fixtures.hpp"
#include "kernels/disk_cache.hpp"
#include "kernels/generated_kernel.hpp"
#include "kernels/glsl_library.hpp"
#include "kernels/pointwise_source.hpp"
#include "kernels/shader_compiler.hpp"
#include "meganeura/meganeura.hpp"
#include "op_case.hpp"
#include "vulkan/context.hpp"
#include "vulkan/pipeline_cache_file.hpp"

extern char** environ;

namespace mntest {
namespace {

using namespace meganeura;
namespace fs = std::filesystem;

// A small fused kernel: exp(x) * y + pow(x, e). A fresh exponent gives a source no earlier
// test (or process) has compiled.
kernels::GeneratedKernel kernel_with_exponent(float e) {
  using V = kernels::PointwiseValue;
  kernels::PointwiseExpr x;
  x.inputs = 2;
  x.values = {V{.kind = V::Load, .input = 0},
              V{.kind = V::Load, .input = 1},
              V{.kind = V::Unary, .op = kernels::EW_EXP, .args = {0, -1, -1}, .what = "exp"},
              V{.kind = V::Binary, .op = kernels::EW_MUL, .args = {2, 1, -1}, .what = "mul"},
              V{.kind = V::Unary, .op = kernels::EW_POW, .args = {0, -1, -1}, .scalar = e, .what = "pow"},
              V{.kind = V::Binary, .op = kernels::EW_ADD, .args = {3, 4, -1}, .what = "add"}};
  return {"fused[exp,mul,pow,add]", kernels::pointwise_source(x)};
}

TEST(KernelCache, CompilesOnceThenReadsFromDisk) {
  TempDir dir;
  ScopedEnv env("MEGANEURA_CACHE_DIR", dir.path().string());
  const kernels::GeneratedKernel k = kernel_with_exponent(2.5f);
  const auto before = kernels::generated_kernel_stats();
  const std::vector<uint32_t> first = kernels::generated_spirv(k);
  EXPECT_EQ(kernels::generated_kernel_stats().compiled, before.compiled + 1);
  EXPECT_TRUE(fs::exists(dir.path() / kernels::generated_cache_file(k)));
  const std::vector<uint32_t> second = kernels::generated_spirv(k);
  EXPECT_EQ(kernels::generated_kernel_stats().compiled, before.compiled + 1) << "the second time comes from disk";
  EXPECT_EQ(kernels::generated_kernel_stats().from_disk, before.from_disk + 1);
  EXPECT_EQ(first, second);
  ASSERT_GE(first.size(), 5u);
  EXPECT_EQ(first[0], 0x07230203u) << "SPIR-V magic";
}

TEST(KernelCache, CorruptFilesAreRecompiledAndRewritten) {
  TempDir dir;
  ScopedEnv env("MEGANEURA_CACHE_DIR", dir.path().string());
  const kernels::GeneratedKernel k = kernel_with_exponent(-1.75f);
  const std::vector<uint32_t> good = kernels::generated_spirv(k);
  const std::string path = (dir.path() / kernels::generated_cache_file(k)).string();
  const std::string intact = read_bytes(path);
  std::string flipped = intact;
  flipped[flipped.size() / 2] ^= 0x10;
  for (const std::string& damaged : {intact.substr(0, intact.size() / 2), std::string(), flipped, intact + "x",
                                     std::string("MNCACHE1") + std::string(40, '\xff')}) {
    write_bytes(path, damaged);
    const auto before = kernels::generated_kernel_stats();
    const auto disk_before = kernels::disk_cache_stats();
    EXPECT_EQ(kernels::generated_spirv(k), good);
    EXPECT_EQ(kernels::generated_kernel_stats().compiled, before.compiled + 1) << "a damaged file is not used";
    EXPECT_EQ(kernels::disk_cache_stats().rejected, disk_before.rejected + 1);
    EXPECT_EQ(read_bytes(path), intact) << "and it is rewritten";
  }
}

TEST(KernelCache, UnwritableDirectoryKeepsKernelsInMemory) {
  TempDir dir;
  write_bytes(dir / "file", "not a directory");
  ScopedEnv env("MEGANEURA_CACHE_DIR", dir / "file/kernels");
  const auto before = kernels::disk_cache_stats();
  const kernels::GeneratedKernel k = kernel_with_exponent(3.25f);
  EXPECT_FALSE(kernels::generated_spirv(k).empty());
  EXPECT_GT(kernels::disk_cache_stats().write_failures, before.write_failures);

  // A session still builds and runs (its kernel compiled in memory).
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  Tensor x = b.input("x", {7, 9});
  b.output("out", cos(x) * 1.25f - sqrt(abs(x)));
  Session s = build_inference_session(b.g);
  feed(s, b);
  s.step();
  check_outputs(s, b);
}

TEST(KernelCache, CacheDirectoryFollowsTheEnvironment) {
  ScopedEnv cache("MEGANEURA_CACHE_DIR", "");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(kernels::cache_dir(), fs::path("/xdg/meganeura/kernels"));
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "");
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(kernels::cache_dir(), fs::path("/home/someone/.cache/meganeura/kernels"));
  }
  ScopedEnv set("MEGANEURA_CACHE_DIR", "/somewhere/else");
  EXPECT_EQ(kernels::cache_dir(), fs::path("/somewhere/else"));
}

TEST(KernelCache, CompileErrorShowsTheSource) {
  const std::string msg = error_of([] {
    kernels::compile_compute_shader("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { no_such_function(); }\n",
                                    "fused[broken]");
  });
  EXPECT_NE(msg.find("fused[broken] does not compile"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no_such_function"), std::string::npos) << msg;
  EXPECT_NE(msg.find("  3| void main()"), std::string::npos) << msg;
}

TEST(KernelCache, IncludeFilesAreEmbeddedVerbatim) {
  for (const char* name : {"common.glsl", "math.glsl", "elementwise_ops.glsl"})
    EXPECT_EQ(kernels::glsl_include(name), read_bytes(std::string(MEGANEURA_SOURCE_DIR "/src/kernels/") + name))
        << name;
  EXPECT_TRUE(kernels::glsl_include("nonexistent.glsl").empty());
}

// ---- another process reads what this one compiled ---------------------------------------------

constexpr const char* kChildEnv = "MEGANEURA_FUSE_TEST_EXPECT";  // "compile" or "disk"

// Runs only in the children that SecondProcessReadsTheCachedKernel starts: builds one session
// with a fused chain (no other test runs there, so the kernel is not in memory yet).
TEST(KernelCache, DISABLED_CachedKernelChild) {
  const char* expect = std::getenv(kChildEnv);
  if (!expect) GTEST_SKIP() << "run by SecondProcessReadsTheCachedKernel";
  Rng rng(12345);
  CaseBuilder b(rng);
  Tensor x = b.input("x", {33, 7}), y = b.input("y", {7});
  b.output("out", tanh(x) * y - exp(-x * x));
  Session s = build_inference_session(b.g);
  const auto stats = kernels::generated_kernel_stats();
  if (std::string(expect) == "compile") {
    EXPECT_EQ(stats.compiled, 1u);
    EXPECT_EQ(stats.from_disk, 0u);
  } else {
    EXPECT_EQ(stats.compiled, 0u);
    EXPECT_EQ(stats.from_disk, 1u);
  }
  feed(s, b);
  s.step();
  check_outputs(s, b);
}

// Exit status of this binary run as the child test with `expect`; its output goes to `log`.
int run_child(const std::string& cache_dir, const char* expect, const std::string& log) {
  return run_self_child("KernelCache.DISABLED_CachedKernelChild", {"MEGANEURA_CACHE_DIR="},
                        {"MEGANEURA_CACHE_DIR=" + cache_dir, std::string(kChildEnv) + "=" + expect}, log)
      .status;
}

TEST(KernelCache, SecondProcessReadsTheCachedKernel) {
  TempDir dir;
  const std::string cache = dir / "cache";
  EXPECT_EQ(run_child(cache, "compile", dir / "first.log"), 0) << read_bytes(dir / "first.log");
  EXPECT_EQ(run_child(cache, "disk", dir / "second.log"), 0) << read_bytes(dir / "second.log");
}

// ---- the driver's pipeline cache --------------------------------------------------------------

std::string header(uint32_t length, uint32_t version, const VkPhysicalDeviceProperties& p) {
  std::string h(16 + VK_UUID_SIZE, '\0');
  const uint32_t words[4] = {length, version, p.vendorID, p.deviceID};
  std::memcpy(h.data(), words, sizeof words);
  std::memcpy(h.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE);
  return h + "driver data";
}

TEST(PipelineCacheFile, HeaderMustNameThisDevice) {
  VkPhysicalDeviceProperties p{};
  p.vendorID = 0x10de;
  p.deviceID = 0x2330;
  for (uint8_t i = 0; i < VK_UUID_SIZE; ++i) p.pipelineCacheUUID[i] = i;
  auto matches = [&](const std::string& s, const VkPhysicalDeviceProperties& props) {
    return vk::pipeline_cache_header_matches(std::as_bytes(std::span(s)), props);
  };
  EXPECT_TRUE(matches(header(32, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, p), p));
  EXPECT_FALSE(matches(header(32, 2, p), p)) << "unknown header version";
  EXPECT_FALSE(matches(header(16, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, p), p)) << "header too short";
  EXPECT_FALSE(matches(header(32, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, p).substr(0, 20), p)) << "data too short";
  VkPhysicalDeviceProperties other = p;
  other.deviceID = 0x2331;
  EXPECT_FALSE(matches(header(32, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, p), other)) << "another device";
  other = p;
  other.pipelineCacheUUID[5] ^= 1;
  EXPECT_FALSE(matches(header(32, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, p), other)) << "another driver build";
}

TEST(PipelineCacheFile, SavedForThisDevice) {
  TempDir dir;
  ScopedEnv env("MEGANEURA_CACHE_DIR", dir.path().string());
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  CaseBuilder b(rng);
  Tensor x = b.input("x", {5, 6});
  b.output("out", log(abs(x) + 2.0f) * rsqrt(x * x + 3.0f));  // a new kernel: new pipelines to save
  Session s = build_inference_session(b.g);
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(vk::Context::get()->physical(), &props);
  const vk::PipelineCacheFile file(props);
  std::vector<std::byte> data;
  if (kernels::DiskCache(dir.path()).read(file.name(), data) != kernels::CacheRead::Hit)
    GTEST_SKIP() << "the driver (" << props.deviceName << ") saves no pipeline cache data";
  EXPECT_TRUE(vk::pipeline_cache_header_matches(data, props));
  EXPECT_EQ(file.load(), data);
}

}  // namespace
}  // namespace mntest
