#include <cstring>
#include <string>
#include <type_traits>

#include "meganeura/error.hpp"
#include "meganeura/session.hpp"
#include "util/half.hpp"

namespace meganeura {

template <class T>
static HostTensor make(Shape shape, std::span<const T> values, DType dtype) {
  if (static_cast<int64_t>(values.size()) != numel(shape))
    throw SizeError("HostTensor of shape " + shape_str(shape) + " needs " + std::to_string(numel(shape)) +
                    " values, got " + std::to_string(values.size()));
  HostTensor t{std::move(shape), dtype, std::vector<std::byte>(values.size_bytes())};
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size_bytes());
  return t;
}

HostTensor HostTensor::f32s(Shape shape, std::span<const float> v) { return make(std::move(shape), v, f32); }
HostTensor HostTensor::i32s(Shape shape, std::span<const int32_t> v) { return make(std::move(shape), v, i32); }
HostTensor HostTensor::u32s(Shape shape, std::span<const uint32_t> v) { return make(std::move(shape), v, u32); }

template <class T>
static bool matches(DType t) {
  if constexpr (std::is_same_v<T, float>)
    return t == f32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return t == i32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return t == u32;
  else
    return t == f16 || t == bf16;
}

// The C++ type data<T>() was asked for, as the caller wrote it.
template <class T>
static const char* type_name() {
  if constexpr (std::is_same_v<T, float>)
    return "float";
  else if constexpr (std::is_same_v<T, int32_t>)
    return "int32_t";
  else if constexpr (std::is_same_v<T, uint32_t>)
    return "uint32_t";
  else
    return "uint16_t";
}

// The T of data<T>() that reads each dtype.
static const char* type_for(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::i32: return "int32_t";
    case DType::u32: return "uint32_t";
    case DType::f16:
    case DType::bf16: return "uint16_t";
  }
  return "?";
}

template <class T>
std::span<const T> HostTensor::data() const {
  if (!matches<T>(dtype))
    throw DTypeError("HostTensor::data<" + std::string(type_name<T>()) + ">() asked for " + type_name<T>() +
                     " values, but the tensor (shape " + shape_str(shape) + ") holds " +
                     std::string(dtype_name(dtype)) + " data: read it with data<" + type_for(dtype) +
                     ">(), or to_f32() for floats of any dtype");
  return {reinterpret_cast<const T*>(bytes.data()), bytes.size() / sizeof(T)};
}
template std::span<const float> HostTensor::data<float>() const;
template std::span<const int32_t> HostTensor::data<int32_t>() const;
template std::span<const uint32_t> HostTensor::data<uint32_t>() const;
template std::span<const uint16_t> HostTensor::data<uint16_t>() const;

std::vector<float> HostTensor::to_f32() const {
  std::vector<float> out;
  out.reserve(static_cast<size_t>(numel()));
  switch (dtype) {
    case DType::f32:
      for (float v : data<float>()) out.push_back(v);
      break;
    case DType::i32:
      for (int32_t v : data<int32_t>()) out.push_back(static_cast<float>(v));
      break;
    case DType::u32:
      for (uint32_t v : data<uint32_t>()) out.push_back(static_cast<float>(v));
      break;
    case DType::f16:
      for (uint16_t v : data<uint16_t>()) out.push_back(half::f16_to_f32(v));
      break;
    case DType::bf16:
      for (uint16_t v : data<uint16_t>()) out.push_back(half::bf16_to_f32(v));
      break;
  }
  return out;
}

}  // namespace meganeura
