// kernels::params_as_storage: a kernel's params block as a storage buffer, for devices that cannot
// read std430 uniform blocks. SPIR-V 1.3 (the kernels' target, Vulkan 1.1) spells a storage
// buffer as a Uniform-class variable whose struct is decorated BufferBlock instead of Block, so
// one decoration changes and the block's offsets stay as they are.
#include <string>
#include <unordered_set>
#include <vector>

#include "kernels/spirv.hpp"
#include "meganeura/error.hpp"

namespace meganeura::kernels {

namespace {
constexpr uint32_t kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71;
constexpr uint32_t kDecorationBlock = 2, kDecorationBufferBlock = 3, kDecorationBinding = 33,
                   kDecorationDescriptorSet = 34;
constexpr uint32_t kStorageUniform = 2;
constexpr size_t kHeaderWords = 5;
}  // namespace

std::vector<uint32_t> params_as_storage(std::span<const uint32_t> code, std::string_view what) {
  std::vector<uint32_t> out(code.begin(), code.end());
  auto fail = [&](const std::string& why) {
    return Error("the " + std::string(what) + " kernel's SPIR-V: " + why + " (kernels/spirv_params.cpp)");
  };
  // Each instruction: (word count << 16 | opcode), then its operands.
  auto each = [&](auto&& fn) {
    for (size_t at = kHeaderWords; at < out.size();) {
      const uint32_t words = out[at] >> 16, op = out[at] & 0xffff;
      if (words == 0 || at + words > out.size()) throw fail("an instruction runs past the end");
      fn(at, op, words);
      at += words;
    }
  };
  if (out.size() < kHeaderWords || out[0] != 0x07230203) throw fail("not a SPIR-V module");
  // Variables decorated set 0 and binding 0 (both decorations name the variable).
  std::unordered_set<uint32_t> set0, binding0;
  each([&](size_t at, uint32_t op, uint32_t words) {
    if (op != kOpDecorate || words < 4) return;
    if (out[at + 2] == kDecorationDescriptorSet && out[at + 3] == 0) set0.insert(out[at + 1]);
    if (out[at + 2] == kDecorationBinding && out[at + 3] == 0) binding0.insert(out[at + 1]);
  });
  uint32_t pointer = 0, block = 0;
  each([&](size_t at, uint32_t op, uint32_t words) {
    if (op == kOpVariable && words >= 4 && set0.count(out[at + 2]) && binding0.count(out[at + 2]) &&
        out[at + 3] == kStorageUniform)
      pointer = out[at + 1];
  });
  if (!pointer) throw fail("no uniform block at set 0, binding 0");
  each([&](size_t at, uint32_t op, uint32_t words) {
    if (op == kOpTypePointer && words == 4 && out[at + 1] == pointer) block = out[at + 3];
  });
  bool rewritten = false;
  each([&](size_t at, uint32_t op, uint32_t words) {
    if (op == kOpDecorate && words == 3 && out[at + 1] == block && out[at + 2] == kDecorationBlock) {
      out[at + 2] = kDecorationBufferBlock;
      rewritten = true;
    }
  });
  if (!rewritten) throw fail("the set 0, binding 0 block has no Block decoration");
  return out;
}

}  // namespace meganeura::kernels
