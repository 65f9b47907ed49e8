// GGUF files (llama.cpp's weights): the reader checks the whole header against the file before it
// builds any tensor. The format, the rules and what is copied are in docs/gguf.md.
#include "lazygrad/gguf.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/schedule.h"
#include "lazygrad/error.h"
#include "nn/json_reader.h"
#include "nn/mapped_file.h"
#include "nn/mapped_tensor.h"
#include "runtime/buffer.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

// The format is little-endian (a big-endian variant exists and is refused) and the plain types'
// tensors are built from its bytes as they are.
static_assert(std::endian::native == std::endian::little, "gguf: this reader assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "GGUF";
constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
constexpr std::string_view kAlignmentKey = "general.alignment";

// ------------------------------------------------------------------------------- little-endian

template <class T>
T load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// IEEE half to float, exactly (every half is a float): subnormals are mant * 2^-24.
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  const uint32_t bits = exponent == 0x1f ? sign | 0x7f800000u | (mantissa << 13)                // inf, NaN
                                         : sign | ((exponent + 112) << 23) | (mantissa << 13);  // 127 - 15
  return std::bit_cast<float>(bits);
}

float half_at(const std::byte* p) { return half_to_float(load<uint16_t>(p)); }

// ------------------------------------------------------------------------------------ the types

struct MetadataTypeInfo {
  std::string_view name;
  size_t size;  // bytes of one element; 0 for string and array (their size is in the file)
};
constexpr MetadataTypeInfo kMetadataTypes[] = {
    {"uint8", 1}, {"int8", 1},   {"uint16", 2}, {"int16", 2},  {"uint32", 4}, {"int32", 4},   {"float32", 4},
    {"bool", 1},  {"string", 0}, {"array", 0},  {"uint64", 8}, {"int64", 8},  {"float64", 8},
};

bool is_known(GGUFType t) { return static_cast<uint32_t>(t) < std::size(kMetadataTypes); }
size_t element_size(GGUFType t) { return kMetadataTypes[static_cast<uint32_t>(t)].size; }
bool is_signed_int(GGUFType t) {
  return t == GGUFType::Int8 || t == GGUFType::Int16 || t == GGUFType::Int32 || t == GGUFType::Int64;
}
bool is_unsigned_int(GGUFType t) {
  return t == GGUFType::UInt8 || t == GGUFType::UInt16 || t == GGUFType::UInt32 || t == GGUFType::UInt64;
}

// The fewest bytes one element can take in the file, to bound a count before anything is allocated:
// a string is at least its 8-byte length.
size_t min_element_bytes(GGUFType t) { return t == GGUFType::String ? 8 : element_size(t); }

// llama.cpp's names of ggml_type, by number (those it removed keep their old names).
constexpr std::string_view kGGMLTypeNames[] = {
    "F32",      "F16",      "Q4_0",    "Q4_1",  "Q4_2",       "Q4_3",       "Q5_0",       "Q5_1",
    "Q8_0",     "Q8_1",     "Q2_K",    "Q3_K",  "Q4_K",       "Q5_K",       "Q6_K",       "Q8_K",
    "IQ2_XXS",  "IQ2_XS",   "IQ3_XXS", "IQ1_S", "IQ4_NL",     "IQ3_S",      "IQ2_S",      "IQ4_XS",
    "I8",       "I16",      "I32",     "I64",   "F64",        "IQ1_M",      "BF16",       "Q4_0_4_4",
    "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",   "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
};

// The plain types: tensors of lazygrad's dtypes, the file's bytes as they are.
struct PlainType {
  GGMLType type;
  DType dtype;
};
constexpr PlainType kPlainTypes[] = {
    {GGMLType::F32, kFloat32}, {GGMLType::F16, kFloat16}, {GGMLType::BF16, kBFloat16},
    {GGMLType::F64, kFloat64}, {GGMLType::I8, kInt8},     {GGMLType::I16, kInt16},
    {GGMLType::I32, kInt32},   {GGMLType::I64, kInt64},
};

std::optional<DType> plain_dtype(GGMLType type) {
  for (const PlainType& p : kPlainTypes)
    if (p.type == type) return p.dtype;
  return std::nullopt;
}

