// safetensors checkpoints: the reader checks the whole file before building any tensor, the writer
// lays tensors out as the reference implementation (huggingface/safetensors) does and replaces the
// target file atomically. The format and the rules are in docs/safetensors.md.
#include "lazygrad/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/schedule.h"
#include "ir/uop.h"
#include "lazygrad/error.h"
#include "nn/atomic_file.h"
#include "nn/json_reader.h"
#include "nn/mapped_file.h"
#include "nn/mapped_tensor.h"
#include "runtime/buffer.h"
#include "tensor/tensor_impl.h"

namespace lazygrad {

// The format is little-endian and tensors are built from its bytes as they are.
static_assert(std::endian::native == std::endian::little,
              "safetensors: this reader assumes a little-endian host");

namespace {

constexpr size_t kLengthBytes = 8;                 // the header length that starts the file
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
constexpr std::string_view kMetadataKey = "__metadata__";

// The format's dtype names. `rank` is the dtype's place in the reference implementation's Dtype
// enum, which its writer sorts by (descending, then by name); F8_E5M2 and F8_E4M3 (ranks 3 and 4)
// have no lazygrad dtype.
struct DTypeCode {
  std::string_view code;
  DType dtype;
  int rank;
};
constexpr DTypeCode kDTypeCodes[] = {
    {"BOOL", kBool, 0},   {"U8", kUInt8, 1},     {"I8", kInt8, 2},       {"I16", kInt16, 5},
    {"U16", kUInt16, 6},  {"F16", kFloat16, 7},  {"BF16", kBFloat16, 8}, {"I32", kInt32, 9},
    {"U32", kUInt32, 10}, {"F32", kFloat32, 11}, {"F64", kFloat64, 12},  {"I64", kInt64, 13},
    {"U64", kUInt64, 14},
};

const DTypeCode& code_of(DType dtype) {
  for (const DTypeCode& c : kDTypeCodes)
    if (c.dtype == dtype) return c;
  throw Error("save_safetensors: dtype " + std::string(dtype_name(dtype)) + " has no safetensors name");
}

std::string known_codes() {
  std::string out;
  for (const DTypeCode& c : kDTypeCodes) out += (out.empty() ? "" : ", ") + std::string(c.code);
  return out;
}

// One tensor's entry in the header, checked against itself (not yet against the others).
struct Entry {
  std::string name;
  DType dtype = kFloat32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range in the data region
  size_t at = 0;                // where the entry starts in the file, for messages
};

struct Header {
  std::vector<Entry> entries;  // in data order
  SafetensorsMetadata metadata;
  size_t data_start = 0;  // file offset of the data region
};

// Builds the messages of a load: the caller, the file, the tensor when there is one, the offset.
class Complaint {
 public:
  Complaint(std::string_view caller, const std::string& path)
      : prefix_(std::string(caller) + ": \"" + path + "\": ") {}

  [[noreturn]] void at(size_t offset, const std::string& what) const {
    throw Error(prefix_ + what + " (at byte " + std::to_string(offset) + " of the file)");
  }
  [[noreturn]] void tensor(const std::string& name, size_t offset, const std::string& what) const {
    at(offset, "tensor " + json::quote(name) + ": " + what);
  }

