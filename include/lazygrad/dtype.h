// Element types and PyTorch's type promotion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <type_traits>

namespace lazygrad {

// Ordered by promotion category: bool < integers < floating point.
enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  UInt16,
  Int32,
  UInt32,
  Int64,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kInt8 = DType::Int8;
inline constexpr DType kInt16 = DType::Int16;
inline constexpr DType kUInt16 = DType::UInt16;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kUInt32 = DType::UInt32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kUInt64 = DType::UInt64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kHalf = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kDouble = DType::Float64;

inline constexpr DType kAllDTypes[] = {kBool,  kUInt8,  kInt8,    kInt16,   kUInt16,  kInt32,  kUInt32,
                                       kInt64, kUInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

size_t itemsize(DType dt);
std::string_view dtype_name(DType dt);  // PyTorch's spelling: "float32", "int64", "bool", ...
// Writes dtype_name(dt): `std::cout << t.dtype()` prints "float32".
std::ostream& operator<<(std::ostream& os, DType dt);
bool is_float(DType dt);
bool is_int(DType dt);  // integer, not bool
bool is_unsigned(DType dt);
int bit_width(DType dt);

// torch.promote_types. Throws lazygrad::Error where PyTorch has no common type (uint64 with a signed int).
DType promote_types(DType a, DType b);

// The dtype of a C++ element type, for from_vector/item/to_vector.
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (std::is_same_v<T, uint8_t>) return kUInt8;
  else if constexpr (std::is_same_v<T, int8_t>) return kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return kInt16;
  else if constexpr (std::is_same_v<T, uint16_t>) return kUInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return kInt32;
  else if constexpr (std::is_same_v<T, uint32_t>) return kUInt32;
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, long long>) return kInt64;
  else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, unsigned long long>) return kUInt64;
  else if constexpr (std::is_same_v<T, float>) return kFloat32;
  else if constexpr (std::is_same_v<T, double>) return kFloat64;
  else static_assert(sizeof(T) == 0, "lazygrad: unsupported element type");
}

}  // namespace lazygrad