// Block layouts (ggml-common.h): Q4_0 = half d, 16 bytes of nibbles; Q8_0 = half d, 32 int8;
// Q4_K = half d, half dmin, 12 bytes of 6-bit scales and mins, 128 bytes of nibbles.
constexpr size_t kQ4_0Bytes = 2 + 16, kQ8_0Bytes = 2 + 32, kQ4_KBytes = 2 + 2 + 12 + 128;

// ----------------------------------------------------------------------------- dequantization
// Each follows llama.cpp's dequantize_row_* (ggml-quants.c) in its order of float operations, so
// the values are the same to the bit.

void dequantize_q4_0(std::span<const std::byte> blocks, std::span<float> out) {
  for (size_t b = 0; b * 32 < out.size(); b++) {
    const std::byte* block = blocks.data() + b * kQ4_0Bytes;
    const float d = half_at(block);
    const auto* qs = reinterpret_cast<const uint8_t*>(block + 2);
    float* y = out.data() + b * 32;
    for (int j = 0; j < 16; j++) {
      y[j] = static_cast<float>((qs[j] & 0x0f) - 8) * d;     // element j: the low nibble of byte j
      y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;  // element j + 16: its high nibble
    }
  }
}

void dequantize_q8_0(std::span<const std::byte> blocks, std::span<float> out) {
  for (size_t b = 0; b * 32 < out.size(); b++) {
    const std::byte* block = blocks.data() + b * kQ8_0Bytes;
    const float d = half_at(block);
    const auto* qs = reinterpret_cast<const int8_t*>(block + 2);
    float* y = out.data() + b * 32;
    for (int j = 0; j < 32; j++) y[j] = static_cast<float>(qs[j]) * d;
  }
}

// The scale and the min of sub-block j (0..7) of a Q4_K super-block, 6 bits each, packed in 12
// bytes (llama.cpp's get_scale_min_k4): sub-blocks 0-3 have them in the low 6 bits of bytes j and
// j + 4; sub-blocks 4-7 have their low 4 bits in byte j + 4 (scale low nibble, min high nibble)
// and their high 2 bits in the top bits of bytes j - 4 (scale) and j (min).
std::pair<uint8_t, uint8_t> q4_k_scale_min(int j, const uint8_t* q) {
  if (j < 4) return {static_cast<uint8_t>(q[j] & 63), static_cast<uint8_t>(q[j + 4] & 63)};
  return {static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4))};
}

void dequantize_q4_k(std::span<const std::byte> blocks, std::span<float> out) {
  for (size_t b = 0; b * 256 < out.size(); b++) {
    const std::byte* block = blocks.data() + b * kQ4_KBytes;
    const float d = half_at(block), dmin = half_at(block + 2);
    const auto* scales = reinterpret_cast<const uint8_t*>(block + 4);
    const auto* q = reinterpret_cast<const uint8_t*>(block + 16);
    float* y = out.data() + b * 256;
    // 64 elements per 32 bytes of nibbles: sub-block 2k from the low nibbles, 2k + 1 from the high.
    for (int k = 0; k < 4; k++, q += 32, y += 64) {
      const auto [sc_low, m_low] = q4_k_scale_min(2 * k, scales);
      const auto [sc_high, m_high] = q4_k_scale_min(2 * k + 1, scales);
      const float d1 = d * static_cast<float>(sc_low), m1 = dmin * static_cast<float>(m_low);
      const float d2 = d * static_cast<float>(sc_high), m2 = dmin * static_cast<float>(m_high);
      // Two statements each: a multiply-add would round once where llama.cpp's C rounds twice.
      for (int l = 0; l < 32; l++) {
        const float scaled = d1 * static_cast<float>(q[l] & 0x0f);
        y[l] = scaled - m1;
      }
      for (int l = 0; l < 32; l++) {
        const float scaled = d2 * static_cast<float>(q[l] >> 4);
        y[32 + l] = scaled - m2;
      }
    }
  }
}

// ------------------------------------------------------------------------------------ messages

