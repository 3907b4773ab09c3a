// kernels::params_as_storage: every embedded kernel's params block (set 0, binding 0) becomes a
// storage block by one decoration, Block -> BufferBlock, on that block's type and nothing else;
// a module without such a block is an error naming it. (op_forward_test_storage_params runs the
// rewritten kernels.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/generated_kernel.hpp"
#include "kernels/pointwise_source.hpp"
#include "kernels/spirv.hpp"
#include "meganeura/error.hpp"

namespace mntest {
namespace {

using namespace meganeura;

// Word indices of every OpDecorate <id> Block (2) / BufferBlock (3).
std::vector<size_t> block_decorations(const std::vector<uint32_t>& code, uint32_t decoration) {
  std::vector<size_t> at;
  for (size_t i = 5; i < code.size(); i += code[i] >> 16)
    if ((code[i] & 0xffff) == 71 && (code[i] >> 16) == 3 && code[i + 2] == decoration) at.push_back(i);
  return at;
}

TEST(SpirvParams, EveryKernelsParamsBlockBecomesAStorageBlock) {
  for (size_t k = 0; k < static_cast<size_t>(kernels::Kernel::Count); ++k) {
    const auto kernel = static_cast<kernels::Kernel>(k);
    if (!kernels::kernel_built(kernel)) continue;
    const std::span<const uint32_t> code = kernels::spirv(kernel);
    const std::vector<uint32_t> before(code.begin(), code.end());
    const std::vector<uint32_t> after = kernels::params_as_storage(code, kernels::kernel_name(kernel));
    SCOPED_TRACE(std::string(kernels::kernel_name(kernel)));
    ASSERT_EQ(after.size(), before.size());
    // Exactly one word differs: a Block decoration turned BufferBlock.
    std::vector<size_t> changed;
    for (size_t i = 0; i < before.size(); ++i)
      if (before[i] != after[i]) changed.push_back(i);
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_EQ(before[changed[0]], 2u);
    EXPECT_EQ(after[changed[0]], 3u);
    EXPECT_EQ(block_decorations(after, 2).size() + 1, block_decorations(before, 2).size());
  }
}

TEST(SpirvParams, AGeneratedKernelsParamsBlockBecomesAStorageBlock) {
  using V = kernels::PointwiseValue;
  kernels::PointwiseExpr x;
  x.inputs = 1;
  x.values = {V{.kind = V::Load, .input = 0},
              V{.kind = V::Unary, .op = kernels::EW_EXP, .args = {0, -1, -1}, .what = "exp"}};
  const std::vector<uint32_t> code = kernels::generated_spirv({"fused[exp]", kernels::pointwise_source(x)});
  const std::vector<uint32_t> after = kernels::params_as_storage(code, "fused[exp]");
  EXPECT_EQ(block_decorations(after, 3).size(), block_decorations(code, 3).size() + 1);
  EXPECT_EQ(block_decorations(after, 2).size() + 1, block_decorations(code, 2).size());
}

TEST(SpirvParams, AModuleWithoutAParamsBlockIsAnErrorNamingIt) {
  // The matmul kernel with its set 0, binding 0 decorations moved to binding 40.
  const std::span<const uint32_t> code = kernels::spirv(kernels::Kernel::MatMul);
  std::vector<uint32_t> moved(code.begin(), code.end());
  for (size_t i = 5; i < moved.size(); i += moved[i] >> 16)
    if ((moved[i] & 0xffff) == 71 && (moved[i] >> 16) == 4 && moved[i + 2] == 33 && moved[i + 3] == 0)
      moved[i + 3] = 40;
  try {
    kernels::params_as_storage(moved, "moved");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the moved kernel's SPIR-V: no uniform block at set 0, binding 0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(kernels::params_as_storage(std::vector<uint32_t>{1, 2, 3}, "short"), Error);
}

}  // namespace
}  // namespace mntest
