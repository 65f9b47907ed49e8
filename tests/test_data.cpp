// lazygrad::data: the IDX reader (every dtype, plain and gzipped, and every malformed case),
// (Fashion-)MNIST loading, and the DataLoader (coverage, shuffling, drop_last, content, early exit,
// and the prefetch thread running alongside kernels on the caller's thread, for ASan/TSan).
//
// The test files are written here, byte by byte, rather than with a writer from the library, so a
// mistake in the reader cannot be mirrored by the same mistake in a writer. The gzip files use
// deflate's stored blocks (the format without compression): no zlib is needed to write them, and
// the bytes (hence the offsets of corruptions) are known exactly. Real deflate data is read by the
// Fashion-MNIST test when Debian's dataset-fashion-mnist is installed.
//
// Kernels: one ([4, 3] uint8 to float, shared by two tests); everything else reads buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <ranges>
#include <set>
#include <string>
#include <vector>

#include "lazygrad/data.h"
#include "lazygrad/lazygrad.h"

namespace {

using lazygrad::DType;
using lazygrad::Error;
using lazygrad::GlobalCounters;
using lazygrad::Shape;
using lazygrad::Tensor;
using lazygrad::data::Batch;
using lazygrad::data::DataLoader;
using lazygrad::data::DataLoaderOptions;
using lazygrad::data::read_idx;
using Bytes = std::vector<unsigned char>;

static_assert(std::input_iterator<DataLoader::Iterator>);
static_assert(std::ranges::input_range<DataLoader>);

// ---- writing test files ----

// A fresh folder under the temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lazygrad-test-data-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void append_be(Bytes& out, uint64_t value, int bytes) {
  for (int k = bytes - 1; k >= 0; k--) out.push_back(static_cast<unsigned char>(value >> (8 * k)));
}

void append_le(Bytes& out, uint64_t value, int bytes) {
  for (int k = 0; k < bytes; k++) out.push_back(static_cast<unsigned char>(value >> (8 * k)));
}

// An IDX file: 0, 0, the dtype code, the number of dims, the dims, then the values big-endian.
template <class T>
Bytes idx_file(unsigned char code, const std::vector<uint32_t>& dims, const std::vector<T>& values) {
  Bytes out{0, 0, code, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims) append_be(out, d, 4);
  for (T v : values) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));  // little-endian host: the low bytes hold the value
    append_be(out, bits, sizeof(T));
  }
  return out;
}

uint32_t crc32(const Bytes& bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// One gzip member (RFC 1952) holding `data` in deflate stored blocks of at most 65535 bytes.
Bytes gzip_stored(const Bytes& data) {
  Bytes out{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};  // magic, deflate, no flags, no mtime, unknown OS
  size_t pos = 0;
  do {
    const size_t len = std::min<size_t>(65535, data.size() - pos);
    out.push_back(pos + len == data.size() ? 1 : 0);  // BFINAL on the last block, BTYPE 00 (stored)
    append_le(out, len, 2);
    append_le(out, ~len & 0xFFFF, 2);
    out.insert(out.end(), data.begin() + static_cast<ptrdiff_t>(pos),
               data.begin() + static_cast<ptrdiff_t>(pos + len));
    pos += len;
  } while (pos < data.size());
  append_le(out, crc32(data), 4);
  append_le(out, data.size() & 0xFFFFFFFFu, 4);
  return out;
}

// Throws if `f` does not throw lazygrad::Error; returns its message.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<not a lazygrad::Error: ") + e.what() + ">";
  }
  return "<no error>";
}