// Builds the messages of a load: the caller, the file, the key or tensor when there is one, the offset.
class Complaint {
 public:
  Complaint(std::string_view caller, const std::string& path)
      : prefix_(std::string(caller) + ": \"" + path + "\": ") {}

  [[noreturn]] void at(uint64_t offset, const std::string& what) const {
    throw Error(prefix_ + what + " (at byte " + std::to_string(offset) + " of the file)");
  }
  [[noreturn]] void tensor(const std::string& name, uint64_t offset, const std::string& what) const {
    at(offset, "tensor " + json::quote(name) + ": " + what);
  }
  [[noreturn]] void key(const std::string& key, uint64_t offset, const std::string& what) const {
    at(offset, "metadata " + json::quote(key) + ": " + what);
  }

 private:
  std::string prefix_;
};

// What a read is of, for the message when the file ends first: text, or a function that builds
// the text (a string array's elements are read by the hundred thousand; their text only on failure).
template <class What>
std::string describe(const What& what) {
  if constexpr (std::is_invocable_v<What>)
    return what();
  else
    return std::string(what);
}

// Reads the header front to back, checking that each read fits in the file.
class Cursor {
 public:
  Cursor(std::span<const std::byte> file, const Complaint& complain) : file_(file), complain_(complain) {}

  uint64_t offset() const { return at_; }
  uint64_t remaining() const { return file_.size() - at_; }

  // The next n bytes; `what` names them in the message when the file ends first.
  template <class What>
  std::span<const std::byte> take(uint64_t n, const What& what) {
    if (n > remaining())
      complain_.at(at_, "the file ends in " + describe(what) + ": " + std::to_string(n) + " bytes needed, " +
                            std::to_string(remaining()) + " left (truncated?)");
    const std::span<const std::byte> bytes = file_.subspan(static_cast<size_t>(at_), static_cast<size_t>(n));
    at_ += n;
    return bytes;
  }
  template <class What>
  uint32_t u32(const What& what) {
    return load<uint32_t>(take(4, what).data());
  }
  template <class What>
  uint64_t u64(const What& what) {
    return load<uint64_t>(take(8, what).data());
  }
  template <class What>
  std::string string(const What& what) {
    const uint64_t start = at_;
    const uint64_t length = u64([&] { return "the length of " + describe(what); });
    if (length > remaining())
      complain_.at(start, describe(what) + " has length " + std::to_string(length) + ", more than the " +
                              std::to_string(remaining()) + " bytes left in the file (truncated?)");
    const std::span<const std::byte> bytes = take(length, what);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }

 private:
  std::span<const std::byte> file_;
  const Complaint& complain_;
  uint64_t at_ = 0;
};

// ------------------------------------------------------------------------------------ the header

struct Header {
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  std::map<std::string, GGUFValue> metadata;
  std::vector<GGUFTensorInfo> tensors;
  std::vector<uint64_t> info_offsets;  // where each tensor's info starts, for messages
};

