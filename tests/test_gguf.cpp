// GGUF files (llama.cpp's weights): quantized blocks spelled out byte by byte dequantize to the
// values llama.cpp's formats define (computed by hand in the comments), F16/BF16/F32 tensors are
// the file's bytes over the mapping, the Python writer's fixture (scripts/make_gguf_fixture.py)
// reads back with every metadata type and the values numpy computed, and every corrupt file is a
// lazygrad::Error naming the file, the offset and the key or tensor, never a crash: truncation at
// every length, byte flips of the header, and each check one by one. Run it under `make sanitize`
// too. Kernels compiled here (2): the float16 -> float32 read of shape {2, 4} and the bfloat16 one
// of shape {5}; the fixture's F16 and BF16 tensors have the hand-written ones' shapes on purpose.
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/schedule.h"
#include "expect_error.h"
#include "ir/uop.h"
#include "lazygrad/gguf.h"
#include "lazygrad/lazygrad.h"
#include "runtime/buffer.h"
#include "tensor/tensor_impl.h"
#include "test_files.h"

namespace {

namespace fs = std::filesystem;
using lazygrad::GGMLType;
using lazygrad::GGUFFile;
using lazygrad::GGUFType;
using lazygrad::Shape;
using lazygrad::Tensor;

// ------------------------------------------------------------------------- a tiny GGUF builder

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}
void put_string(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out += s;
}
std::string bytes_of(std::initializer_list<uint8_t> bytes) { return std::string(bytes.begin(), bytes.end()); }

// One metadata entry: the key, the value's type, the value's bytes.
std::string entry(std::string_view key, GGUFType type, const std::string& value) {
  std::string out;
  put_string(out, key);
  put<uint32_t>(out, static_cast<uint32_t>(type));
  return out + value;
}
template <class T>
std::string entry_of(std::string_view key, GGUFType type, T value) {
  std::string v;
  put<T>(v, value);
  return entry(key, type, v);
}
std::string string_entry(std::string_view key, std::string_view value) {
  std::string v;
  put_string(v, value);
  return entry(key, GGUFType::String, v);
}

struct TensorSpec {
  TensorSpec(std::string name, uint32_t type, std::vector<uint64_t> ne, std::string data,
             std::optional<uint64_t> offset = std::nullopt)
      : name(std::move(name)), type(type), ne(std::move(ne)), data(std::move(data)), offset(offset) {}
  std::string name;
  uint32_t type;
  std::vector<uint64_t> ne;  // fastest-varying first, as the file lists them
  std::string data;
  std::optional<uint64_t> offset;  // default: after the previous tensor, aligned
};

// A whole file: header, metadata, tensor infos, padding to the alignment, data.
std::string gguf_file(const std::vector<std::string>& entries, const std::vector<TensorSpec>& tensors,
                      uint32_t version = 3, uint64_t alignment = 32) {
  std::string out = "GGUF";
  put<uint32_t>(out, version);
  put<uint64_t>(out, tensors.size());
  put<uint64_t>(out, entries.size());
  for (const std::string& e : entries) out += e;
  std::vector<uint64_t> offsets;
  uint64_t next = 0;
  for (const TensorSpec& t : tensors) {
    offsets.push_back(t.offset.value_or(next));
    next = offsets.back() + t.data.size();
    next += (alignment - next % alignment) % alignment;
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t n : t.ne) put<uint64_t>(out, n);
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, offsets.back());
  }
  if (tensors.empty()) return out;
  out.append((alignment - out.size() % alignment) % alignment, '\0');
  std::string data;
  for (size_t i = 0; i < tensors.size(); i++) {
    if (offsets[i] > (uint64_t{1} << 20)) continue;  // a test's offset far past the end: no data there
    if (data.size() < offsets[i] + tensors[i].data.size()) data.resize(offsets[i] + tensors[i].data.size());
    data.replace(offsets[i], tensors[i].data.size(), tensors[i].data);
  }
  return out + data;
}

// A directory of its own for each test, removed afterwards.
class GGUFTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("lazygrad-gguf-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& bytes, const std::string& name = "t.gguf") const {
    const fs::path path = dir_ / name;
    fs::remove(path);  // a new file, not a truncated one (ext4 flushes truncated files on close)
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path.string();
  }
  GGUFFile load(const std::string& bytes) const { return lazygrad::load_gguf(write(bytes)); }
  // load_gguf of `bytes` throws an Error with every one of `words` (and "load_gguf" and the path).
  void expect_bad(const std::string& bytes, std::initializer_list<std::string> words) const {
    const std::string path = write(bytes);
    std::vector<std::string> all(words);
    all.push_back("load_gguf: \"" + path + "\"");
    std::string msg = "(no lazygrad::Error thrown)";
    try {
      lazygrad::load_gguf(path);
    } catch (const lazygrad::Error& e) {
      msg = e.what();
    }
    for (const std::string& w : all)
      EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' is not in: " << msg;
  }

  fs::path dir_;
};