 private:
  std::string prefix_;
};

// The number a JSON value holds, if it is a non-negative integer that fits in uint64.
std::optional<uint64_t> as_count(const json::Value& v) {
  if (v.kind != json::Kind::Number || v.text.empty()) return std::nullopt;
  uint64_t n = 0;
  for (const char c : v.text) {
    if (c < '0' || c > '9') return std::nullopt;  // a sign, a fraction or an exponent
    const auto digit = static_cast<uint64_t>(c - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - digit) / 10) return std::nullopt;
    n = n * 10 + digit;
  }
  return n;
}

// The reference writer's offsets are plain integers; 1.0 or 1e3 would be another writer's bug.
uint64_t count_at(const json::Value& v, size_t base, const Complaint& complain, const std::string& name,
                  const char* what) {
  const std::optional<uint64_t> n = as_count(v);
  if (!n)
    complain.tensor(name, base + v.offset,
                    std::string(what) + " must be a non-negative integer below 2^64, found " +
                        (v.kind == json::Kind::Number ? v.text : std::string(json::kind_name(v.kind))));
  return *n;
}

Entry parse_entry(const json::Member& m, size_t base, const Complaint& complain) {
  Entry e;
  e.name = m.key;
  e.at = base + m.key_offset;
  const json::Value& v = m.value;
  if (v.kind != json::Kind::Object)
    complain.tensor(e.name, base + v.offset,
                    "expected an object, found " + std::string(json::kind_name(v.kind)));
  // Every field is required and no other is allowed: a field this reader does not know (strides,
  // a byte order) could change what the bytes mean, so ignoring it could load wrong values.
  for (const json::Member& field : v.members)
    if (field.key != "dtype" && field.key != "shape" && field.key != "data_offsets")
      complain.tensor(
          e.name, base + field.key_offset,
          "unknown field " + json::quote(field.key) + " (expected dtype, shape and data_offsets)");
  auto field = [&](const char* key, json::Kind kind) -> const json::Value& {
    const json::Value* f = v.find(key);
    if (!f) complain.tensor(e.name, base + v.offset, std::string("missing field \"") + key + "\"");
    if (f->kind != kind)
      complain.tensor(e.name, base + f->offset,
                      std::string("\"") + key + "\" must be " + std::string(json::kind_name(kind)) +
                          ", found " + std::string(json::kind_name(f->kind)));
    return *f;
  };

  const json::Value& dtype = field("dtype", json::Kind::String);
  const auto code = std::find_if(std::begin(kDTypeCodes), std::end(kDTypeCodes),
                                 [&](const DTypeCode& c) { return c.code == dtype.text; });
  if (code == std::end(kDTypeCodes))
    complain.tensor(e.name, base + dtype.offset,
                    "unknown dtype " + json::quote(dtype.text) + " (lazygrad reads " + known_codes() + ")");
  e.dtype = code->dtype;

  // numel * itemsize, checked for overflow at each step: a shape like [2^40, 2^40] must be an error,
  // not a small wrapped-around size that happens to match the offsets.
  const json::Value& shape = field("shape", json::Kind::Array);
  uint64_t bytes = itemsize(e.dtype);
  for (const json::Value& d : shape.items) {
    const uint64_t size = count_at(d, base, complain, e.name, "a size in \"shape\"");
    if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (size != 0 && bytes > std::numeric_limits<uint64_t>::max() / size))
      complain.tensor(e.name, base + d.offset, "shape " + shape_str(e.shape) + "... is too large");
    e.shape.push_back(static_cast<int64_t>(size));
    bytes *= size;
  }

  const json::Value& offsets = field("data_offsets", json::Kind::Array);
  if (offsets.items.size() != 2)
    complain.tensor(
        e.name, base + offsets.offset,
        "\"data_offsets\" must be [begin, end], found " + std::to_string(offsets.items.size()) + " values");
  e.begin = count_at(offsets.items[0], base, complain, e.name, "\"data_offsets\" begin");
  e.end = count_at(offsets.items[1], base, complain, e.name, "\"data_offsets\" end");
  const std::string range = "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
  if (e.end < e.begin) complain.tensor(e.name, base + offsets.offset, range + " end before they begin");
  if (e.end - e.begin != bytes)
    complain.tensor(e.name, base + offsets.offset,
                    range + " hold " + std::to_string(e.end - e.begin) + " bytes, but shape " +
                        shape_str(e.shape) + " of " + std::string(code->code) + " needs " +
                        std::to_string(bytes));
  return e;
}

SafetensorsMetadata parse_metadata(const json::Value& v, size_t base, const Complaint& complain) {
  if (v.kind != json::Kind::Object)
    complain.at(base + v.offset,
                "\"__metadata__\" must be an object, found " + std::string(json::kind_name(v.kind)));
  SafetensorsMetadata metadata;
  for (const json::Member& m : v.members) {
    if (m.value.kind != json::Kind::String)
      complain.at(base + m.value.offset, "\"__metadata__\" value of " + json::quote(m.key) +
                                             " must be a string, found " +
                                             std::string(json::kind_name(m.value.kind)));
    metadata.emplace(m.key, m.value.text);
  }
  return metadata;
}