void read_version(Cursor& in, Header& h, const Complaint& complain) {
  const std::span<const std::byte> magic = in.take(4, "the magic \"GGUF\"");
  if (std::memcmp(magic.data(), kMagic.data(), 4) != 0) {
    std::string shown;
    for (const std::byte b : magic) {
      const auto c = std::to_integer<unsigned char>(b);
      constexpr char kHex[] = "0123456789abcdef";
      shown += c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
                   ? std::string(1, static_cast<char>(c))
                   : std::string{'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    }
    complain.at(0, "not a GGUF file: it starts with \"" + shown + "\", not \"GGUF\"");
  }
  h.version = in.u32("the version");
  if ((h.version & 0xffffu) == 0 && h.version != 0)
    complain.at(4, "version " + std::to_string(h.version) +
                       " reads as a byte-swapped small number: a big-endian GGUF file? lazygrad reads "
                       "little-endian files only");
  if (h.version == 1)
    complain.at(4,
                "GGUF version 1 is not supported (its lengths are 32-bit; llama.cpp dropped it too): "
                "convert the file to version 3");
  if (h.version != 2 && h.version != 3)
    complain.at(4, "unsupported GGUF version " + std::to_string(h.version) + " (lazygrad reads 2 and 3)");
}

GGUFValue read_value(Cursor& in, const std::string& key, const Complaint& complain) {
  GGUFValue v;
  v.key = key;
  const uint64_t type_at = in.offset();
  const std::string of_key = "the value of " + json::quote(key);
  v.type = static_cast<GGUFType>(in.u32([&] { return "the type of " + of_key; }));
  if (!is_known(v.type))
    complain.key(
        key, type_at,
        "unknown value type " + std::to_string(static_cast<uint32_t>(v.type)) + " (GGUF defines 0 to 12)");
  uint64_t count = 1;
  v.element_type = v.type;
  if (v.is_array()) {
    const uint64_t element_at = in.offset();
    v.element_type = static_cast<GGUFType>(in.u32([&] { return "the element type of " + of_key; }));
    if (v.element_type == GGUFType::Array)
      complain.key(key, element_at, "arrays of arrays are not supported (llama.cpp refuses them too)");
    if (!is_known(v.element_type))
      complain.key(key, element_at,
                   "unknown array element type " + std::to_string(static_cast<uint32_t>(v.element_type)) +
                       " (GGUF defines 0 to 12)");
    const uint64_t count_at = in.offset();
    count = in.u64([&] { return "the length of " + of_key; });
    // Bounded by the file before anything is allocated: a count can claim more than memory holds.
    if (count > in.remaining() / min_element_bytes(v.element_type))
      complain.key(key, count_at,
                   "an array of " + std::to_string(count) + " " + gguf_type_name(v.element_type) +
                       " values cannot fit in the " + std::to_string(in.remaining()) +
                       " bytes left in the file (truncated?)");
  }
  if (v.element_type == GGUFType::String) {
    v.strings.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; i++)
      v.strings.push_back(in.string(
          [&] { return v.is_array() ? "element " + std::to_string(i) + " of " + of_key : of_key; }));
  } else {
    const uint64_t bytes_at = in.offset();
    const std::span<const std::byte> bytes = in.take(count * element_size(v.element_type), of_key);
    if (v.element_type == GGUFType::Bool)
      for (size_t i = 0; i < bytes.size(); i++)
        if (bytes[i] != std::byte{0} && bytes[i] != std::byte{1})
          complain.key(key, bytes_at + i,
                       "a bool is " + std::to_string(std::to_integer<int>(bytes[i])) + ", not 0 or 1");
    v.bytes.assign(bytes.begin(), bytes.end());
  }
  return v;
}

void read_metadata(Cursor& in, uint64_t count, Header& h, const Complaint& complain) {
  for (uint64_t i = 0; i < count; i++) {
    const uint64_t key_at = in.offset();
    std::string key = in.string([&] { return "the key of metadata entry " + std::to_string(i); });
    if (key.empty()) complain.at(key_at, "metadata entry " + std::to_string(i) + " has an empty key");
    if (h.metadata.count(key)) complain.key(key, key_at, "the key appears twice");
    GGUFValue value = read_value(in, key, complain);
    if (key == kAlignmentKey) {
      // llama.cpp reads it as a uint32 and nothing else; so does this reader.
      if (value.type != GGUFType::UInt32)
        complain.key(key, key_at, "must be a uint32, found " + gguf_type_name(value.type));
      h.alignment = value.as_uint();
      if (h.alignment == 0 || (h.alignment & (h.alignment - 1)) != 0)
        complain.key(key, key_at, std::to_string(h.alignment) + " is not a power of two");
    }
    h.metadata.emplace(std::move(key), std::move(value));
  }
}

// A size's place in a message, both ways: the file's index (ne[i], fastest-varying first) and the
// dimension of the lazygrad (and PyTorch) shape, which is ne reversed. "ne[1] (dimension 0 of the
// shape)" for a matrix's rows.
std::string ne_dimension(uint32_t i, uint32_t n_dims) {
  return "ne[" + std::to_string(i) + "] (dimension " + std::to_string(n_dims - 1 - i) + " of the shape)";
}

GGUFTensorInfo read_tensor_info(Cursor& in, uint64_t index, const Header& h, const Complaint& complain) {
  GGUFTensorInfo t;
  t.name = in.string([&] { return "the name of tensor " + std::to_string(index); });
  const std::string of = "tensor " + json::quote(t.name);
  const uint64_t dims_at = in.offset();
  const uint32_t n_dims = in.u32([&] { return "the number of dimensions of " + of; });
  if (n_dims > kMaxDims)
    complain.tensor(t.name, dims_at,
                    std::to_string(n_dims) + " dimensions, more than ggml's " + std::to_string(kMaxDims));
  // numel checked for overflow at each step: sizes like [2^40, 2^40] must be an error, not a
  // small wrapped-around count.
  uint64_t numel = 1;
  for (uint32_t d = 0; d < n_dims; d++) {
    const uint64_t size_at = in.offset();
    const uint64_t size = in.u64([&] { return "size " + std::to_string(d) + " of " + of; });
    if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (size != 0 && numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / size))
      complain.tensor(
          t.name, size_at,
          "size " + std::to_string(size) + " of " + ne_dimension(d, n_dims) + " makes the tensor too large");
    t.ne.push_back(static_cast<int64_t>(size));
    numel *= size;
  }
  t.shape.assign(t.ne.rbegin(), t.ne.rend());
  const uint64_t type_at = in.offset();
  t.type = static_cast<GGMLType>(in.u32([&] { return "the type of " + of; }));
  const GGMLBlock block = ggml_block(t.type);
  if (block.elements == 0)
    complain.tensor(t.name, type_at,
                    "ggml type " + std::to_string(static_cast<uint32_t>(t.type)) + " (" +
                        ggml_type_name(t.type) +
                        ") is not supported (lazygrad reads F32, F16, BF16, F64, I8, I16, I32, I64, Q4_0, "
                        "Q8_0 and Q4_K)");
  const uint64_t row = t.ne.empty() ? 1 : static_cast<uint64_t>(t.ne[0]);
  if (row % block.elements != 0)
    complain.tensor(t.name, type_at,
                    "rows of " + std::to_string(row) + " elements are not whole " + ggml_type_name(t.type) +
                        " blocks of " + std::to_string(block.elements) + " (a row is " +
                        (n_dims == 0 ? std::string("a scalar's one element") : ne_dimension(0, n_dims)) +
                        ")");
  const uint64_t blocks = numel / block.elements;
  if (blocks > std::numeric_limits<uint64_t>::max() / block.bytes)
    complain.tensor(t.name, type_at, "the data would be more than 2^64 bytes");
  t.nbytes = blocks * block.bytes;
  const uint64_t offset_at = in.offset();
  t.offset = in.u64([&] { return "the data offset of " + of; });
  if (t.offset % h.alignment != 0)
    complain.tensor(t.name, offset_at,
                    "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                        std::to_string(h.alignment));
  return t;
}

// Reads and checks the header, and checks the tensors against each other and the file's size.
Header read_header(std::span<const std::byte> file, const Complaint& complain) {
  Cursor in(file, complain);
  Header h;
  read_version(in, h, complain);
  const uint64_t tensors_at = in.offset();
  const uint64_t tensor_count = in.u64("the tensor count");
  const uint64_t kv_at = in.offset();
  const uint64_t kv_count = in.u64("the metadata count");
  // Each entry takes some bytes of the file (a key's length, a type and a value; a tensor's name
  // length, dimension count, type and offset): a count beyond that is a corrupt file.
  constexpr uint64_t kMinEntryBytes = 8 + 4 + 1, kMinTensorInfoBytes = 8 + 4 + 4 + 8;
  if (kv_count > in.remaining() / kMinEntryBytes)
    complain.at(kv_at, std::to_string(kv_count) + " metadata entries cannot fit in the " +
                           std::to_string(in.remaining()) + " bytes left in the file (truncated?)");
  if (tensor_count > in.remaining() / kMinTensorInfoBytes)
    complain.at(tensors_at, std::to_string(tensor_count) + " tensor infos cannot fit in the " +
                                std::to_string(in.remaining()) + " bytes left in the file (truncated?)");
  read_metadata(in, kv_count, h, complain);

  std::set<std::string> names;
  h.tensors.reserve(static_cast<size_t>(tensor_count));
  for (uint64_t i = 0; i < tensor_count; i++) {
    const uint64_t at = in.offset();
    GGUFTensorInfo t = read_tensor_info(in, i, h, complain);
    if (!names.insert(t.name).second) complain.tensor(t.name, at, "the name appears twice");
    h.tensors.push_back(std::move(t));
    h.info_offsets.push_back(at);
  }

  // The data section starts at the next multiple of the alignment (llama.cpp's rule: a file with
  // no tensors may end right after its infos, without padding).
  h.data_offset = in.offset();
  if (tensor_count == 0) return h;
  const uint64_t padding = (h.alignment - h.data_offset % h.alignment) % h.alignment;
  if (padding > in.remaining())
    complain.at(h.data_offset, "the file ends in the padding before the data section (truncated?)");
  h.data_offset += padding;
  const uint64_t data_size = file.size() - h.data_offset;
  for (size_t i = 0; i < h.tensors.size(); i++) {
    const GGUFTensorInfo& t = h.tensors[i];
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      complain.tensor(t.name, h.info_offsets[i],
                      "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) +
                          " bytes) runs past the end of the data section (" + std::to_string(data_size) +
                          " bytes, from byte " + std::to_string(h.data_offset) + " of the file: truncated?)");
  }
  // Tensors must not share bytes: a tensor over the mapping updated in place would change another.
  std::vector<size_t> order(h.tensors.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(h.tensors[a].offset, h.tensors[a].nbytes) <
           std::pair(h.tensors[b].offset, h.tensors[b].nbytes);
  });
  const GGUFTensorInfo* previous = nullptr;
  for (const size_t i : order) {
    const GGUFTensorInfo& t = h.tensors[i];
    if (t.nbytes == 0) continue;
    if (previous && t.offset < previous->offset + previous->nbytes)
      complain.tensor(t.name, h.info_offsets[i],
                      "data at offset " + std::to_string(t.offset) + " overlaps that of tensor " +
                          json::quote(previous->name));
    previous = &t;
  }
  return h;
}