std::shared_ptr<lazygrad::Buffer> buffer_of(const Tensor& t) {
  const lazygrad::UOpPtr u = t.uop();
  const lazygrad::UOp* b = lazygrad::contiguous_buffer_node(u.get());
  return b ? b->as<std::shared_ptr<lazygrad::Buffer>>() : nullptr;
}

// The float32 values a dequantized tensor holds (its own host buffer: no kernel runs).
std::vector<float> host_floats(const Tensor& t) {
  const auto buffer = buffer_of(t);
  EXPECT_TRUE(buffer && buffer->dtype == lazygrad::kFloat32);
  if (!buffer) return {};
  const auto* p = static_cast<const float*>(buffer->host_ptr());
  return std::vector<float>(p, p + buffer->size);
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// ------------------------------------------------------------------- hand-computed blocks

TEST_F(GGUFTest, Q4_0BlocksDequantizeAsLlamaCppDefines) {
  // Block 0: d = half 0x3800 = 0.5. Byte j holds element j (low nibble) and element j + 16 (high);
  // x = (nibble - 8) * d.
  std::string block0 = bytes_of({0x00, 0x38});
  block0 += bytes_of({0x80, 0xF1});   // bytes 0, 1
  block0 += std::string(14, '\x88');  // bytes 2..15: nibbles 8, 8 -> 0
  // Block 1: d = half 0xC000 = -2.0; byte 15 = 0x3F: element 15 = (15 - 8) * -2 = -14, element 31 =
  // (3 - 8) * -2 = 10; the other bytes 0x08: low 8 -> 0, high 0 -> (0 - 8) * -2 = 16.
  std::string block1 = bytes_of({0x00, 0xC0}) + std::string(15, '\x08') + bytes_of({0x3F});
  const GGUFFile f =
      load(gguf_file({string_entry("general.architecture", "llama")}, {{"w", 2, {32, 2}, block0 + block1}}));
  EXPECT_EQ(f.at("general.architecture").as_string(), "llama");
  const Tensor& w = f.tensor("w");
  EXPECT_EQ(w.shape(), (Shape{2, 32}));  // ne [32, 2] reversed
  EXPECT_EQ(w.dtype(), lazygrad::kFloat32);
  std::vector<float> want(64, 0.0f);
  want[0] = -4.0f;  // byte 0 low nibble 0: (0 - 8) * 0.5
  want[16] = 0.0f;  // byte 0 high nibble 8: (8 - 8) * 0.5
  want[1] = -3.5f;  // byte 1 low nibble 1: (1 - 8) * 0.5
  want[17] = 3.5f;  // byte 1 high nibble 15: (15 - 8) * 0.5
  for (int j = 0; j < 15; j++) want[32 + 16 + j] = 16.0f;
  want[32 + 15] = -14.0f;
  want[32 + 31] = 10.0f;
  EXPECT_EQ(host_floats(w), want);
  EXPECT_EQ(f.tensor_infos[0].type, GGMLType::Q4_0);
  EXPECT_EQ(f.tensor_infos[0].nbytes, 36u);
}

TEST_F(GGUFTest, Q8_0BlocksDequantizeAsLlamaCppDefines) {
  // Block 0: d = half 0x3400 = 0.25, then 32 int8: -128 -1 0 1 127 5 and zeros; x = q * d.
  std::string block0 = bytes_of({0x00, 0x34, 0x80, 0xFF, 0x00, 0x01, 0x7F, 0x05}) + std::string(26, '\0');
  // Block 1: d = half 0x0001, the smallest subnormal half 2^-24; q[31] = 3 -> 3 * 2^-24, q[0] = -2.
  std::string block1 = bytes_of({0x01, 0x00, 0xFE}) + std::string(30, '\0') + bytes_of({0x03});
  const GGUFFile f = load(gguf_file({}, {{"w", 8, {64}, block0 + block1}}));
  std::vector<float> want(64, 0.0f);
  want[0] = -32.0f;  // -128 * 0.25
  want[1] = -0.25f;  // -1 * 0.25
  want[3] = 0.25f;
  want[4] = 31.75f;  // 127 * 0.25
  want[5] = 1.25f;   // 5 * 0.25
  want[32] = -2.0f * std::ldexp(1.0f, -24);
  want[63] = 3.0f * std::ldexp(1.0f, -24);  // 1.78813934e-07
  EXPECT_EQ(host_floats(f.tensor("w")), want);
}

TEST_F(GGUFTest, Q4_KSuperBlockDequantizesAsLlamaCppDefines) {
  // d = half 0x3C00 = 1.0, dmin = half 0x3800 = 0.5. The 6-bit scales and mins of the 8 sub-blocks:
  //   scale = {1, 2, 3, 4, 33, 18, 63, 5}, min = {0, 1, 2, 3, 17, 40, 0, 63},
  // packed as get_scale_min_k4 unpacks them:
  //   bytes 0-3:  scale j | (scale j+4 >> 4) << 6: 1|2<<6 = 0x81, 2|1<<6 = 0x42, 3|3<<6 = 0xC3, 4|0 = 0x04
  //   bytes 4-7:  min j | (min j+4 >> 4) << 6:     0|1<<6 = 0x40, 1|2<<6 = 0x81, 2|0 = 0x02, 3|3<<6 = 0xC3
  //   bytes 8-11: (scale j+4 & 15) | (min j+4 & 15) << 4: 0x11, 0x82, 0x0F, 0xF5
  // Sub-blocks 4-7 take the >= 4 branch: scale 4 = (byte 8 & 15) | (byte 0 >> 6) << 4 = 1 | 2 << 4 = 33.
  std::string block = bytes_of({0x00, 0x3C, 0x00, 0x38});
  block += bytes_of({0x81, 0x42, 0xC3, 0x04, 0x40, 0x81, 0x02, 0xC3, 0x11, 0x82, 0x0F, 0xF5});
  // 128 bytes of nibbles, 32 per pair of sub-blocks: byte l of chunk k holds element 64k + l (low
  // nibble, sub-block 2k) and element 64k + 32 + l (high nibble, sub-block 2k + 1). Low = l % 16,
  // high = 15 - l % 16.
  for (int k = 0; k < 4; k++)
    for (int l = 0; l < 32; l++) block += static_cast<char>((l % 16) | ((15 - l % 16) << 4));
  ASSERT_EQ(block.size(), 144u);
  const GGUFFile f = load(gguf_file({}, {{"w", 12, {256}, block}}));
  const std::vector<float> got = host_floats(f.tensor("w"));
  ASSERT_EQ(got.size(), 256u);
  // x = d * scale * q - dmin * min:
  EXPECT_EQ(got[0], 0.0f);           // sub-block 0, q 0:  1 * 0 - 0.5 * 0
  EXPECT_EQ(got[5], 5.0f);           // sub-block 0, q 5:  1 * 5 - 0
  EXPECT_EQ(got[33], 27.5f);         // sub-block 1, q 14: 2 * 14 - 0.5 * 1
  EXPECT_EQ(got[64 + 2], 5.0f);      // sub-block 2, q 2:  3 * 2 - 0.5 * 2
  EXPECT_EQ(got[96 + 31], -1.5f);    // sub-block 3, q 0:  4 * 0 - 0.5 * 3
  EXPECT_EQ(got[128 + 3], 90.5f);    // sub-block 4, q 3:  33 * 3 - 0.5 * 17
  EXPECT_EQ(got[160 + 0], 250.0f);   // sub-block 5, q 15: 18 * 15 - 0.5 * 40
  EXPECT_EQ(got[192 + 15], 945.0f);  // sub-block 6, q 15: 63 * 15 - 0
  EXPECT_EQ(got[224 + 31], -31.5f);  // sub-block 7, q 0:  5 * 0 - 0.5 * 63
  const float scale[8] = {1, 2, 3, 4, 33, 18, 63, 5}, min[8] = {0, 1, 2, 3, 17, 40, 0, 63};
  for (int i = 0; i < 256; i++) {
    const int sub = i / 32, l = i % 32;
    const float q = static_cast<float>(sub % 2 == 0 ? l % 16 : 15 - l % 16);
    EXPECT_EQ(got[i], scale[sub] * q - 0.5f * min[sub]) << "element " << i;
  }
}

TEST_F(GGUFTest, HalfAndBFloat16AreTheFilesBitsOverTheMapping) {
  // F16: 1.0, -0.0, 2^-24 (the smallest subnormal), 1023 * 2^-24 (the largest), 65504, -inf, -2.5.
  std::string f16;
  for (uint16_t h : {0x3C00, 0x8000, 0x0001, 0x03FF, 0x7BFF, 0xFC00, 0xC100, 0x3555}) put<uint16_t>(f16, h);
  // BF16: 1.0, -0.0, 3.140625 (0x4049), -123.5 (0xC2F7: 1.9296875 * 2^6), 2^-133 (0x0001, subnormal).
  std::string bf16;
  for (uint16_t h : {0x3F80, 0x8000, 0x4049, 0xC2F7, 0x0001}) put<uint16_t>(bf16, h);
  std::string f32;
  for (float x : {1.5f, -0.0f, 1e-40f}) put<float>(f32, x);
  const std::string path = write(gguf_file(
      {}, {{"h", 1, {4, 2}, f16}, {"b", 30, {5}, bf16}, {"f", 0, {3}, f32}, {"empty", 0, {0, 3}, ""}}));
  const GGUFFile f = lazygrad::load_gguf(path);
  const std::string file_bytes = lazygrad::test::read_file(path);
  for (const auto& [name, dtype, bytes] :
       {std::tuple{"h", lazygrad::kFloat16, f16}, std::tuple{"b", lazygrad::kBFloat16, bf16},
        std::tuple{"f", lazygrad::kFloat32, f32}}) {
    const Tensor& t = f.tensor(name);
    EXPECT_EQ(t.dtype(), dtype) << name;
    const auto buffer = buffer_of(t);
    ASSERT_TRUE(buffer) << name;
    EXPECT_TRUE(buffer->external()) << name << " was copied, not mapped";
    EXPECT_EQ(std::string(static_cast<const char*>(buffer->host_ptr()), buffer->nbytes()), bytes) << name;
    // The data section starts at a multiple of 32 and each tensor's offset is one: aligned for any dtype.
    const lazygrad::GGUFTensorInfo* info = f.tensor_info(name);
    EXPECT_EQ(file_bytes.substr(f.data_offset + info->offset, info->nbytes), bytes) << name;
  }
  EXPECT_EQ(f.tensor("h").shape(), (Shape{2, 4}));
  EXPECT_EQ(f.tensor("empty").shape(), (Shape{3, 0}));
  // The values through lazygrad's own conversion (its kernels flush float32 subnormals to zero, so
  // BF16's 2^-133 is checked by its bits above only).
  const std::vector<float> h = f.tensor("h").to_vector<float>();
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(bits(h[1]), 0x80000000u);  // -0.0
  EXPECT_EQ(h[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[3], 1023 * std::ldexp(1.0f, -24));
  EXPECT_EQ(h[4], 65504.0f);
  EXPECT_EQ(h[5], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(h[6], -2.5f);
  EXPECT_EQ(h[7], 0.333251953125f);
  const std::vector<float> b = f.tensor("b").to_vector<float>();
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(bits(b[1]), 0x80000000u);
  EXPECT_EQ(b[2], 3.140625f);
  EXPECT_EQ(b[3], -123.5f);
}

TEST_F(GGUFTest, DequantizeChecksItsArguments) {
  std::vector<float> out(32);
  const std::string block(34, '\0');
  const auto bytes = std::as_bytes(std::span(block));
  lazygrad::ggml_dequantize(GGMLType::Q8_0, bytes, out);
  expect_error([&] { lazygrad::ggml_dequantize(GGMLType::Q8_0, bytes.first(33), out); }, "ggml_dequantize",
               "34 bytes");
  expect_error([&] { lazygrad::ggml_dequantize(GGMLType::F16, bytes, out); }, "ggml_dequantize", "F16");
  expect_error([&] { lazygrad::ggml_dequantize(GGMLType::Q8_0, bytes, std::span(out).first(31)); },
               "ggml_dequantize", "31 values are not whole Q8_0 blocks of 32");
  EXPECT_EQ(lazygrad::ggml_block(GGMLType::Q4_K).bytes, 144u);
  EXPECT_EQ(lazygrad::ggml_block(static_cast<GGMLType>(14)).elements, 0u);  // Q6_K: not read
  EXPECT_EQ(lazygrad::ggml_type_name(static_cast<GGMLType>(14)), "Q6_K");
  EXPECT_EQ(lazygrad::ggml_type_name(static_cast<GGMLType>(1000)), "type 1000");
}

TEST_F(GGUFTest, ValuesBuiltByHandAreCheckedToo) {
  lazygrad::GGUFValue v;  // a uint8 with no bytes
  v.key = "k";
  expect_error([&] { v.as_int(); }, {"\"k\"", "holds 0 values, not one"});
  v.element_type = v.type = static_cast<GGUFType>(99);
  v.bytes.resize(8);
  EXPECT_EQ(v.size(), 0u);
  expect_error([&] { v.as_double(); }, {"\"k\"", "holds 0 values"});
  v.element_type = v.type = GGUFType::Int16;
  EXPECT_EQ(v.size(), 4u);
  EXPECT_EQ(v.int_at(3), 0);
  expect_error([&] { v.int_at(4); }, {"\"k\"", "element 4 of 4"});
}

// ------------------------------------------------------------ the Python writer's fixture

fs::path fixture(const std::string& name) { return lazygrad::test::fixture_dir() / "gguf" / name; }

TEST_F(GGUFTest, PythonWritersFixtureLoadsWithEveryMetadataType) {
  const GGUFFile f = lazygrad::load_gguf(fixture("mixed.gguf").string());
  EXPECT_EQ(f.version, 3u);
  EXPECT_EQ(f.alignment, 64u);
  EXPECT_EQ(f.data_offset % 64, 0u);
  EXPECT_EQ(f.metadata.size(), 21u);
  EXPECT_EQ(f.at("general.architecture").as_string(), "llama");
  EXPECT_EQ(f.at("general.alignment").type, GGUFType::UInt32);
  EXPECT_EQ(f.at("test.uint8").as_int(), 200);
  EXPECT_EQ(f.at("test.uint8").type, GGUFType::UInt8);
  EXPECT_EQ(f.at("test.int8").as_int(), -100);
  EXPECT_EQ(f.at("test.uint16").as_int(), 60000);
  EXPECT_EQ(f.at("test.int16").as_int(), -30000);
  EXPECT_EQ(f.at("test.uint32").as_uint(), 4000000000u);
  EXPECT_EQ(f.at("test.int32").as_int(), -2000000000);
  EXPECT_EQ(f.at("test.float32").as_double(), 3.25);
  EXPECT_EQ(f.at("test.bool").as_bool(), true);
  EXPECT_EQ(f.at("test.string").as_string(), "h\xc3\xa9llo, GGUF");
  EXPECT_EQ(f.at("test.uint64").as_uint(), (uint64_t{1} << 63) + 5);
  EXPECT_EQ(f.at("test.int64").as_int(), -(int64_t{1} << 40));
  EXPECT_EQ(f.at("test.float64").as_double(), 0.1);
  EXPECT_EQ(f.at("test.strings").as_strings(),
            (std::vector<std::string>{"<s>", "", "\xe2\x96\x81the", "<0x0A>"}));
  EXPECT_EQ(f.at("test.int32s").as_ints(), (std::vector<int64_t>{1, -2, 2147483647}));
  EXPECT_EQ(f.at("test.float32s").as_floats(), (std::vector<float>{0.5f, -1.25f, 1e-3f}));
  EXPECT_EQ(f.at("test.bools").size(), 3u);
  EXPECT_EQ(f.at("test.bools").int_at(1), 0);
  EXPECT_EQ(f.at("test.bools").int_at(2), 1);
  EXPECT_EQ(f.at("test.uint8s").as_ints(), (std::vector<int64_t>{0, 255}));
  EXPECT_EQ(f.at("test.uint64s").element_type, GGUFType::UInt64);
  EXPECT_EQ(f.at("test.empty").as_doubles(), std::vector<double>{});
  EXPECT_EQ(f.at("test.empty").element_type, GGUFType::Float64);
  // A value of the wrong kind is an Error naming the key.
  expect_error([&] { f.at("test.string").as_int(); }, {"\"test.string\"", "string", "integer"});
  expect_error([&] { f.at("test.uint64").as_int(); }, {"\"test.uint64\"", "9223372036854775813"});
  expect_error([&] { f.at("test.int8").as_uint(); }, {"\"test.int8\"", "-100"});
  expect_error([&] { f.at("test.float32s").as_strings(); }, {"\"test.float32s\"", "array of float32"});
  expect_error([&] { f.at("test.strings").as_ints(); }, {"\"test.strings\"", "array of string"});
  expect_error([&] { f.at("test.int32s").as_int(); }, {"\"test.int32s\"", "an integer"});
  expect_error([&] { f.at("test.bool").as_double(); }, {"\"test.bool\"", "a number"});
  expect_error([&] { f.at("test.uint64s").as_ints(); }, {"\"test.uint64s\"", "18446744073709551615"});
  expect_error([&] { f.at("no.such.key"); }, {"mixed.gguf", "no metadata \"no.such.key\""});
  expect_error([&] { f.tensor("no.such.tensor"); }, {"mixed.gguf", "no tensor \"no.such.tensor\""});
}

TEST_F(GGUFTest, PythonWritersFixtureHasTheValuesNumpyComputed) {
  const GGUFFile f = lazygrad::load_gguf(fixture("mixed.gguf").string());
  std::ifstream in(fixture("mixed_values.txt"));
  ASSERT_TRUE(in) << fixture("mixed_values.txt");
  size_t tensors = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string name, type, word;
    words >> name >> type;
    Shape shape;
    while (words >> word && word != ":") shape.push_back(std::stoll(word));
    std::vector<float> want;
    while (words >> word) want.push_back(static_cast<float>(std::strtod(word.c_str(), nullptr)));
    SCOPED_TRACE(name);
    const lazygrad::GGUFTensorInfo* info = f.tensor_info(name);
    ASSERT_TRUE(info);
    EXPECT_EQ(lazygrad::ggml_type_name(info->type), type);
    const Tensor& t = f.tensor(name);
    EXPECT_EQ(t.shape(), shape);
    const std::vector<float> got = t.to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); i++) EXPECT_EQ(bits(got[i]), bits(want[i])) << "element " << i;
    tensors++;
  }
  EXPECT_EQ(tensors, f.tensor_infos.size());
  EXPECT_EQ(tensors, 7u);
  EXPECT_EQ(f.tensor("plain.f32").shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(f.tensor_info("plain.f32")->ne, (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(f.tensor("plain.i32").dtype(), lazygrad::kInt32);
  EXPECT_EQ(f.tensor("plain.i32").to_vector<int32_t>(), (std::vector<int32_t>{-7, 0, 16777216}));
}

TEST_F(GGUFTest, MetadataOnlyReadsNoTensor) {
  const GGUFFile f = lazygrad::load_gguf_metadata(fixture("mixed.gguf").string());
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_EQ(f.tensor_infos.size(), 7u);
  EXPECT_EQ(f.tensor_info("quant.q4_k")->shape, (Shape{2, 256}));
  EXPECT_EQ(f.tensor_info("quant.q4_k")->nbytes, 288u);
  expect_error([&] { f.tensor("quant.q4_k"); }, {"load_gguf_metadata"});
}

// ------------------------------------------------------------------------------ bad files

TEST_F(GGUFTest, EveryTruncationIsAnErrorAndNeverACrash) {
  const std::string whole = lazygrad::test::read_file(fixture("mixed.gguf"));
  const GGUFFile f = lazygrad::load_gguf_metadata(fixture("mixed.gguf").string());
  uint64_t end = f.data_offset;  // where the last tensor's data ends: the padding after it is optional
  for (const auto& t : f.tensor_infos) end = std::max(end, f.data_offset + t.offset + t.nbytes);
  ASSERT_LT(end, whole.size() + 1);
  size_t errors = 0;
  for (size_t n = 0; n < whole.size(); n++) {
    const std::string path = write(whole.substr(0, n), "cut.gguf");
    try {
      lazygrad::load_gguf_metadata(path);
      EXPECT_GE(n, end) << "a file cut to " << n << " bytes loaded";
    } catch (const lazygrad::Error& e) {
      EXPECT_LT(n, end) << e.what();
      EXPECT_NE(std::string(e.what()).find("cut.gguf"), std::string::npos) << e.what();
      errors++;
    }
  }
  EXPECT_EQ(errors, end);
  // A few through the whole load (tensors built): the cut inside the last tensor, and just past it.
  expect_bad(whole.substr(0, end - 1), {"tensor \"quant.q4_k\"", "runs past the end", "truncated?"});
  EXPECT_EQ(load(whole.substr(0, end)).tensors.size(), 7u);
  expect_bad(whole.substr(0, 20), {"the file ends in the metadata count", "(at byte 16 of the file)"});
}

TEST_F(GGUFTest, ByteFlipsInTheHeaderLoadOrThrowNeverCrash) {
  const std::string whole = lazygrad::test::read_file(fixture("mixed.gguf"));
  const GGUFFile f = lazygrad::load_gguf_metadata(fixture("mixed.gguf").string());
  size_t loaded = 0, refused = 0;
  for (size_t i = 0; i < f.data_offset; i++)
    for (const uint8_t x : {0x01, 0x80, 0xFF}) {
      std::string bytes = whole;
      bytes[i] = static_cast<char>(bytes[i] ^ x);
      try {
        load(bytes);
        loaded++;
      } catch (const lazygrad::Error&) {
        refused++;
      }
    }
  EXPECT_EQ(loaded + refused, 3 * f.data_offset);
  EXPECT_GT(refused, 0u);  // a length, a type or a count broken
  EXPECT_GT(loaded, 0u);   // a flipped letter of a key or a string
}

TEST_F(GGUFTest, BadHeadersAreErrorsNamingTheOffset) {
  std::string file = gguf_file({}, {});
  expect_bad("GGUX" + file.substr(4), {"not a GGUF file", "\"GGUX\"", "(at byte 0 of the file)"});
  expect_bad(
      "\x7f"
      "ELF" +
          file.substr(4),
      {"not a GGUF file", "\\x7fELF"});
  expect_bad("", {"the file ends in the magic", "0 left"});
  expect_bad(gguf_file({}, {}, 1), {"GGUF version 1 is not supported", "(at byte 4 of the file)"});
  expect_bad(gguf_file({}, {}, 4), {"unsupported GGUF version 4", "2 and 3"});
  expect_bad(gguf_file({}, {}, 0x03000000), {"big-endian"});
  EXPECT_EQ(load(gguf_file({}, {}, 2)).version, 2u);
  EXPECT_EQ(load(gguf_file({}, {}, 3)).metadata.size(), 0u);

  // Counts that cannot fit in the file are refused before anything is allocated.
  std::string huge = "GGUF";
  put<uint32_t>(huge, 3);
  put<uint64_t>(huge, 0);
  put<uint64_t>(huge, uint64_t{1} << 62);
  expect_bad(huge, {"4611686018427387904 metadata entries cannot fit", "(at byte 16 of the file)"});
  huge = "GGUF";
  put<uint32_t>(huge, 3);
  put<uint64_t>(huge, ~uint64_t{0});
  put<uint64_t>(huge, 0);
  expect_bad(huge, {"18446744073709551615 tensor infos cannot fit", "(at byte 8 of the file)"});
}

TEST_F(GGUFTest, BadMetadataIsAnErrorNamingTheKey) {
  // A string longer than the file: the length is checked before any allocation.
  std::string value;
  put<uint64_t>(value, uint64_t{1} << 60);
  expect_bad(
      gguf_file({entry("k", GGUFType::String, value + "abc")}, {}),
      {"the value of \"k\" has length 1152921504606846976", "3 bytes left", "(at byte 37 of the file)"});
  // A key longer than the file.
  std::string key;
  put<uint64_t>(key, ~uint64_t{0});
  expect_bad(gguf_file({key + std::string(16, 'x')}, {}),
             {"the key of metadata entry 0 has length 18446744073709551615"});
  // An array count beyond the file.
  std::string array;
  put<uint32_t>(array, static_cast<uint32_t>(GGUFType::Float32));
  put<uint64_t>(array, uint64_t{1} << 61);
  expect_bad(gguf_file({entry("a", GGUFType::Array, array)}, {}),
             {"metadata \"a\"", "an array of 2305843009213693952 float32 values cannot fit"});
  // Strings in an array: each is at least its 8-byte length.
  array.clear();
  put<uint32_t>(array, static_cast<uint32_t>(GGUFType::String));
  put<uint64_t>(array, 4);
  expect_bad(gguf_file({entry("s", GGUFType::Array, array + std::string(24, '\0'))}, {}),
             {"metadata \"s\"", "4 string values cannot fit"});
  // Arrays of arrays, unknown types, bools other than 0 and 1, empty and duplicate keys.
  array.clear();
  put<uint32_t>(array, static_cast<uint32_t>(GGUFType::Array));
  put<uint64_t>(array, 0);
  expect_bad(gguf_file({entry("n", GGUFType::Array, array)}, {}), {"metadata \"n\"", "arrays of arrays"});
  expect_bad(gguf_file({entry("u", static_cast<GGUFType>(13), "")}, {}),
             {"metadata \"u\"", "unknown value type 13"});
  array.clear();
  put<uint32_t>(array, 77);
  put<uint64_t>(array, 0);
  expect_bad(gguf_file({entry("e", GGUFType::Array, array)}, {}), {"unknown array element type 77"});
  expect_bad(gguf_file({entry("b", GGUFType::Bool, "\x02")}, {}),
             {"metadata \"b\"", "a bool is 2, not 0 or 1"});
  expect_bad(gguf_file({entry("", GGUFType::Bool, "\x01")}, {}), {"metadata entry 0 has an empty key"});
  expect_bad(
      gguf_file({entry_of<uint32_t>("x", GGUFType::UInt32, 1), entry_of<uint32_t>("x", GGUFType::UInt32, 2)},
                {}),
      {"metadata \"x\"", "the key appears twice", "(at byte 41 of the file)"});
  // general.alignment: a uint32 power of two.
  expect_bad(gguf_file({entry_of<uint32_t>("general.alignment", GGUFType::UInt32, 48)}, {}),
             {"\"general.alignment\"", "48 is not a power of two"});
  expect_bad(gguf_file({entry_of<uint32_t>("general.alignment", GGUFType::UInt32, 0)}, {}),
             {"0 is not a power of two"});
  expect_bad(gguf_file({entry_of<uint64_t>("general.alignment", GGUFType::UInt64, 64)}, {}),
             {"\"general.alignment\"", "must be a uint32, found uint64"});
}

TEST_F(GGUFTest, BadTensorInfosAreErrorsNamingTheTensor) {
  const std::string f32(16, '\0');
  expect_bad(gguf_file({}, {{"w", 0, {4}, f32}, {"w", 0, {4}, f32}}),
             {"tensor \"w\"", "the name appears twice"});
  expect_bad(gguf_file({}, {{"w", 0, {1, 1, 1, 1, 4}, f32}}),
             {"tensor \"w\"", "5 dimensions, more than ggml's 4"});
  // A size is named by its index in the file (ne, fastest-varying first) and in the shape (reversed).
  expect_bad(gguf_file({}, {{"w", 0, {4, uint64_t{1} << 62}, f32}}),
             {"tensor \"w\"",
              "size 4611686018427387904 of ne[1] (dimension 0 of the shape) makes the tensor too large"});
  expect_bad(
      gguf_file({}, {{"w", 0, {uint64_t{1} << 40, uint64_t{1} << 40, 4}, f32}}),
      {"tensor \"w\"", "size 1099511627776 of ne[1] (dimension 1 of the shape) makes the tensor too large"});
  expect_bad(gguf_file({}, {{"w", 0, {~uint64_t{0}}, f32}}), {"tensor \"w\"", "too large"});
  expect_bad(gguf_file({}, {{"w", 14, {256}, std::string(210, '\0')}}),
             {"tensor \"w\"", "ggml type 14 (Q6_K) is not supported"});
  expect_bad(gguf_file({}, {{"w", 99, {4}, f32}}),
             {"tensor \"w\"", "ggml type 99 (type 99) is not supported"});
  expect_bad(
      gguf_file({}, {{"w", 8, {48}, std::string(51, '\0')}}),
      {"tensor \"w\"",
       "rows of 48 elements are not whole Q8_0 blocks of 32 (a row is ne[0] (dimension 0 of the shape))"});
  expect_bad(
      gguf_file({}, {{"w", 8, {48, 2}, std::string(102, '\0')}}),
      {"tensor \"w\"",
       "rows of 48 elements are not whole Q8_0 blocks of 32 (a row is ne[0] (dimension 1 of the shape))"});
  expect_bad(gguf_file({}, {{"w", 8, {}, std::string(34, '\0')}}),
             {"tensor \"w\"",
              "rows of 1 elements are not whole Q8_0 blocks of 32 (a row is a scalar's one element)"});
  expect_bad(gguf_file({}, {{"w", 0, {4}, f32, 8}}),
             {"tensor \"w\"", "data offset 8 is not a multiple of the alignment 32"});
  expect_bad(gguf_file({}, {{"w", 0, {4}, f32}, {"v", 0, {8}, f32, 0}}),
             {"runs past the end of the data section"});
  expect_bad(gguf_file({}, {{"w", 0, {4}, f32, uint64_t{1} << 63}}), {"tensor \"w\"", "runs past the end"});
  expect_bad(gguf_file({}, {{"w", 0, {4}, f32}, {"v", 0, {4}, f32, 0}}), {"overlaps that of tensor"});
  // Names: any bytes (GGUF says UTF-8; llama.cpp does not check either), but a length that fits.
  EXPECT_EQ(load(gguf_file({}, {{std::string("\xff\x00z", 3), 0, {4}, f32}})).tensors.size(), 1u);
  // n_dims 0 is a scalar; a tensor after the padding must still be found in the file.
  EXPECT_EQ(load(gguf_file({}, {{"s", 0, {}, std::string(4, '\0')}})).tensor("s").shape(), Shape{});
  std::string no_padding = gguf_file({}, {{"w", 0, {0}, ""}});
  EXPECT_EQ(load(no_padding).tensor("w").shape(), Shape{0});
}

TEST_F(GGUFTest, MisalignedPlainTensorsAreCopiedNotMapped) {
  // general.alignment 1 lets a float tensor start at an odd byte: the kernels' typed loads need it
  // aligned, so it is copied (still the same values).
  std::string f32;
  for (float x : {1.0f, -2.0f}) put<float>(f32, x);
  const GGUFFile f = load(gguf_file({entry_of<uint32_t>("general.alignment", GGUFType::UInt32, 1)},
                                    {{"pad", 24, {1}, "\x07"}, {"w", 0, {2}, f32}}, 3, 1));
  EXPECT_EQ(f.alignment, 1u);
  EXPECT_EQ(f.tensor_info("w")->offset, 1u);
  ASSERT_NE((f.data_offset + 1) % 4, 0u);  // the mapping is page-aligned: this is the address's alignment
  EXPECT_FALSE(buffer_of(f.tensor("w"))->external());
  EXPECT_EQ(f.tensor("w").to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(f.tensor("pad").dtype(), lazygrad::kInt8);
}

}  // namespace
