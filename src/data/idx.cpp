// read_idx: an IDX file (the MNIST format), plain or gzip-compressed, into a tensor of its dtype and
// shape. The whole file is read into memory and checked before a tensor is made, so a malformed
// file is always an Error that names the file and the byte offset, never a short read or a crash.
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <vector>

#include "lazygrad/data.h"
#include "lazygrad/error.h"

namespace lazygrad::data {

namespace {

using Bytes = std::vector<unsigned char>;

std::string quoted(const std::string& path) { return "'" + path + "'"; }

std::string hex(uint64_t value, int digits) {
  std::ostringstream s;
  s << "0x" << std::uppercase << std::hex;
  s.width(digits);
  s.fill('0');
  s << value;
  return s.str();
}

Bytes read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error("read_idx: " + quoted(path) + " is a directory, not an IDX file");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error("read_idx: cannot open " + quoted(path) + ": " + std::strerror(errno));
  file.seekg(0, std::ios::end);
  const std::streamoff size = file.tellg();
  file.seekg(0, std::ios::beg);
  if (size < 0 || !file)
    throw Error("read_idx: cannot get the size of " + quoted(path) + " (not a regular file?)");
  Bytes bytes(static_cast<size_t>(size));
  file.read(reinterpret_cast<char*>(bytes.data()), size);
  if (file.gcount() != size)
    throw Error("read_idx: error reading " + quoted(path) + " at byte " + std::to_string(file.gcount()) +
                ": " + std::strerror(errno));
  return bytes;
}

bool is_gzip(std::span<const unsigned char> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

// Owns a zlib inflate stream, so every exit path frees it.
class Inflater {
 public:
  explicit Inflater(const std::string& path) {
    // 16 + MAX_WBITS: expect a gzip header and trailer (and check the trailer's CRC-32 and length).
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK)
      throw Error("read_idx: " + quoted(path) + ": zlib could not start inflating (out of memory?)");
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  z_stream& stream() { return stream_; }

 private:
  z_stream stream_{};
};

// Decompresses every gzip member of `in` (`cat a.gz b.gz` is a valid gzip file). Zero bytes after
// the last member are padding (tape blocks; Python's gzip skips them too); anything else is an Error.
Bytes gunzip(std::span<const unsigned char> in, const std::string& path) {
  auto fail = [&](size_t offset, const std::string& what) {
    return Error("read_idx: " + quoted(path) + " at byte " + std::to_string(offset) +
                 " of the gzip file: " + what);
  };
  // The last member's trailer holds its uncompressed size mod 2^32: a good first guess for the
  // output buffer, capped at deflate's best ratio (1032:1) so a corrupt trailer cannot ask for a
  // huge allocation.
  size_t guess = 1 << 16;
  if (in.size() >= 18) {
    uint32_t isize = 0;
    for (int k = 3; k >= 0; k--) isize = (isize << 8) | in[in.size() - 4 + k];
    guess = std::max<size_t>(guess, std::min<size_t>(isize, in.size() * 1032));
  }
  Bytes out(guess);
  size_t produced = 0;

  Inflater inflater(path);
  z_stream& zs = inflater.stream();
  size_t consumed = 0;  // bytes of `in` that zlib has taken
  // zlib counts in 32-bit unsigned ints: feed and drain at most this much per call.
  constexpr size_t kChunk = std::numeric_limits<uInt>::max();
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2);
    size_t in_chunk = std::min(kChunk, in.size() - consumed);
    size_t out_chunk = std::min(kChunk, out.size() - produced);
    zs.next_in = const_cast<Bytef*>(in.data() + consumed);  // zlib's API is not const-correct
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = out.data() + produced;
    zs.avail_out = static_cast<uInt>(out_chunk);
    int rc = inflate(&zs, Z_NO_FLUSH);
    consumed += in_chunk - zs.avail_in;
    produced += out_chunk - zs.avail_out;
    if (rc == Z_STREAM_END) {
      size_t rest = consumed;
      while (rest < in.size() && in[rest] == 0) rest++;
      if (rest == in.size()) break;
      if (is_gzip(in.subspan(consumed))) {
        inflateReset(&zs);
        continue;
      }
      throw fail(consumed,
                 std::to_string(in.size() - consumed) + " bytes of trailing garbage after the gzip stream");
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_out == 0) continue;  // the output was full: grow it
    if (rc == Z_BUF_ERROR && consumed == in.size())
      throw fail(consumed, "the gzip stream ends early (truncated file?)");
    std::string reason = zs.msg              ? zs.msg
                         : rc == Z_MEM_ERROR ? "out of memory"
                                             : "zlib error " + std::to_string(rc);
    throw fail(consumed, "corrupt gzip data (" + reason + ")");
  }
  out.resize(produced);
  return out;
}