GGUFFile file_of(const std::string& path, Header&& h) {
  GGUFFile f;
  f.path = path;
  f.version = h.version;
  f.alignment = h.alignment;
  f.data_offset = h.data_offset;
  f.metadata = std::move(h.metadata);
  f.tensor_infos = std::move(h.tensors);
  return f;
}

// ------------------------------------------------------------------------------- value access

[[noreturn]] void wrong_kind(const GGUFValue& v, const std::string& wanted) {
  const std::string found =
      v.is_array() ? "array of " + gguf_type_name(v.element_type) : gguf_type_name(v.type);
  throw Error("gguf: metadata " + json::quote(v.key) + " has type " + found + ", wanted " + wanted);
}

int64_t integer_at(const GGUFValue& v, size_t i) {
  const std::byte* p = v.bytes.data() + i * element_size(v.element_type);
  switch (v.element_type) {
    case GGUFType::UInt8:
      return load<uint8_t>(p);
    case GGUFType::Int8:
      return load<int8_t>(p);
    case GGUFType::UInt16:
      return load<uint16_t>(p);
    case GGUFType::Int16:
      return load<int16_t>(p);
    case GGUFType::UInt32:
      return load<uint32_t>(p);
    case GGUFType::Int32:
      return load<int32_t>(p);
    case GGUFType::Int64:
      return load<int64_t>(p);
    case GGUFType::UInt64: {
      const auto u = load<uint64_t>(p);
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw Error("gguf: metadata " + json::quote(v.key) + " holds " + std::to_string(u) +
                    ", beyond int64 (use as_uint)");
      return static_cast<int64_t>(u);
    }
    default:
      wrong_kind(v, "an integer");
  }
}

