// GGUF, llama.cpp's file format for weights: a header, typed metadata (key -> value), tensor infos
// (name, shape, ggml type, offset), then the aligned tensor data. load_gguf maps the file, checks
// every byte it will read, and gives the tensors as lazygrad tensors: F32, F16, BF16 and the plain
// integer types over the mapped bytes without a copy, the quantized types Q4_0, Q8_0 and Q4_K
// dequantized to float32 with llama.cpp's definitions. docs/gguf.md has the details.
//
// Shapes: GGUF lists a tensor's sizes fastest-varying first (ggml's ne[0] is the row length), so
// the lazygrad shape is ne reversed: ne = [4096, 11008] is shape {11008, 4096}, the PyTorch shape
// of the same weight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lazygrad/state_dict.h"

namespace lazygrad {

// The type of a metadata value (gguf_type in llama.cpp; the numbers are the file's).
enum class GGUFType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};
// "uint32", "string", ...; "type 13" for a number the format does not define.
std::string gguf_type_name(GGUFType type);

// The type of a tensor's data (ggml_type in llama.cpp; the numbers are the file's). Named here:
// the ones lazygrad reads. Any other number is a valid GGMLType value that load_gguf refuses.
enum class GGMLType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q8_0 = 8,
  Q4_K = 12,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};
// llama.cpp's name ("Q4_K", "Q6_K", "IQ2_XXS", ...), or "type N" for a number it never used.
std::string ggml_type_name(GGMLType type);

// One metadata value. A scalar holds one element, an array any number of elements of one type
// (arrays of arrays are refused, as llama.cpp refuses them). Numbers and bools are kept as the
// file's little-endian bytes and read by the accessors, which throw lazygrad::Error naming the key
// when the value is not of the asked kind.
struct GGUFValue {
  std::string key;
  GGUFType type = GGUFType::UInt8;          // Array for an array
  GGUFType element_type = GGUFType::UInt8;  // the scalar's type (== type), or the array's elements' type
  std::vector<std::byte> bytes;             // numbers and bools: the elements' bytes, in order
  std::vector<std::string> strings;         // strings: the one string, or the array's elements

  bool is_array() const { return type == GGUFType::Array; }
  size_t size() const;  // elements: 1 for a scalar

  // Scalars. as_int: any integer type (a uint64 above INT64_MAX throws); as_uint: any integer type
  // with a non-negative value; as_double: any number (an int64 beyond 2^53 may round).
  int64_t as_int() const;
  uint64_t as_uint() const;
  double as_double() const;
  bool as_bool() const;
  const std::string& as_string() const;

  // Arrays. as_ints: of an integer type (uint64 above INT64_MAX throws); as_floats / as_doubles:
  // of any number type (float32 is exact in both; float64 rounds to float in as_floats).
  std::vector<int64_t> as_ints() const;
  std::vector<float> as_floats() const;
  std::vector<double> as_doubles() const;
  const std::vector<std::string>& as_strings() const;

  // The element at `i` of a numeric or bool array (or i == 0 of a scalar), widened.
  int64_t int_at(size_t i) const;
  double double_at(size_t i) const;
};

// A tensor as the file describes it.
struct GGUFTensorInfo {
  std::string name;
  GGMLType type = GGMLType::F32;
  std::vector<int64_t> ne;  // the file's sizes, fastest-varying first
  Shape shape;              // lazygrad's: ne reversed
  uint64_t offset = 0;      // from the start of the data section (a multiple of the alignment)
  uint64_t nbytes = 0;      // of the data in the file
};

struct GGUFFile {
  std::string path;
  uint32_t version = 3;
  uint64_t alignment = 32;   // general.alignment, or the default 32
  uint64_t data_offset = 0;  // the file offset of the data section
  std::map<std::string, GGUFValue> metadata;
  std::vector<GGUFTensorInfo> tensor_infos;  // in the file's order
  // The tensors by name: F32, F16, BF16, F64, I8, I16, I32, I64 with their own dtype (over the
  // mapping, which they keep alive, when aligned to their element size; copied otherwise), Q4_0,
  // Q8_0 and Q4_K dequantized to float32. Empty from load_gguf_metadata.
  StateDict tensors;

  // The value of `key`; throws lazygrad::Error naming the file and the key when there is none.
  const GGUFValue& at(const std::string& key) const;
  // The value of `key`, or null.
  const GGUFValue* find(const std::string& key) const;
  // The tensor `name`; throws lazygrad::Error naming the file and the tensor when there is none.
  const Tensor& tensor(const std::string& name) const;
  // The info of tensor `name`, or null.
  const GGUFTensorInfo* tensor_info(const std::string& name) const;
};

// Reads a GGUF file of version 2 or 3 (little-endian). The whole header is checked first (magic,
// version, every length and count against the file's size, value types, duplicate keys and tensor
// names, general.alignment, tensor dimensions, types, sizes, alignment and bounds, overlaps): a
// bad file throws lazygrad::Error naming the file, the byte offset and the key or tensor, and
// nothing is loaded.
GGUFFile load_gguf(const std::string& path);

// The same checks, but no tensor is built: metadata and tensor_infos only.
GGUFFile load_gguf_metadata(const std::string& path);

// The numbers a ggml type stores in one block (32 for Q4_0 and Q8_0, 256 for Q4_K, 1 for the
// plain types) and the bytes of that block; 0 and 0 for a type lazygrad does not read.
struct GGMLBlock {
  size_t elements;
  size_t bytes;
};
GGMLBlock ggml_block(GGMLType type);

// Dequantizes whole blocks of a quantized type (Q4_0, Q8_0, Q4_K) to float32 as llama.cpp's
// dequantize_row_* do: `blocks` holds out.size() / elements blocks. Throws lazygrad::Error for a
// type that is not quantized or sizes that do not match.
void ggml_dequantize(GGMLType type, std::span<const std::byte> blocks, std::span<float> out);

}  // namespace lazygrad