std::optional<DType> idx_dtype(unsigned char code) {
  switch (code) {
    case 0x08:
      return kUInt8;
    case 0x09:
      return kInt8;
    case 0x0B:
      return kInt16;
    case 0x0C:
      return kInt32;
    case 0x0D:
      return kFloat32;
    case 0x0E:
      return kFloat64;
    default:
      return std::nullopt;
  }
}

uint32_t read_be32(std::span<const unsigned char> bytes, size_t at) {
  return uint32_t(bytes[at]) << 24 | uint32_t(bytes[at + 1]) << 16 | uint32_t(bytes[at + 2]) << 8 |
         bytes[at + 3];
}

// IDX stores values big-endian: reverse each element's bytes on a little-endian host.
void to_native_order(std::span<unsigned char> values, size_t item) {
  if constexpr (std::endian::native == std::endian::big) return;
  if (item == 1) return;
  for (size_t i = 0; i + item <= values.size(); i += item)
    std::reverse(values.begin() + i, values.begin() + i + item);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  Bytes bytes = read_file(path);
  const bool compressed = is_gzip(bytes);
  if (compressed) bytes = gunzip(bytes, path);
  // Offsets in the messages are into what the header describes: the decompressed data of a gzip file.
  auto fail = [&](size_t offset, const std::string& what) {
    return Error("read_idx: " + quoted(path) + " at byte " + std::to_string(offset) +
                 (compressed ? " of the decompressed data: " : ": ") + what);
  };

  if (bytes.size() < 4)
    throw fail(bytes.size(),
               "the file ends inside the 4-byte magic number (" + std::to_string(bytes.size()) + " bytes)");
  const uint32_t magic = read_be32(bytes, 0);
  if (bytes[0] != 0 || bytes[1] != 0)
    throw fail(0, "bad magic number " + hex(magic, 8) +
                      " (an IDX file starts with two zero bytes, a dtype code and the number of dims, e.g. "
                      "0x00000803 for uint8 images)");
  const std::optional<DType> dtype = idx_dtype(bytes[2]);
  if (!dtype)
    throw fail(2, "unknown dtype code " + hex(bytes[2], 2) +
                      " (known: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64)");
  const size_t ndim = bytes[3];
  const size_t header = 4 + 4 * ndim;
  if (bytes.size() < header)
    throw fail(bytes.size(), "the file ends inside the header: " + std::to_string(ndim) + " dims need " +
                                 std::to_string(header) + " header bytes");

  Shape shape(ndim);
  for (size_t d = 0; d < ndim; d++) shape[d] = read_be32(bytes, 4 + 4 * d);
  // The byte count must fit in int64 even where a 0 dim makes it 0: the runtime's strides are
  // products of the other dims.
  const size_t item = itemsize(*dtype);
  int64_t nbytes = static_cast<int64_t>(item);
  for (size_t d = 0; d < ndim; d++) {
    const int64_t size = std::max<int64_t>(shape[d], 1);
    if (nbytes > std::numeric_limits<int64_t>::max() / size)
      throw fail(4 + 4 * d, "dims overflow: shape " + shape_str(shape) + " of " +
                                std::string(dtype_name(*dtype)) + " has more than 2^63 bytes (dim " +
                                std::to_string(d) + ")");
    nbytes *= size;
  }
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  nbytes = numel * static_cast<int64_t>(item);

  const size_t data_bytes = bytes.size() - header;
  const std::string described = "shape " + shape_str(shape) + " of " + std::string(dtype_name(*dtype)) +
                                " needs " + std::to_string(nbytes) + " bytes after the " +
                                std::to_string(header) + "-byte header";
  if (data_bytes < static_cast<size_t>(nbytes))
    throw fail(bytes.size(),
               "the data ends early: " + described + ", there are " + std::to_string(data_bytes));
  if (data_bytes > static_cast<size_t>(nbytes))
    throw fail(header + nbytes,
               std::to_string(data_bytes - nbytes) + " bytes of trailing garbage: " + described);

  std::span<unsigned char> values(bytes.data() + header, static_cast<size_t>(nbytes));
  to_native_order(values, item);
  return Tensor::from_bytes(values.data(), values.size(), shape, *dtype);
}

}  // namespace lazygrad::data