double number_at(const GGUFValue& v, size_t i) {
  const std::byte* p = v.bytes.data() + i * element_size(v.element_type);
  switch (v.element_type) {
    case GGUFType::Float32:
      return load<float>(p);
    case GGUFType::Float64:
      return load<double>(p);
    case GGUFType::UInt64:
      return static_cast<double>(load<uint64_t>(p));
    default:
      if (is_signed_int(v.element_type) || is_unsigned_int(v.element_type))
        return static_cast<double>(integer_at(v, i));
      wrong_kind(v, "a number");
  }
}

}  // namespace

// ------------------------------------------------------------------------------- public names

std::string gguf_type_name(GGUFType type) {
  return is_known(type) ? std::string(kMetadataTypes[static_cast<uint32_t>(type)].name)
                        : "type " + std::to_string(static_cast<uint32_t>(type));
}

std::string ggml_type_name(GGMLType type) {
  const auto n = static_cast<uint32_t>(type);
  return n < std::size(kGGMLTypeNames) ? std::string(kGGMLTypeNames[n]) : "type " + std::to_string(n);
}

GGMLBlock ggml_block(GGMLType type) {
  if (const std::optional<DType> dtype = plain_dtype(type)) return {1, itemsize(*dtype)};
  switch (type) {
    case GGMLType::Q4_0:
      return {32, kQ4_0Bytes};
    case GGMLType::Q8_0:
      return {32, kQ8_0Bytes};
    case GGMLType::Q4_K:
      return {256, kQ4_KBytes};
    default:
      return {0, 0};
  }
}