// Reads and checks the header, and checks the entries against each other and the file's size.
Header read_header(std::span<const std::byte> file, const Complaint& complain) {
  if (file.size() < kLengthBytes)
    complain.at(
        0, "the file is " + std::to_string(file.size()) + " bytes, too short for the 8-byte header length");
  uint64_t length = 0;
  std::memcpy(&length, file.data(), kLengthBytes);  // little-endian, as the host (static_assert above)
  if (length > kMaxHeaderBytes)
    complain.at(0, "header length " + std::to_string(length) + " exceeds the format's limit of " +
                       std::to_string(kMaxHeaderBytes) + " bytes (not a safetensors file?)");
  if (length > file.size() - kLengthBytes)
    complain.at(0, "header length " + std::to_string(length) + " runs past the end of the file (" +
                       std::to_string(file.size()) + " bytes: truncated?)");

  Header header;
  header.data_start = kLengthBytes + static_cast<size_t>(length);
  const std::string_view text(reinterpret_cast<const char*>(file.data()) + kLengthBytes,
                              static_cast<size_t>(length));
  json::Value root;
  try {
    // Four levels are all the format has (header, entry, shape, size); a little more for messages.
    root = json::parse(text, 8);
  } catch (const json::SyntaxError& e) {
    complain.at(kLengthBytes + e.offset(), "the header is not valid JSON: " + e.reason());
  }
  if (root.kind != json::Kind::Object)
    complain.at(kLengthBytes + root.offset,
                "the header must be a JSON object, found " + std::string(json::kind_name(root.kind)));
  for (const json::Member& m : root.members) {
    if (m.key == kMetadataKey)
      header.metadata = parse_metadata(m.value, kLengthBytes, complain);
    else
      header.entries.push_back(parse_entry(m, kLengthBytes, complain));
  }

  // The data region must be tiled exactly: no tensor past its end, no overlap, no gap, no bytes
  // after the last tensor (the reference implementation's rule, so one file has one meaning).
  const uint64_t data_size = file.size() - header.data_start;
  for (const Entry& e : header.entries)
    if (e.end > data_size)
      complain.tensor(e.name, e.at,
                      "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                          "] run past the end of the data (" + std::to_string(data_size) +
                          " bytes, from byte " + std::to_string(header.data_start) +
                          " of the file: truncated?)");
  std::stable_sort(header.entries.begin(), header.entries.end(), [](const Entry& a, const Entry& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : header.entries) {
    if (e.begin < covered)
      complain.tensor(e.name, e.at,
                      "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                          "] overlap those of tensor " + json::quote(previous->name));
    if (e.begin > covered)
      complain.tensor(e.name, e.at,
                      "bytes [" + std::to_string(covered) + ", " + std::to_string(e.begin) +
                          ") of the data before this tensor belong to no tensor");
    covered = e.end;
    previous = &e;
  }
  if (covered != data_size)
    complain.at(
        static_cast<size_t>(header.data_start + covered),
        std::to_string(data_size - covered) + " bytes after the last tensor's data belong to no tensor");
  return header;
}

// A bool tensor is read as C's _Bool, for which any byte but 0 and 1 is undefined behaviour.
void check_bools(const Entry& e, std::span<const std::byte> bytes, size_t file_offset,
                 const Complaint& complain) {
  for (size_t i = 0; i < bytes.size(); i++)
    if (bytes[i] != std::byte{0} && bytes[i] != std::byte{1})
      complain.tensor(e.name, file_offset + i,
                      "a BOOL byte is " + std::to_string(std::to_integer<int>(bytes[i])) + ", not 0 or 1");
}

// A realized, contiguous buffer for each tensor: its own buffer when it already is one, otherwise
// a copy; the copies are computed in one realize so they share work and fuse.
std::vector<std::shared_ptr<Buffer>> contiguous_buffers(const std::vector<Tensor>& tensors) {
  auto buffer_of = [](const UOpPtr& u) -> std::shared_ptr<Buffer> {
    const UOp* b = contiguous_buffer_node(u.get());
    if (!b) return nullptr;
    auto buffer = b->as<std::shared_ptr<Buffer>>();
    return buffer->size == u->numel() ? buffer : nullptr;
  };
  NoGrad no_grad;  // saving reads values; it must not grow anyone's gradient graph
  std::vector<std::shared_ptr<Buffer>> out(tensors.size());
  std::vector<Tensor> copies;
  std::vector<size_t> copied;
  for (size_t i = 0; i < tensors.size(); i++) {
    out[i] = buffer_of(tensors[i].uop());
    if (!out[i]) {
      copies.push_back(tensors[i].contiguous());
      copied.push_back(i);
    }
  }
  if (!copies.empty()) {
    realize(copies);
    for (size_t k = 0; k < copies.size(); k++) {
      out[copied[k]] = buffer_of(copies[k].uop());
      if (!out[copied[k]])
        throw Error("save_safetensors: internal error: a realized copy has no buffer of its own");
    }
  }
  return out;
}

}  // namespace

