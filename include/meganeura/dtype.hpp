// Element types. Compute happens in f32; f16/bf16 are storage types; i32/u32 hold indices and masks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace meganeura {

enum class DType : uint8_t { f32, f16, bf16, i32, u32 };

inline constexpr DType f32 = DType::f32;
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType i32 = DType::i32;
inline constexpr DType u32 = DType::u32;

constexpr size_t dtype_size(DType t) { return (t == DType::f16 || t == DType::bf16) ? 2 : 4; }
constexpr bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
constexpr bool is_integer(DType t) { return t == DType::i32 || t == DType::u32; }

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::u32: return "u32";
  }
  return "?";
}

}  // namespace meganeura