void ggml_dequantize(GGMLType type, std::span<const std::byte> blocks, std::span<float> out) {
  const GGMLBlock block = ggml_block(type);
  if (block.elements <= 1)
    throw Error("ggml_dequantize: " + ggml_type_name(type) + " is not a quantized type lazygrad reads");
  if (out.size() % block.elements != 0)
    throw Error("ggml_dequantize: " + std::to_string(out.size()) + " values are not whole " +
                ggml_type_name(type) + " blocks of " + std::to_string(block.elements));
  if (blocks.size() != out.size() / block.elements * block.bytes)
    throw Error("ggml_dequantize: " + std::to_string(out.size()) + " " + ggml_type_name(type) +
                " values are " + std::to_string(out.size() / block.elements) + " blocks of " +
                std::to_string(block.bytes) + " bytes, given " + std::to_string(blocks.size()) + " bytes");
  switch (type) {
    case GGMLType::Q4_0:
      dequantize_q4_0(blocks, out);
      break;
    case GGMLType::Q8_0:
      dequantize_q8_0(blocks, out);
      break;
    case GGMLType::Q4_K:
      dequantize_q4_k(blocks, out);
      break;
    default:
      break;
  }
}

size_t GGUFValue::size() const {
  if (element_type == GGUFType::String) return strings.size();
  const size_t each = is_known(element_type) ? element_size(element_type) : 0;
  return each ? bytes.size() / each : 0;
}

namespace {

// A scalar accessor's first check: one value, not an array (a value built by hand may hold none).
void require_scalar(const GGUFValue& v, const std::string& wanted) {
  if (v.is_array()) wrong_kind(v, wanted);
  if (v.size() != 1)
    throw Error("gguf: metadata " + json::quote(v.key) + " holds " + std::to_string(v.size()) +
                " values, not one");
}

}  // namespace

int64_t GGUFValue::as_int() const {
  require_scalar(*this, "an integer");
  return integer_at(*this, 0);
}

uint64_t GGUFValue::as_uint() const {
  require_scalar(*this, "an integer");
  if (element_type == GGUFType::UInt64) return load<uint64_t>(bytes.data());
  const int64_t i = as_int();
  if (i < 0)
    throw Error("gguf: metadata " + json::quote(key) + " is " + std::to_string(i) +
                ", not a non-negative integer");
  return static_cast<uint64_t>(i);
}

double GGUFValue::as_double() const {
  require_scalar(*this, "a number");
  return number_at(*this, 0);
}

bool GGUFValue::as_bool() const {
  require_scalar(*this, "a bool");
  if (element_type != GGUFType::Bool) wrong_kind(*this, "a bool");
  return bytes[0] != std::byte{0};
}

const std::string& GGUFValue::as_string() const {
  require_scalar(*this, "a string");
  if (element_type != GGUFType::String) wrong_kind(*this, "a string");
  return strings[0];
}