StateDict load_safetensors(const std::string& path) {
  const Complaint complain("load_safetensors", path);
  const std::shared_ptr<const MappedFile> file = MappedFile::open(path, "load_safetensors");
  const std::span<std::byte> bytes = file->bytes();
  const Header header = read_header(bytes, complain);
  for (const Entry& e : header.entries)
    if (e.dtype == kBool)
      check_bools(e, bytes.subspan(header.data_start + e.begin, e.end - e.begin), header.data_start + e.begin,
                  complain);
  // Everything is checked: from here on only memory can run out, and then nothing is returned.
  StateDict tensors;
  for (const Entry& e : header.entries)
    tensors.emplace(e.name,
                    tensor_over_mapping(file, bytes.subspan(header.data_start + e.begin, e.end - e.begin),
                                        e.shape, e.dtype));
  return tensors;
}

SafetensorsMetadata load_safetensors_metadata(const std::string& path) {
  const std::shared_ptr<const MappedFile> file = MappedFile::open(path, "load_safetensors_metadata");
  return read_header(file->bytes(), Complaint("load_safetensors_metadata", path)).metadata;
}

void save_safetensors(const std::string& path, const StateDict& tensors,
                      const SafetensorsMetadata& metadata) {
  const std::string caller = "save_safetensors";
  auto fail = [&](const std::string& what) { throw Error(caller + ": \"" + path + "\": " + what); };
  if (path.empty()) throw Error(caller + ": the path is empty");
  // A name or text that is not UTF-8 would make a header no JSON reader accepts.
  std::vector<std::string> names;
  std::vector<Tensor> values;
  for (const auto& [name, tensor] : tensors) {
    if (name == kMetadataKey) fail("a tensor cannot be named \"__metadata__\" (the header's metadata key)");
    if (!json::is_valid_utf8(name)) fail("tensor name " + json::quote(name) + " is not valid UTF-8");
    if (!tensor.defined()) fail("tensor " + json::quote(name) + " is undefined");
    code_of(tensor.dtype());
    names.push_back(name);
    values.push_back(tensor);
  }
  for (const auto& [key, value] : metadata)
    if (!json::is_valid_utf8(key) || !json::is_valid_utf8(value))
      fail("metadata " + json::quote(key) + " is not valid UTF-8");

  // Computed before the file is touched: an error in a lazy tensor leaves the old file as it was.
  const std::vector<std::shared_ptr<Buffer>> buffers = contiguous_buffers(values);
  // Allocated before the file is touched too (a buffer of Tensor::empty has no memory yet), so
  // memory that runs out is an error that leaves the old file as it was.
  for (const auto& b : buffers) b->handle();

  // The reference layout: by dtype rank (widest first, so every tensor is aligned to its element
  // size), then by name; the header lists them in that order after the metadata.
  std::vector<size_t> order(names.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int ra = code_of(values[a].dtype()).rank, rb = code_of(values[b].dtype()).rank;
    return ra != rb ? ra > rb : names[a] < names[b];
  });
  std::string header = "{";
  if (!metadata.empty()) {
    header += json::quote(kMetadataKey) + ":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      header += (first ? "" : ",") + json::quote(key) + ":" + json::quote(value);
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (size_t i : order) {
    std::string shape;
    for (int64_t d : values[i].shape()) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    const uint64_t end = offset + buffers[i]->nbytes();
    header += (header.size() > 1 ? "," : "") + json::quote(names[i]) + ":{\"dtype\":\"" +
              std::string(code_of(values[i].dtype()).code) + "\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  header += "}";
  // Spaces up to a multiple of 8, so the data region starts 8-byte aligned in the file.
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > kMaxHeaderBytes)
    fail("the header would be " + std::to_string(header.size()) + " bytes, over the format's limit of " +
         std::to_string(kMaxHeaderBytes));

  AtomicFile out(path, caller);
  const uint64_t length = header.size();
  out.write(std::as_bytes(std::span(&length, 1)));
  out.write(std::as_bytes(std::span(header)));
  for (size_t i : order) {
    Buffer& b = *buffers[i];
    if (!b.nbytes()) continue;
    if (const void* host = b.host_ptr()) {  // the CPU's memory, written as it is
      out.write({static_cast<const std::byte*>(host), b.nbytes()});
      continue;
    }
    std::vector<std::byte> staging(b.nbytes());  // another device's: through the host, one at a time
    b.copyout(staging);
    out.write(staging);
  }
  out.commit();
}

}  // namespace lazygrad