// The message of read_idx(path): a lazygrad::Error naming the file and each of `words`.
void expect_idx_error(const std::string& path, const std::vector<std::string>& words) {
  std::string msg = error_of([&] { read_idx(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << "the message does not name the file: " << msg;
  for (const auto& w : words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg;
}

template <class T>
std::vector<uint64_t> bits_of(const std::vector<T>& values) {
  std::vector<uint64_t> out;
  for (T v : values) {
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    out.push_back(b);
  }
  return out;
}

// Writes `values` as an IDX file (plain and gzipped) and reads both back.
template <class T>
void check_round_trip(const TempDir& dir, unsigned char code, DType dtype, const std::vector<uint32_t>& dims,
                      const std::vector<T>& values) {
  Bytes plain = idx_file(code, dims, values);
  Shape shape(dims.begin(), dims.end());
  std::string name = std::string(lazygrad::dtype_name(dtype)) + "_" + std::to_string(dims.size());
  for (bool gz : {false, true}) {
    std::string path = dir.file(name + (gz ? ".gz" : ".idx"));
    write_file(path, gz ? gzip_stored(plain) : plain);
    SCOPED_TRACE(path);
    Tensor t = read_idx(path);
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.shape(), shape);
    EXPECT_TRUE(t.is_realized());
    // Compared as bits: NaN, -0.0 and every integer must come back exactly.
    EXPECT_EQ(bits_of(t.to_vector<T>()), bits_of(values));
  }
}

}  // namespace

// ---- IDX ----

TEST(ReadIdx, EveryDtypePlainAndGzipped) {
  TempDir dir;
  const float inf = std::numeric_limits<float>::infinity();
  check_round_trip<uint8_t>(dir, 0x08, lazygrad::kUInt8, {2, 3}, {0, 1, 127, 128, 200, 255});
  check_round_trip<int8_t>(dir, 0x09, lazygrad::kInt8, {2, 3}, {-128, -1, 0, 1, 100, 127});
  check_round_trip<int16_t>(dir, 0x0B, lazygrad::kInt16, {2, 3}, {-32768, -2, 0, 258, 4660, 32767});
  check_round_trip<int32_t>(dir, 0x0C, lazygrad::kInt32, {2, 3},
                            {std::numeric_limits<int32_t>::min(), -3, 0, 65536, 16909060, 2147483647});
  check_round_trip<float>(dir, 0x0D, lazygrad::kFloat32, {2, 3},
                          {1.5f, -0.0f, inf, -3.25e-20f, 1e30f, std::numeric_limits<float>::quiet_NaN()});
  check_round_trip<double>(dir, 0x0E, lazygrad::kFloat64, {2, 3},
                           {1.0 / 3, -0.0, -std::numeric_limits<double>::infinity(), 5e-324, 1e300, -2.5});
}

TEST(ReadIdx, AnyNumberOfDims) {
  TempDir dir;
  check_round_trip<uint8_t>(dir, 0x08, lazygrad::kUInt8, {}, {42});                 // 0-d: one value
  check_round_trip<uint8_t>(dir, 0x08, lazygrad::kUInt8, {5}, {9, 0, 0, 3, 0});     // labels, 0x00000801
  check_round_trip<uint8_t>(dir, 0x08, lazygrad::kUInt8, {2, 1, 2}, {1, 2, 3, 4});  // images, 0x00000803
  check_round_trip<int16_t>(dir, 0x0B, lazygrad::kInt16, {1, 2, 1, 2, 1}, {-1, 2, -3, 4});
  check_round_trip<float>(dir, 0x0D, lazygrad::kFloat32, {0, 3}, {});  // empty
}

TEST(ReadIdx, GzipWithManyBlocksAndMembers) {
  TempDir dir;
  // 300 images of 28 x 28 are 235200 bytes: four stored blocks.
  std::vector<uint8_t> pixels(300 * 28 * 28);
  for (size_t i = 0; i < pixels.size(); i++) pixels[i] = static_cast<uint8_t>(i * 7 + i / 784);
  Bytes plain = idx_file<uint8_t>(0x08, {300, 28, 28}, pixels);
  auto check = [&](const std::string& name, const Bytes& file) {
    SCOPED_TRACE(name);
    write_file(dir.file(name), file);
    Tensor t = read_idx(dir.file(name));
    EXPECT_EQ(t.shape(), (Shape{300, 28, 28}));
    EXPECT_EQ(t.to_vector<uint8_t>(), pixels);
  };
  check("one.gz", gzip_stored(plain));
  // `cat a.gz b.gz` is one gzip file. The small last member's size field (its only size hint) is
  // far too small, so the output buffer must grow.
  Bytes head(plain.begin(), plain.end() - 100), tail(plain.end() - 100, plain.end());
  Bytes two = gzip_stored(head), second = gzip_stored(tail);
  two.insert(two.end(), second.begin(), second.end());
  check("two.gz", two);
  // Zero bytes after the last member are padding, as gzip and Python read them.
  Bytes padded = gzip_stored(plain);
  padded.resize(padded.size() + 512, 0);
  check("padded.gz", padded);
  // The gzip magic decides, not the name.
  check("named_plain.gz", plain);
  check("compressed_without_suffix", gzip_stored(plain));
}

TEST(ReadIdx, MalformedHeadersNameTheFileAndOffset) {
  TempDir dir;
  Bytes good = idx_file<uint8_t>(0x08, {2, 3}, {1, 2, 3, 4, 5, 6});  // header 12 bytes, data 6
  auto check = [&](const std::string& name, Bytes bytes, std::vector<std::string> words) {
    for (bool gz : {false, true}) {
      std::string path = dir.file(name + (gz ? ".gz" : ""));
      write_file(path, gz ? gzip_stored(bytes) : bytes);
      SCOPED_TRACE(path);
      // Offsets are into the decompressed data, not the gzip file.
      std::vector<std::string> expected = words;
      for (auto& w : expected)
        if (w.starts_with("at byte")) w += gz ? " of the decompressed data:" : ":";
      expect_idx_error(path, expected);
    }
  };
  Bytes bad_magic = good;
  bad_magic[1] = 0x01;
  check("bad_magic", bad_magic, {"bad magic number 0x00010802", "at byte 0"});
  Bytes bad_code = good;
  bad_code[2] = 0x0A;
  check("bad_code", bad_code, {"unknown dtype code 0x0A", "at byte 2"});
  check("empty", {}, {"magic", "at byte 0"});
  check("three_bytes", {0, 0, 8}, {"magic", "at byte 3"});
  check("short_header", Bytes(good.begin(), good.begin() + 10), {"header", "at byte 10"});
  // 8 bytes * 2^32 * 2^32 passes 2^63 at the second dim (bytes 8..11).
  check("dims_overflow", idx_file<double>(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {}),
        {"overflow", "at byte 8"});
  // A zero dim does not excuse the others: the runtime multiplies them into strides.
  check("dims_overflow_zero", idx_file<double>(0x0E, {0, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {}),
        {"overflow", "at byte 12"});
  check("short_data", Bytes(good.begin(), good.end() - 1), {"ends early", "{2, 3}", "at byte 17"});
  check("short_big_dims", idx_file<uint8_t>(0x08, {60000, 28, 28}, {1, 2, 3}), {"ends early", "at byte 19"});
  Bytes trailing = good;
  trailing.push_back(7);
  trailing.push_back(7);
  check("trailing", trailing, {"2 bytes of trailing garbage", "at byte 18"});
}

TEST(ReadIdx, CorruptGzipNamesTheFileAndOffset) {
  TempDir dir;
  Bytes gz = gzip_stored(idx_file<uint8_t>(0x08, {2, 3}, {1, 2, 3, 4, 5, 6}));  // 10 + 5 + 18 + 8 bytes
  auto check = [&](const std::string& name, const Bytes& bytes, std::vector<std::string> words) {
    write_file(dir.file(name), bytes);
    SCOPED_TRACE(name);
    for (auto& w : words)
      if (w.starts_with("at byte ")) w += " of the gzip file:";
    expect_idx_error(dir.file(name), words);
  };
  Bytes bad_data = gz;
  bad_data[20] ^= 0x40;  // a value byte: the CRC-32 in the trailer no longer matches
  check("bad_crc.gz", bad_data, {"corrupt gzip data", "incorrect data check", "of the gzip file"});
  Bytes bad_method = gz;
  bad_method[2] = 7;
  check("bad_method.gz", bad_method, {"corrupt gzip data", "unknown compression method", "at byte"});
  Bytes bad_lengths = gz;
  bad_lengths[13] ^= 0x01;  // NLEN no longer the complement of LEN
  check("bad_block.gz", bad_lengths, {"corrupt gzip data", "invalid stored block lengths"});
  check("truncated.gz", Bytes(gz.begin(), gz.end() - 3), {"ends early", "at byte 38"});
  check("only_magic.gz", {0x1f, 0x8b}, {"ends early", "at byte 2"});
  Bytes garbage = gz;
  for (unsigned char c : {'a', 'b', 'c'}) garbage.push_back(c);
  check("garbage.gz", garbage, {"3 bytes of trailing garbage", "at byte 41"});
}

// Every prefix of a valid file, and every byte of it flipped, reads or throws lazygrad::Error:
// never a crash, a hang or an overlong read (ASan checks the last in `make sanitize`).
TEST(ReadIdx, EveryTruncationAndByteFlipIsSafe) {
  TempDir dir;
  Bytes plain = idx_file<int16_t>(0x0B, {2, 3}, {1, -2, 3, -4, 5, -6});
  for (bool gz : {false, true}) {
    const Bytes file = gz ? gzip_stored(plain) : plain;
    const std::string path = dir.file(gz ? "fuzz.gz" : "fuzz.idx");
    for (size_t len = 0; len < file.size(); len++) {
      write_file(path, Bytes(file.begin(), file.begin() + static_cast<ptrdiff_t>(len)));
      std::string msg = error_of([&] { read_idx(path); });
      EXPECT_NE(msg.find("at byte"), std::string::npos) << "truncated to " << len << ": " << msg;
    }
    for (size_t i = 0; i < file.size(); i++) {
      Bytes flipped = file;
      flipped[i] ^= 0xFF;
      write_file(path, flipped);
      try {
        read_idx(path);
      } catch (const Error&) {
      }
    }
  }
}

TEST(ReadIdx, MissingFileOrFolder) {
  TempDir dir;
  std::string missing = dir.file("absent-idx3-ubyte");
  std::string msg = error_of([&] { read_idx(missing); });
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  msg = error_of([&] { read_idx(dir.path()); });
  EXPECT_NE(msg.find("directory"), std::string::npos) << msg;
}

// ---- (Fashion-)MNIST ----

namespace {

// A small MNIST-like folder: `train` and `test` images with labels i % 10, pixel (i, r, c) = i + r + c.
void write_mnist(const TempDir& dir, int train, int test, bool gz) {
  auto images = [](int n) {
    std::vector<uint8_t> v;
    for (int i = 0; i < n; i++)
      for (int r = 0; r < 28; r++)
        for (int c = 0; c < 28; c++) v.push_back(static_cast<uint8_t>(i + r + c));
    return idx_file<uint8_t>(0x08, {static_cast<uint32_t>(n), 28, 28}, v);
  };
  auto labels = [](int n) {
    std::vector<uint8_t> v;
    for (int i = 0; i < n; i++) v.push_back(static_cast<uint8_t>(i % 10));
    return idx_file<uint8_t>(0x08, {static_cast<uint32_t>(n)}, v);
  };
  auto put = [&](const std::string& name, const Bytes& b) {
    write_file(dir.file(name), gz ? gzip_stored(b) : b);
  };
  std::string ext = gz ? ".gz" : "";
  put("train-images-idx3-ubyte" + ext, images(train));
  put("train-labels-idx1-ubyte" + ext, labels(train));
  // Some mirrors spell the names with a dot.
  put("t10k-images.idx3-ubyte" + ext, images(test));
  put("t10k-labels.idx1-ubyte" + ext, labels(test));
}

}  // namespace

TEST(FashionMnist, LoadsAFolderOfMnistFiles) {
  for (bool gz : {false, true}) {
    TempDir dir;
    write_mnist(dir, 12, 3, gz);
    auto d = lazygrad::data::load_fashion_mnist(dir.path());
    EXPECT_EQ(d.train_images.shape(), (Shape{12, 28, 28}));
    EXPECT_EQ(d.train_images.dtype(), lazygrad::kUInt8);
    EXPECT_EQ(d.test_images.shape(), (Shape{3, 28, 28}));
    EXPECT_EQ(d.train_labels.dtype(), lazygrad::kInt64);
    EXPECT_EQ(d.train_labels.to_vector<int64_t>(),
              (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));
    EXPECT_EQ(d.test_labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
    std::vector<uint8_t> test_pixels = d.test_images.to_vector<uint8_t>();
    EXPECT_EQ(test_pixels[2 * 784 + 5 * 28 + 7], 2 + 5 + 7);
  }
}

TEST(FashionMnist, BadFoldersAndFiles) {
  TempDir dir;
  std::string msg = error_of([&] { lazygrad::data::load_fashion_mnist(dir.file("nowhere")); });
  EXPECT_NE(msg.find("not a folder"), std::string::npos) << msg;
  msg = error_of([&] { lazygrad::data::load_fashion_mnist(dir.path()); });
  EXPECT_NE(msg.find("train-images-idx3-ubyte.gz"), std::string::npos) << msg;  // the names tried
  EXPECT_NE(msg.find(dir.path()), std::string::npos) << msg;

  write_mnist(dir, 2, 2, false);
  write_file(dir.file("train-labels-idx1-ubyte"), idx_file<uint8_t>(0x08, {2}, {3, 10}));
  msg = error_of([&] { lazygrad::data::load_fashion_mnist(dir.path()); });
  EXPECT_NE(msg.find("label 10"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte 9"), std::string::npos) << msg;
  write_file(dir.file("train-labels-idx1-ubyte"), idx_file<uint8_t>(0x08, {3}, {1, 2, 3}));
  msg = error_of([&] { lazygrad::data::load_fashion_mnist(dir.path()); });
  EXPECT_NE(msg.find("to match the images"), std::string::npos) << msg;
  write_file(dir.file("train-images-idx3-ubyte"),
             idx_file<uint8_t>(0x08, {1, 28, 27}, std::vector<uint8_t>(28 * 27)));
  msg = error_of([&] { lazygrad::data::load_fashion_mnist(dir.path()); });
  EXPECT_NE(msg.find("{1, 28, 27}"), std::string::npos) << msg;
}

// ---- CIFAR-10's binary format ----

// `n` records: label (first + r) % 10, pixel (channel c, row y, column x) = (r + 7c + 3y + x) % 256.
Bytes cifar_records(int n, int first) {
  Bytes out;
  for (int r = 0; r < n; r++) {
    out.push_back(static_cast<unsigned char>((first + r) % 10));
    for (int c = 0; c < 3; c++)
      for (int y = 0; y < 32; y++)
        for (int x = 0; x < 32; x++)
          out.push_back(static_cast<unsigned char>((first + r + 7 * c + 3 * y + x) % 256));
  }
  return out;
}

void write_cifar(const TempDir& dir) {
  for (int i = 1; i <= 5; i++)
    write_file(dir.file("data_batch_" + std::to_string(i) + ".bin"), cifar_records(2, 2 * (i - 1)));
  write_file(dir.file("test_batch.bin"), cifar_records(3, 100));
}

TEST(Cifar10, LoadsTheBinaryBatchesInOrder) {
  TempDir dir;
  write_cifar(dir);
  lazygrad::data::Cifar10 d = lazygrad::data::load_cifar10(dir.path());
  EXPECT_EQ(d.train_images.shape(), (Shape{10, 3, 32, 32}));
  EXPECT_EQ(d.train_images.dtype(), lazygrad::kUInt8);
  EXPECT_EQ(d.train_labels.dtype(), lazygrad::kInt64);
  EXPECT_EQ(d.train_labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(d.test_images.shape(), (Shape{3, 3, 32, 32}));
  EXPECT_EQ(d.test_labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  // Record 7 (data_batch_4's second), green plane, row 5, column 9: the planes are channels.
  const std::vector<uint8_t> px = d.train_images.to_vector<uint8_t>();
  EXPECT_EQ(px[((7 * 3 + 1) * 32 + 5) * 32 + 9], (7 + 7 * 1 + 3 * 5 + 9) % 256);
  EXPECT_EQ(lazygrad::data::kCifar10Classes[3], "cat");
}

TEST(Cifar10, ACorruptFileNamesItselfAndTheOffset) {
  TempDir dir;
  write_cifar(dir);
  Bytes cut = cifar_records(2, 0);
  cut.resize(cut.size() - 100);
  write_file(dir.file("data_batch_3.bin"), cut);
  std::string msg = error_of([&] { lazygrad::data::load_cifar10(dir.path()); });
  EXPECT_NE(msg.find("data_batch_3.bin' has 6046 bytes, not a whole number of 3073-byte records"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("the record at offset 3073 is cut short"), std::string::npos) << msg;

  write_cifar(dir);
  Bytes bad = cifar_records(2, 0);
  bad[3073] = 10;
  write_file(dir.file("test_batch.bin"), bad);
  msg = error_of([&] { lazygrad::data::load_cifar10(dir.path()); });
  EXPECT_NE(msg.find("test_batch.bin': label 10 at offset 3073 (record 1) is not in 0..9"), std::string::npos)
      << msg;

  write_cifar(dir);
  std::filesystem::remove(dir.file("data_batch_5.bin"));
  msg = error_of([&] { lazygrad::data::load_cifar10(dir.path()); });
  EXPECT_NE(msg.find("no data_batch_5.bin in"), std::string::npos) << msg;
  msg = error_of([&] { lazygrad::data::load_cifar10(dir.file("nowhere")); });
  EXPECT_NE(msg.find("is not a folder"), std::string::npos) << msg;
}

// Padding 0: each image is itself or its mirror, and both happen. Padding 2: every pixel is the
// zero padding or a pixel of the same image and channel, and a crop at a random offset shifts it.
TEST(Cifar10, RandomCropFlipMovesPixelsWithinTheirImage) {
  std::vector<uint8_t> px(7 * 2 * 4 * 4);  // 224 distinct values: a pixel from another image would show
  for (size_t i = 0; i < px.size(); i++) px[i] = static_cast<uint8_t>(1 + i % 255);
  Tensor images = Tensor::from_vector(px, {7, 2, 4, 4});
  const std::vector<uint8_t> same = lazygrad::data::random_crop_flip(images, 0, 5).to_vector<uint8_t>();
  int kept = 0, mirrored = 0;
  for (int i = 0; i < 7; i++) {
    bool is_same = true, is_mirror = true;
    for (int c = 0; c < 2; c++)
      for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
          const size_t at = ((i * 2 + c) * 4 + y) * 4;
          is_same &= same[at + x] == px[at + x];
          is_mirror &= same[at + x] == px[at + 3 - x];
        }
    kept += is_same;
    mirrored += is_mirror;
    EXPECT_TRUE(is_same || is_mirror) << "image " << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(mirrored, 0);

  const std::vector<uint8_t> moved = lazygrad::data::random_crop_flip(images, 2, 5).to_vector<uint8_t>();
  int zeros = 0, changed = 0;
  for (int i = 0; i < 7; i++)
    for (int c = 0; c < 2; c++) {
      const auto plane = px.begin() + ((i * 2 + c) * 16);
      for (int k = 0; k < 16; k++) {
        const uint8_t v = moved[(i * 2 + c) * 16 + k];
        zeros += v == 0;
        changed += v != plane[k];
        EXPECT_TRUE(v == 0 || std::find(plane, plane + 16, v) != plane + 16)
            << "image " << i << " channel " << c;
      }
    }
  EXPECT_GT(zeros, 0);
  EXPECT_GT(changed, zeros);
  EXPECT_EQ(lazygrad::data::random_crop_flip(images, 2, 5).to_vector<uint8_t>(), moved) << "a seed repeats";
  EXPECT_NE(error_of([&] {
              lazygrad::data::random_crop_flip(images.to(lazygrad::kFloat32), 2, 5);
            }).find("expected uint8 images [N, C, H, W]"),
            std::string::npos);
}

// The one kernel of this file: [4, 3] uint8 to float32 / 255 (shared with the prefetch test).
TEST(FashionMnist, PixelsToFloat) {
  std::vector<uint8_t> pixels{0, 255, 51, 1, 2, 128, 254, 17, 100, 200, 3, 77};
  std::vector<float> out =
      lazygrad::data::pixels_to_float(Tensor::from_vector(pixels, {4, 3})).to_vector<float>();
  for (size_t i = 0; i < pixels.size(); i++) EXPECT_EQ(out[i], static_cast<float>(pixels[i]) / 255.0f) << i;
  std::string msg = error_of([] { lazygrad::data::pixels_to_float(Tensor::zeros({2})); });
  EXPECT_NE(msg.find("pixels_to_float"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
}

// Debian's dataset-fashion-mnist, if installed (`make demo` installs it). Reads real deflate data.
TEST(FashionMnist, DebianPackage) {
  const std::string root(lazygrad::data::kFashionMnistRoot);
  if (!std::filesystem::exists(root + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed in " << root;
  const int64_t kernels = GlobalCounters::kernel_count;
  auto d = lazygrad::data::load_fashion_mnist();
  EXPECT_EQ(d.train_images.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(d.train_labels.shape(), (Shape{60000}));
  EXPECT_EQ(d.test_images.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(d.test_labels.shape(), (Shape{10000}));
  // Reference values from Python's gzip module over the same files.
  struct Expected {
    Tensor images, labels;
    int64_t first_sum, last_sum;
    std::vector<int64_t> first_labels;
  };
  for (const Expected& e :
       {Expected{d.train_images, d.train_labels, 76247, 16684, {9, 0, 0, 3, 0, 2, 7, 2, 5, 5}},
        Expected{d.test_images, d.test_labels, 33456, 24390, {9, 2, 1, 1, 6, 1, 4, 6, 5, 7}}}) {
    std::vector<uint8_t> pixels = e.images.to_vector<uint8_t>();
    std::vector<int64_t> labels = e.labels.to_vector<int64_t>();
    EXPECT_EQ(std::accumulate(pixels.begin(), pixels.begin() + 784, int64_t{0}), e.first_sum);
    EXPECT_EQ(std::accumulate(pixels.end() - 784, pixels.end(), int64_t{0}), e.last_sum);
    EXPECT_EQ(std::vector<int64_t>(labels.begin(), labels.begin() + 10), e.first_labels);
    // Balanced: each class is a tenth of the split.
    std::vector<int64_t> counts(10);
    for (int64_t l : labels) {
      ASSERT_TRUE(l >= 0 && l <= 9) << l;
      counts[static_cast<size_t>(l)]++;
    }
    EXPECT_EQ(counts, std::vector<int64_t>(10, static_cast<int64_t>(labels.size() / 10)));
  }
  EXPECT_EQ(GlobalCounters::kernel_count, kernels) << "loading must not run kernels";
}

// ---- DataLoader ----

namespace {

// Row i of the inputs is {i, 1000 + i} (int64), target i is 3 * i (int32): a batch says which
// examples it holds and whether its targets belong to its inputs.
struct Numbered {
  explicit Numbered(int64_t n) {
    std::vector<int64_t> x;
    std::vector<int32_t> y;
    for (int64_t i = 0; i < n; i++) {
      x.push_back(i);
      x.push_back(1000 + i);
      y.push_back(static_cast<int32_t>(3 * i));
    }
    inputs = Tensor::from_vector(x, {n, 2});
    targets = Tensor::from_vector(y, {n});
  }
  Tensor inputs, targets;
};

// The example indices of one epoch, in order, checking every batch's shape and pairing.
std::vector<int64_t> epoch_order(DataLoader& loader, std::vector<int64_t>* batch_sizes = nullptr) {
  std::vector<int64_t> order;
  for (auto& [x, y] : loader) {
    EXPECT_EQ(x.dtype(), lazygrad::kInt64);
    EXPECT_EQ(y.dtype(), lazygrad::kInt32);
    EXPECT_EQ(x.dim(), 2);
    EXPECT_EQ(y.shape(), Shape{x.size(0)});
    EXPECT_TRUE(x.is_realized() && y.is_realized());
    std::vector<int64_t> xs = x.to_vector<int64_t>();
    std::vector<int32_t> ys = y.to_vector<int32_t>();
    for (size_t r = 0; r < ys.size(); r++) {
      EXPECT_EQ(xs[2 * r + 1], 1000 + xs[2 * r]);
      EXPECT_EQ(ys[r], 3 * xs[2 * r]);
      order.push_back(xs[2 * r]);
    }
    if (batch_sizes) batch_sizes->push_back(x.size(0));
  }
  return order;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

}  // namespace

TEST(DataLoader, InOrderWithoutShuffle) {
  Numbered data(10);
  DataLoader loader(data.inputs, data.targets, {.batch_size = 4});
  EXPECT_EQ(loader.size(), 3);
  EXPECT_EQ(loader.dataset_size(), 10);
  std::vector<int64_t> sizes;
  EXPECT_EQ(epoch_order(loader, &sizes), iota(10));
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(loader.indices(5), iota(10));
}

TEST(DataLoader, ShuffleCoversEachExampleOncePerEpoch) {
  Numbered data(10);
  const int64_t kernels = GlobalCounters::kernel_count;
  DataLoader loader(data.inputs, data.targets, {.batch_size = 3, .shuffle = true, .seed = 7});
  EXPECT_EQ(loader.size(), 4);
  std::set<std::vector<int64_t>> orders;
  for (uint64_t epoch = 0; epoch < 4; epoch++) {
    EXPECT_EQ(loader.epoch(), epoch);
    std::vector<int64_t> sizes;
    std::vector<int64_t> order = epoch_order(loader, &sizes);
    EXPECT_EQ(order, loader.indices(epoch));  // the order the loader says
    EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 3, 1}));
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(10)) << "epoch " << epoch;
    orders.insert(order);
  }
  EXPECT_EQ(orders.size(), 4u) << "each epoch has a new order";
  EXPECT_FALSE(orders.count(iota(10)));
  EXPECT_EQ(GlobalCounters::kernel_count, kernels) << "batching must not run kernels";
}

TEST(DataLoader, ShuffleIsDeterministicForASeed) {
  Numbered data(50);
  DataLoaderOptions options{.batch_size = 8, .shuffle = true, .seed = 123};
  DataLoader a(data.inputs, data.targets, options), b(data.inputs, data.targets, options);
  std::vector<int64_t> a0 = epoch_order(a), a1 = epoch_order(a);
  EXPECT_EQ(epoch_order(b), a0);
  EXPECT_EQ(epoch_order(b), a1);
  EXPECT_NE(a0, a1);
  // An epoch's order depends on (seed, epoch) only: set_epoch replays it.
  b.set_epoch(1);
  EXPECT_EQ(epoch_order(b), a1);
  options.seed = 124;
  DataLoader c(data.inputs, data.targets, options);
  EXPECT_NE(epoch_order(c), a0);
  // Pinned: the generator is SplitMix64 and Fisher-Yates, the same on every platform.
  EXPECT_EQ(DataLoader(data.inputs, options).indices(0).size(), 50u);
  EXPECT_EQ(DataLoader(Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 3, 4, 5}, {6}),
                       {.shuffle = true, .seed = 0})
                .indices(0),
            (std::vector<int64_t>{5, 1, 3, 2, 4, 0}));
}

TEST(DataLoader, DropLast) {
  Numbered data(10);
  DataLoader loader(data.inputs, data.targets,
                    {.batch_size = 3, .shuffle = true, .drop_last = true, .seed = 1});
  EXPECT_EQ(loader.size(), 3);
  std::vector<int64_t> sizes;
  std::vector<int64_t> order = epoch_order(loader, &sizes);
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(std::set<int64_t>(order.begin(), order.end()).size(), 9u);
  std::vector<int64_t> epoch0 = loader.indices(0);
  EXPECT_EQ(order, std::vector<int64_t>(epoch0.begin(), epoch0.begin() + 9));
  DataLoader exact(data.inputs, data.targets, {.batch_size = 5, .drop_last = true});
  EXPECT_EQ(exact.size(), 2);
  DataLoader none(data.inputs, data.targets, {.batch_size = 11, .drop_last = true});
  EXPECT_EQ(none.size(), 0);
  EXPECT_TRUE(epoch_order(none).empty());
}

TEST(DataLoader, BatchesHoldTheSourceRows) {
  // Multi-dim float rows, uint8 targets; then no targets.
  std::vector<float> values(7 * 2 * 3);
  for (size_t i = 0; i < values.size(); i++) values[i] = static_cast<float>(i) * 0.5f - 3.0f;
  Tensor x = Tensor::from_vector(values, {7, 2, 3});
  Tensor y = Tensor::from_vector(std::vector<uint8_t>{10, 11, 12, 13, 14, 15, 16}, {7});
  DataLoader loader(x, y, {.batch_size = 2, .shuffle = true, .seed = 3, .prefetch_factor = 1});
  std::vector<int64_t> order = loader.indices(0);
  size_t at = 0;
  for (const Batch& batch : loader) {
    const int64_t rows = batch.inputs.size(0);
    EXPECT_EQ(batch.inputs.shape(), (Shape{rows, 2, 3}));
    EXPECT_EQ(batch.inputs.dtype(), lazygrad::kFloat32);
    EXPECT_EQ(batch.targets.dtype(), lazygrad::kUInt8);
    std::vector<float> got = batch.inputs.to_vector<float>();
    std::vector<uint8_t> labels = batch.targets.to_vector<uint8_t>();
    for (int64_t r = 0; r < rows; r++, at++) {
      const int64_t src = order[at];
      EXPECT_EQ(std::vector<float>(got.begin() + r * 6, got.begin() + r * 6 + 6),
                std::vector<float>(values.begin() + src * 6, values.begin() + src * 6 + 6));
      EXPECT_EQ(labels[static_cast<size_t>(r)], 10 + src);
    }
  }
  EXPECT_EQ(at, 7u);

  DataLoader inputs_only(x, {.batch_size = 4});
  int64_t batches = 0;
  for (auto& batch : inputs_only) {
    EXPECT_FALSE(batch.targets.defined());
    batches++;
  }
  EXPECT_EQ(batches, 2);
}

// Breaking out of a loop, abandoning an iterator, destroying the loader first, two passes at once:
// no hang, no leak (ASan), and what is still used still works.
TEST(DataLoader, EarlyExitAndOverlappingPassesDoNotHang) {
  Numbered data(200);
  for (int64_t prefetch : {0, 1, 3}) {
    SCOPED_TRACE(prefetch);
    DataLoaderOptions options{.batch_size = 1, .shuffle = true, .seed = 5, .prefetch_factor = prefetch};
    auto loader = std::make_unique<DataLoader>(data.inputs, data.targets, options);
    int seen = 0;
    for (auto& batch : *loader) {
      (void)batch;
      if (++seen == 2) break;  // the thread is blocked on a full queue: the pass must stop it
    }
    // Two passes side by side, advanced in turns: epochs 1 and 2, independent.
    auto first = loader->begin();
    auto second = loader->begin();
    std::vector<int64_t> one, two;
    for (int k = 0; k < 5; k++, ++first, ++second) {
      one.push_back(first->inputs.to_vector<int64_t>()[0]);
      two.push_back(second->inputs.to_vector<int64_t>()[0]);
    }
    std::vector<int64_t> epoch1 = loader->indices(1), epoch2 = loader->indices(2);
    EXPECT_EQ(one, std::vector<int64_t>(epoch1.begin(), epoch1.begin() + 5));
    EXPECT_EQ(two, std::vector<int64_t>(epoch2.begin(), epoch2.begin() + 5));
    // The loader goes first; the pass keeps what it reads and runs on.
    loader.reset();
    int64_t rest = 0;
    for (; second != std::default_sentinel; ++second) {
      EXPECT_EQ(second->inputs.to_vector<int64_t>()[0], epoch2[static_cast<size_t>(5 + rest)]);
      rest++;
    }
    EXPECT_EQ(rest, 195);
    EXPECT_THROW(++second, Error);  // past the end
    // `first` is dropped mid-epoch here.
  }
}

TEST(DataLoader, BadArguments) {
  Numbered data(4);
  auto msg = [](const std::function<void()>& f) { return error_of(f); };
  EXPECT_NE(msg([&] { DataLoader{data.inputs, {.batch_size = 0}}; }).find("batch_size=0"), std::string::npos);
  EXPECT_NE(msg([&] {
              DataLoader{data.inputs, {.prefetch_factor = -1}};
            }).find("prefetch_factor=-1"),
            std::string::npos);
  std::string mismatch = msg([&] { DataLoader{data.inputs, Tensor::zeros({3})}; });
  EXPECT_NE(mismatch.find("size mismatch"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("{4, 2}"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("{3}"), std::string::npos) << mismatch;
  EXPECT_NE(msg([&] { DataLoader{Tensor::from_vector(std::vector<float>{1}, {})}; }).find("0-d"),
            std::string::npos);
  EXPECT_NE(msg([&] { DataLoader{Tensor()}; }).find("undefined"), std::string::npos);
  DataLoader::Iterator end;
  EXPECT_TRUE(end == std::default_sentinel);
  EXPECT_THROW((void)*end, Error);
  EXPECT_THROW(++end, Error);
}

// The prefetch thread gathers batches while this thread runs kernels on the ones it has: run under
// `make sanitize` (ASan + UBSan) and, built with -fsanitize=thread, under TSan. Also: every prefetch
// depth gives the same batches.
TEST(DataLoader, PrefetchThreadRunsAlongsideKernels) {
  const int64_t n = 64;
  std::vector<uint8_t> pixels(static_cast<size_t>(n * 3));
  for (size_t i = 0; i < pixels.size(); i++) pixels[i] = static_cast<uint8_t>(i * 13 % 256);
  Tensor images = Tensor::from_vector(pixels, {n, 3});
  Tensor labels = Tensor::from_vector(iota(n), {n});
  std::vector<std::vector<float>> reference;
  for (int64_t prefetch : {0, 1, 2, 4}) {
    SCOPED_TRACE(prefetch);
    DataLoader loader(
        images, labels,
        {.batch_size = 4, .shuffle = true, .drop_last = true, .seed = 9, .prefetch_factor = prefetch});
    std::vector<std::vector<float>> got;
    for (int epoch = 0; epoch < 3; epoch++) {
      for (auto& [x, y] : loader) {
        // A kernel on this thread ([4, 3] uint8 to float: the same kernel as PixelsToFloat).
        std::vector<float> v = lazygrad::data::pixels_to_float(x).to_vector<float>();
        std::vector<int64_t> rows = y.to_vector<int64_t>();
        for (size_t r = 0; r < rows.size(); r++)
          for (size_t c = 0; c < 3; c++)
            ASSERT_EQ(v[r * 3 + c],
                      static_cast<float>(pixels[static_cast<size_t>(rows[r]) * 3 + c]) / 255.0f);
        got.push_back(std::move(v));
      }
    }
    EXPECT_EQ(got.size(), 48u);
    if (reference.empty()) reference = got;
    EXPECT_EQ(got, reference);
  }
}