std::vector<int64_t> GGUFValue::as_ints() const {
  if (!is_array() || !(is_signed_int(element_type) || is_unsigned_int(element_type)))
    wrong_kind(*this, "an array of integers");
  std::vector<int64_t> out(size());
  for (size_t i = 0; i < out.size(); i++) out[i] = integer_at(*this, i);
  return out;
}

std::vector<double> GGUFValue::as_doubles() const {
  if (!is_array() || element_type == GGUFType::Bool || element_type == GGUFType::String)
    wrong_kind(*this, "an array of numbers");
  std::vector<double> out(size());
  for (size_t i = 0; i < out.size(); i++) out[i] = number_at(*this, i);
  return out;
}

std::vector<float> GGUFValue::as_floats() const {
  const std::vector<double> doubles = as_doubles();
  return std::vector<float>(doubles.begin(), doubles.end());
}

const std::vector<std::string>& GGUFValue::as_strings() const {
  if (!is_array() || element_type != GGUFType::String) wrong_kind(*this, "an array of strings");
  return strings;
}

int64_t GGUFValue::int_at(size_t i) const {
  if (i >= size())
    throw Error("gguf: metadata " + json::quote(key) + ": element " + std::to_string(i) + " of " +
                std::to_string(size()));
  if (element_type == GGUFType::Bool) return bytes[i] != std::byte{0};
  return integer_at(*this, i);
}

double GGUFValue::double_at(size_t i) const {
  if (i >= size())
    throw Error("gguf: metadata " + json::quote(key) + ": element " + std::to_string(i) + " of " +
                std::to_string(size()));
  if (element_type == GGUFType::Bool) return bytes[i] != std::byte{0};
  return number_at(*this, i);
}

const GGUFValue* GGUFFile::find(const std::string& key) const {
  const auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const GGUFValue& GGUFFile::at(const std::string& key) const {
  if (const GGUFValue* v = find(key)) return *v;
  throw Error("gguf: \"" + path + "\": no metadata " + json::quote(key));
}

const GGUFTensorInfo* GGUFFile::tensor_info(const std::string& name) const {
  for (const GGUFTensorInfo& t : tensor_infos)
    if (t.name == name) return &t;
  return nullptr;
}

const Tensor& GGUFFile::tensor(const std::string& name) const {
  const auto it = tensors.find(name);
  if (it != tensors.end()) return it->second;
  throw Error("gguf: \"" + path + "\": no tensor " + json::quote(name) +
              (tensor_info(name) ? " loaded (the file was read with load_gguf_metadata)" : " in the file"));
}

GGUFFile load_gguf(const std::string& path) {
  const Complaint complain("load_gguf", path);
  const std::shared_ptr<const MappedFile> file = MappedFile::open(path, "load_gguf");
  const std::span<std::byte> bytes = file->bytes();
  GGUFFile f = file_of(path, read_header(bytes, complain));
  // Everything is checked: from here on only memory can run out, and then nothing is returned.
  for (const GGUFTensorInfo& t : f.tensor_infos) {
    const std::span<std::byte> data =
        bytes.subspan(static_cast<size_t>(f.data_offset + t.offset), static_cast<size_t>(t.nbytes));
    if (const std::optional<DType> dtype = plain_dtype(t.type)) {
      f.tensors.emplace(t.name, tensor_over_mapping(file, data, t.shape, *dtype));
      continue;
    }
    const int64_t numel =
        static_cast<int64_t>(t.nbytes / ggml_block(t.type).bytes * ggml_block(t.type).elements);
    auto buffer = std::make_shared<Buffer>("CPU", kFloat32, numel);
    if (numel > 0)
      ggml_dequantize(t.type, data,
                      std::span(static_cast<float*>(buffer->host_ptr()), static_cast<size_t>(numel)));
    f.tensors.emplace(t.name, make_tensor(buffer_view(buffer, t.shape)));
  }
  return f;
}

GGUFFile load_gguf_metadata(const std::string& path) {
  const std::shared_ptr<const MappedFile> file = MappedFile::open(path, "load_gguf_metadata");
  return file_of(path, read_header(file->bytes(), Complaint("load_gguf_metadata", path)));
}

}  // namespace lazygrad
