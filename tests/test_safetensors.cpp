// safetensors checkpoints: files written the way PyTorch's ecosystem writes them load with the
// values PyTorch put in them, save_safetensors writes the reference implementation's bytes, every
// dtype and the metadata round-trip, saving is atomic, and every corrupt file is a lazygrad::Error
// that names the file and the byte offset, never a crash (run it under `make sanitize` too).
//
// The fixture files come from scripts/fixtures_safetensors.py (see its docstring); the directory is
// $LAZYGRAD_TEST_FIXTURES/safetensors, or the source tree's. Kernels compiled here (19): the float16
// and bfloat16 reads and writes of one [2, 3] shape, a transpose's copy, a failing division, an add,
// and the zero-copy tests' reads, in-place updates and small SGD steps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/schedule.h"
#include "ir/uop.h"
#include "lazygrad/lazygrad.h"
#include "lazygrad/safetensors.h"
#include "runtime/buffer.h"
#include "tensor/tensor_impl.h"

namespace {

namespace fs = std::filesystem;
using lazygrad::DType;
using lazygrad::SafetensorsMetadata;
using lazygrad::Shape;
using lazygrad::StateDict;
using lazygrad::Tensor;

// ------------------------------------------------------------------------------------- helpers

fs::path fixture_dir() {
  const char* dir = std::getenv("LAZYGRAD_TEST_FIXTURES");
#ifdef LAZYGRAD_FIXTURE_DIR
  if (!dir || !*dir) dir = LAZYGRAD_FIXTURE_DIR;
#endif
  return fs::path(dir ? dir : "tests/fixtures") / "safetensors";
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  // A new file rather than a truncated one: ext4 flushes a truncated file to disk when it is closed
  // (auto_da_alloc), which made the thousands of small files below take seconds.
  fs::remove(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A directory of its own for each test, removed afterwards.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("lazygrad-safetensors-" + std::to_string(::getpid()) + "-" +
                                        info->test_suite_name() + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path path(const std::string& name) const { return dir_ / name; }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

// A safetensors file from a header and a data region, with nothing checked or padded.
std::string file_of(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; i++) out[i] = static_cast<char>(n >> (8 * i) & 0xFF);
  return out + header + data;
}

// The expected contents (values.txt, see scripts/fixtures_safetensors.py).
struct Expected {
  std::string code;  // the format's dtype name
  Shape shape;
  std::vector<std::string> values;
};

struct Fixture {
  std::map<std::string, Expected> tensors;
  SafetensorsMetadata metadata;
};

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 's' ? ' ' : c == 't' ? '\t' : c == 'n' ? '\n' : c;
  }
  return out;
}

const Fixture& fixture() {
  static const Fixture loaded = [] {
    Fixture f;
    std::ifstream in(fixture_dir() / "values.txt");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream tokens(line);
      std::string kind;
      if (!(tokens >> kind) || kind[0] == '#') continue;
      std::string name, a, b;
      tokens >> name;
      if (kind == "metadata") {
        tokens >> a;
        f.metadata[unescape(name)] = unescape(a);
        continue;
      }
      Expected e;
      tokens >> e.code >> a;
      if (a != "-") {
        std::istringstream dims(a);
        for (std::string d; std::getline(dims, d, ',');) e.shape.push_back(std::stoll(d));
      }
      while (tokens >> b) e.values.push_back(b);
      f.tensors[unescape(name)] = e;
    }
    return f;
  }();
  return loaded;
}

// The test's own table of the format's names (not the library's, so a swapped entry there shows).
DType dtype_of_code(const std::string& code) {
  static const std::map<std::string, DType> codes = {
      {"F64", lazygrad::kFloat64},   {"F32", lazygrad::kFloat32}, {"F16", lazygrad::kFloat16},
      {"BF16", lazygrad::kBFloat16}, {"I64", lazygrad::kInt64},   {"I32", lazygrad::kInt32},
      {"I16", lazygrad::kInt16},     {"I8", lazygrad::kInt8},     {"U64", lazygrad::kUInt64},
      {"U32", lazygrad::kUInt32},    {"U16", lazygrad::kUInt16},  {"U8", lazygrad::kUInt8},
      {"BOOL", lazygrad::kBool}};
  return codes.at(code);
}

bool is_float_code(const std::string& code) { return code[0] == 'F' || code == "BF16"; }

// Checks every tensor of `got` against the fixture: names, dtype, shape, and every value exactly
// (floats bit for bit, so -0.0 and the subnormals count; NaN matches NaN).
void expect_fixture_values(const StateDict& got) {
  const Fixture& want = fixture();
  ASSERT_FALSE(want.tensors.empty()) << "no fixture values in " << fixture_dir() / "values.txt";
  ASSERT_EQ(got.size(), want.tensors.size());
  for (const auto& [name, e] : want.tensors) {
    SCOPED_TRACE("tensor " + name);
    auto it = got.find(name);
    ASSERT_NE(it, got.end());
    const Tensor& t = it->second;
    EXPECT_EQ(t.dtype(), dtype_of_code(e.code));
    EXPECT_EQ(t.shape(), e.shape);
    if (is_float_code(e.code)) {
      const std::vector<double> v = t.to_vector<double>();
      ASSERT_EQ(v.size(), e.values.size());
      for (size_t i = 0; i < v.size(); i++) {
        const double w = std::strtod(e.values[i].c_str(), nullptr);
        if (std::isnan(w))
          EXPECT_TRUE(std::isnan(v[i])) << "element " << i;
        else
          EXPECT_EQ(std::memcmp(&v[i], &w, sizeof w), 0) << "element " << i << ": " << v[i] << " vs " << w;
      }
    } else if (e.code[0] == 'U') {
      const std::vector<uint64_t> v = t.to_vector<uint64_t>();
      ASSERT_EQ(v.size(), e.values.size());
      for (size_t i = 0; i < v.size(); i++) EXPECT_EQ(v[i], std::stoull(e.values[i])) << "element " << i;
    } else {
      const std::vector<int64_t> v = t.to_vector<int64_t>();
      ASSERT_EQ(v.size(), e.values.size());
      for (size_t i = 0; i < v.size(); i++) EXPECT_EQ(v[i], std::stoll(e.values[i])) << "element " << i;
    }
  }
}

// The fixture's tensors built in memory rather than loaded: float16 and bfloat16 are lazy casts
// from float32 (exact: the values are representable), so saving computes them.
StateDict fixture_tensors_built_in_memory() {
  StateDict out;
  for (const auto& [name, e] : fixture().tensors) {
    const DType dt = dtype_of_code(e.code);
    std::vector<double> as_double;
    std::vector<int64_t> as_int;
    std::vector<uint64_t> as_uint;
    for (const std::string& v : e.values) {
      as_double.push_back(std::strtod(v.c_str(), nullptr));
      if (!is_float_code(e.code))
        (e.code[0] == 'U' ? as_uint.push_back(std::stoull(v)) : as_int.push_back(std::stoll(v)));
    }
    Tensor t;
    switch (dt) {
      case lazygrad::kFloat64:
        t = Tensor::from_vector(as_double, e.shape);
        break;
      case lazygrad::kFloat32:
      case lazygrad::kFloat16:
      case lazygrad::kBFloat16:
        t = Tensor::from_vector(std::vector<float>(as_double.begin(), as_double.end()), e.shape).to(dt);
        break;
      case lazygrad::kUInt64:
        t = Tensor::from_vector(as_uint, e.shape);
        break;
      case lazygrad::kUInt32:
        t = Tensor::from_vector(std::vector<uint32_t>(as_uint.begin(), as_uint.end()), e.shape);
        break;
      case lazygrad::kUInt16:
        t = Tensor::from_vector(std::vector<uint16_t>(as_uint.begin(), as_uint.end()), e.shape);
        break;
      case lazygrad::kUInt8:
        t = Tensor::from_vector(std::vector<uint8_t>(as_uint.begin(), as_uint.end()), e.shape);
        break;
      case lazygrad::kInt64:
        t = Tensor::from_vector(as_int, e.shape);
        break;
      case lazygrad::kInt32:
        t = Tensor::from_vector(std::vector<int32_t>(as_int.begin(), as_int.end()), e.shape);
        break;
      case lazygrad::kInt16:
        t = Tensor::from_vector(std::vector<int16_t>(as_int.begin(), as_int.end()), e.shape);
        break;
      case lazygrad::kInt8:
        t = Tensor::from_vector(std::vector<int8_t>(as_int.begin(), as_int.end()), e.shape);
        break;
      case lazygrad::kBool:
        t = Tensor::from_vector(std::vector<bool>(as_int.begin(), as_int.end()), e.shape);
        break;
    }
    out.emplace(name, t);
  }
  return out;
}

// Runs fn, which must throw lazygrad::Error whose message contains every one of `words`.
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "no lazygrad::Error thrown";
  } catch (const lazygrad::Error& e) {
    const std::string msg = e.what();
    for (const std::string& w : words)
      EXPECT_NE(msg.find(w), std::string::npos) << "\"" << w << "\" not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another exception: " << e.what();
  }
}

// -------------------------------------------------------------------- files from the ecosystem

TEST_F(SafetensorsTest, ReferenceFileLoadsWithPyTorchsValues) {
  const std::string file = (fixture_dir() / "reference.safetensors").string();
  expect_fixture_values(lazygrad::load_safetensors(file));
  EXPECT_EQ(lazygrad::load_safetensors_metadata(file), fixture().metadata);
}

TEST_F(SafetensorsTest, ForeignLayoutLoadsTheSame) {
  // Spaces in the JSON, \u escapes with a surrogate pair, another order, unaligned data, metadata last.
  const std::string file = (fixture_dir() / "foreign.safetensors").string();
  expect_fixture_values(lazygrad::load_safetensors(file));
  EXPECT_EQ(lazygrad::load_safetensors_metadata(file), fixture().metadata);
}

TEST_F(SafetensorsTest, SaveWritesTheReferenceImplementationsBytes) {
  const std::string reference = read_bytes(fixture_dir() / "reference.safetensors");
  ASSERT_FALSE(reference.empty());
  // Loaded tensors written back, and the same values built in memory (lazy half casts included).
  lazygrad::save_safetensors(path("loaded.safetensors"),
                             lazygrad::load_safetensors(fixture_dir() / "reference.safetensors"),
                             fixture().metadata);
  EXPECT_EQ(read_bytes(path("loaded.safetensors")), reference);
  const StateDict built = fixture_tensors_built_in_memory();
  lazygrad::save_safetensors(path("built.safetensors"), built, fixture().metadata);
  EXPECT_EQ(read_bytes(path("built.safetensors")), reference);
  // For scripts/fixtures_safetensors.py --check, which reads our file with torch.
  if (const char* out = std::getenv("LAZYGRAD_SAFETENSORS_EXPORT"))
    lazygrad::save_safetensors((fs::path(out) / "lazygrad_written.safetensors").string(), built,
                               fixture().metadata);
}

TEST_F(SafetensorsTest, EveryDTypeRoundTrips) {
  lazygrad::save_safetensors(path("all.safetensors"), fixture_tensors_built_in_memory(), fixture().metadata);
  expect_fixture_values(lazygrad::load_safetensors(path("all.safetensors")));
  EXPECT_EQ(lazygrad::load_safetensors_metadata(path("all.safetensors")), fixture().metadata);
}

// The reference implementation's own serialization examples, byte for byte.
TEST_F(SafetensorsTest, ReferenceImplementationExamples) {
  std::string floats;
  for (float f : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) floats.append(reinterpret_cast<const char*>(&f), sizeof f);
  const Tensor x = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {1, 2, 3});
  lazygrad::save_safetensors(path("a.safetensors"), {{"attn.0", x}});
  EXPECT_EQ(read_bytes(path("a.safetensors")),
            file_of(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})", floats));
  lazygrad::save_safetensors(path("b.safetensors"), {{"attn0", x.reshape({1, 1, 2, 3})}});
  EXPECT_EQ(read_bytes(path("b.safetensors")),
            file_of(R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       )", floats));
  lazygrad::save_safetensors(path("c.safetensors"), {});
  EXPECT_EQ(read_bytes(path("c.safetensors")), file_of("{}      "));
  lazygrad::save_safetensors(path("d.safetensors"), {}, {{"framework", "pt"}});
  EXPECT_EQ(read_bytes(path("d.safetensors")), file_of(R"({"__metadata__":{"framework":"pt"}}     )"));
  EXPECT_TRUE(lazygrad::load_safetensors(path("d.safetensors")).empty());
  EXPECT_EQ(lazygrad::load_safetensors_metadata(path("d.safetensors")),
            (SafetensorsMetadata{{"framework", "pt"}}));
  EXPECT_TRUE(lazygrad::load_safetensors_metadata(path("a.safetensors")).empty());
}

// ----------------------------------------------------------------------------------- round trips

TEST_F(SafetensorsTest, ViewsAndLazyTensorsAreSavedContiguous) {
  const Tensor base = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor weight = Tensor::from_vector<float>({0.5f, -1, 2, 8, 0, 3}, {2, 3}).requires_grad(true);
  lazygrad::save_safetensors(path("v.safetensors"), {{"t", base.t()}, {"weight", weight}});  // a view, a leaf
  const StateDict got = lazygrad::load_safetensors(path("v.safetensors"));
  EXPECT_EQ(got.at("t").shape(), (Shape{3, 2}));
  EXPECT_EQ(got.at("t").to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(got.at("weight").to_vector<float>(), weight.to_vector<float>());
  EXPECT_FALSE(got.at("weight").requires_grad());  // as safetensors.torch.load_file
}

TEST_F(SafetensorsTest, MetadataRoundTrips) {
  const SafetensorsMetadata metadata = {{"format", "pt"},
                                        {"", "empty key"},
                                        {"quotes \" and \\ and \n\t\x01", "na\xC3\xAFve \xF0\x9F\x99\x82"},
                                        {"step", "42"}};
  const StateDict one = {{"x", Tensor::from_vector<int32_t>({7}, {1})}};
  lazygrad::save_safetensors(path("m.safetensors"), one, metadata);
  EXPECT_EQ(lazygrad::load_safetensors_metadata(path("m.safetensors")), metadata);
  EXPECT_EQ(lazygrad::load_safetensors(path("m.safetensors")).at("x").item<int32_t>(), 7);
  // No metadata: no "__metadata__" entry at all (safetensors.torch.save_file(metadata=None)).
  lazygrad::save_safetensors(path("n.safetensors"), one);
  EXPECT_EQ(read_bytes(path("n.safetensors")).find("__metadata__"), std::string::npos);
  EXPECT_TRUE(lazygrad::load_safetensors_metadata(path("n.safetensors")).empty());
}

TEST_F(SafetensorsTest, LoadedTensorsAreIndependentOfTheFile) {
  const std::string file = path("w.safetensors").string();
  const Tensor w = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  lazygrad::save_safetensors(file, {{"w", w}});
  StateDict got = lazygrad::load_safetensors(file);
  got.at("w") += 1;  // an in-place update must never reach the checkpoint
  got.at("w").realize();
  EXPECT_EQ(got.at("w").to_vector<float>(), (std::vector<float>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(lazygrad::load_safetensors(file).at("w").to_vector<float>(), w.to_vector<float>());
  // Overwriting and then removing the file leaves what was loaded as it was.
  lazygrad::save_safetensors(file, {{"w", Tensor::from_vector<float>({0, 0, 0, 0, 0, 0}, {2, 3})}});
  fs::remove(file);
  EXPECT_EQ(got.at("w").to_vector<float>(), (std::vector<float>{2, 3, 4, 5, 6, 7}));
}

// ------------------------------------------------------------------------------------ zero copy

// The buffer a loaded (contiguous, whole-buffer) tensor reads.
std::shared_ptr<lazygrad::Buffer> buffer_of(const Tensor& t) {
  const lazygrad::UOpPtr u = t.uop();
  const lazygrad::UOp* b = lazygrad::contiguous_buffer_node(u.get());
  return b ? b->as<std::shared_ptr<lazygrad::Buffer>>() : nullptr;
}

// One mapping of a file in this process, as /proc/self/maps lists it.
struct Mapping {
  uintptr_t begin = 0, end = 0;
  uint64_t offset = 0;  // of `begin` in the file
  std::string perms;
};

// The mappings of `file` (also once it is deleted: the kernel keeps the old name).
std::vector<Mapping> mappings_of(const fs::path& file) {
  std::vector<Mapping> out;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, name;
    in >> range >> perms >> offset >> dev >> inode >> std::ws;
    std::getline(in, name);
    if (name != file.string() && name != file.string() + " (deleted)") continue;
    const size_t dash = range.find('-');
    out.push_back({std::stoull(range.substr(0, dash), nullptr, 16),
                   std::stoull(range.substr(dash + 1), nullptr, 16), std::stoull(offset, nullptr, 16),
                   perms});
  }
  return out;
}

// Where in `file` a pointer into one of its mappings points, or -1.
int64_t file_offset_of(const fs::path& file, const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (const Mapping& m : mappings_of(file))
    if (a >= m.begin && a < m.end) return static_cast<int64_t>(m.offset + (a - m.begin));
  return -1;
}

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST_F(SafetensorsTest, AlignedTensorsAreBuffersOverTheMapping) {
  const fs::path file = fs::canonical(dir_) / "z.safetensors";
  const std::vector<float> f = {1.5f, -2, 3, 4.25f, 5, 6};
  const std::vector<int64_t> i = {-7, 1LL << 40};
  const std::vector<uint8_t> u = {0, 9, 255};
  lazygrad::save_safetensors(file, {{"f", Tensor::from_vector(f, {2, 3})},
                                    {"i", Tensor::from_vector(i, {2})},
                                    {"u", Tensor::from_vector(u, {3})},
                                    {"empty", Tensor::zeros({0, 3})}});
  const std::string on_disk = read_bytes(file);
  const int64_t mem_before = lazygrad::GlobalCounters::mem_used.load();
  const int64_t live_before = lazygrad::GlobalCounters::buffers_live.load();
  const StateDict got = lazygrad::load_safetensors(file);
  // Mapped, not copied: no pool memory, one live buffer per tensor (see GlobalCounters).
  EXPECT_EQ(lazygrad::GlobalCounters::mem_used.load(), mem_before);
  EXPECT_EQ(lazygrad::GlobalCounters::buffers_live.load(), live_before + 3);
  const std::vector<Mapping> maps = mappings_of(file);
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].perms, "rw-p");  // writable and private: writes copy the page, never reach the file
  const std::map<std::string, std::string> expected = {
      {"f", bytes_of(f)}, {"i", bytes_of(i)}, {"u", bytes_of(u)}};
  for (const auto& [name, bytes] : expected) {
    const auto buffer = buffer_of(got.at(name));
    ASSERT_TRUE(buffer) << name;
    EXPECT_TRUE(buffer->external()) << name;
    const int64_t at = file_offset_of(file, buffer->host_ptr());
    ASSERT_GE(at, 0) << name << " does not point into the mapping";
    EXPECT_EQ(on_disk.substr(static_cast<size_t>(at), bytes.size()), bytes) << name;
  }
  EXPECT_EQ(got.at("f").to_vector<float>(), f);
  EXPECT_EQ(got.at("i").to_vector<int64_t>(), i);
  EXPECT_EQ(got.at("u").to_vector<uint8_t>(), u);
  EXPECT_EQ((got.at("f") * 2).sum().item<float>(), 35.5f);  // read by a kernel
  EXPECT_FALSE(buffer_of(got.at("empty"))->external());     // nothing to point at
  EXPECT_EQ(got.at("empty").shape(), (Shape{0, 3}));
}

TEST_F(SafetensorsTest, InPlaceUpdatesOfMappedTensorsNeverReachTheFile) {
  const fs::path file = fs::canonical(dir_) / "w.safetensors";
  lazygrad::save_safetensors(file, {{"w", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
                                    {"p", Tensor::from_vector<float>({1, -2, 4}, {3})}});
  const std::string on_disk = read_bytes(file);
  StateDict got = lazygrad::load_safetensors(file);
  Tensor w = got.at("w");
  const auto buffer = buffer_of(w);
  ASSERT_TRUE(buffer && buffer->external());
  w += 1;
  w.realize();
  EXPECT_EQ(buffer_of(w), buffer) << "the update did not write the mapped buffer in place";
  w.assign(w * 2);
  w.realize();
  EXPECT_EQ(buffer_of(w), buffer);
  EXPECT_GE(file_offset_of(file, buffer_of(w)->host_ptr()), 0);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{4, 6, 8, 10, 12, 14}));
  // An optimizer step on a loaded parameter: p -= 0.25 * d(sum(p^2))/dp = p / 2.
  Tensor p = got.at("p").requires_grad(true);
  const auto p_buffer = buffer_of(p);
  lazygrad::optim::SGD opt({p}, 0.25);
  (p * p).sum().backward();
  opt.step();
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0.5f, -1, 2}));
  EXPECT_EQ(buffer_of(p), p_buffer) << "the step did not write the mapped buffer in place";
  EXPECT_EQ(read_bytes(file), on_disk);
  const StateDict again = lazygrad::load_safetensors(file);
  EXPECT_EQ(again.at("w").to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(again.at("p").to_vector<float>(), (std::vector<float>{1, -2, 4}));
}

TEST_F(SafetensorsTest, AMappedTensorKeepsTheMappingAlive) {
  const fs::path file = fs::canonical(dir_) / "k.safetensors";
  lazygrad::save_safetensors(file, {{"a", Tensor::from_vector<float>({1, 2, 3}, {3})},
                                    {"b", Tensor::from_vector<int32_t>({4, 5}, {2})}});
  Tensor b = lazygrad::load_safetensors(file).at("b");  // the dict, the loader's handles: all gone
  lazygrad::save_safetensors(file, {{"b", Tensor::from_vector<int32_t>({0, 0}, {2})}});  // by rename
  fs::remove(file);
  ASSERT_EQ(mappings_of(file).size(), 1u);
  EXPECT_GE(file_offset_of(file, buffer_of(b)->host_ptr()), 0);
  EXPECT_EQ(b.to_vector<int32_t>(), (std::vector<int32_t>{4, 5}));
  b = Tensor();  // the last holder: the mapping goes with it
  EXPECT_TRUE(mappings_of(file).empty());
}

TEST_F(SafetensorsTest, MappedTensorsTrainUnderTheJit) {
  const fs::path file = fs::canonical(dir_) / "j.safetensors";
  Tensor::manual_seed(3);
  const std::vector<float> w0 = Tensor::randn({3, 4}).to_vector<float>();
  lazygrad::save_safetensors(file, {{"w", Tensor::from_vector(w0, {3, 4})}, {"x", Tensor::randn({5, 4})}});
  const std::string on_disk = read_bytes(file);
  StateDict got = lazygrad::load_safetensors(file);
  // The same step on the mapped parameter under the Jit (the input mapped too) and on a copy eagerly.
  Tensor mapped = got.at("w").requires_grad(true),  // the file's tensors are on the CPU, and so is the copy
      copy = Tensor::from_vector(w0, {3, 4}, "CPU").requires_grad(true);
  const auto mapped_buffer = buffer_of(mapped);
  lazygrad::optim::SGD mapped_opt({mapped}, 0.1), copy_opt({copy}, 0.1);
  auto step = [](Tensor& w, lazygrad::optim::Optimizer& opt, const Tensor& x) {
    Tensor loss = x.linear(w).square().mean();
    loss.backward();
    opt.step({loss});
    opt.zero_grad();
    return std::vector<Tensor>{loss};
  };
  lazygrad::Jit jitted([&](const std::vector<Tensor>& in) { return step(mapped, mapped_opt, in[0]); });
  for (int i = 0; i < 5; i++) {
    const float a = jitted({got.at("x")})[0].item<float>(),
                b = step(copy, copy_opt, got.at("x"))[0].item<float>();
    EXPECT_NEAR(a, b, 1e-6) << "step " << i;
  }
  EXPECT_EQ(buffer_of(mapped), mapped_buffer) << "the steps did not write the mapped buffer in place";
  const std::vector<float> a = mapped.to_vector<float>(), b = copy.to_vector<float>();
  for (size_t k = 0; k < a.size(); k++) EXPECT_NEAR(a[k], b[k], 1e-6);
  EXPECT_NE(a, w0);
  EXPECT_EQ(read_bytes(file), on_disk);
}

// The caveat docs/safetensors.md states: a page not yet written through the mapping reads the file.
TEST_F(SafetensorsTest, WritingIntoAMappedFileInPlaceShowsThrough) {
  const fs::path file = fs::canonical(dir_) / "p.safetensors";
  lazygrad::save_safetensors(file, {{"a", Tensor::from_vector<float>({1, 2}, {2})}});
  const Tensor a = lazygrad::load_safetensors(file).at("a");
  const int64_t at = file_offset_of(file, buffer_of(a)->host_ptr());
  ASSERT_GE(at, 0);
  const float changed = 9;
  std::fstream io(file, std::ios::binary | std::ios::in | std::ios::out);
  io.seekp(at);
  io.write(reinterpret_cast<const char*>(&changed), sizeof changed);
  io.close();
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{9, 2}));
}

TEST_F(SafetensorsTest, MisalignedEntriesAreCopied) {
  // The data starts at an offset of 1 mod 4: "u" (U8, always aligned) there, "f" (F32) at 3 mod 4.
  std::string header = R"({"u":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                       R"("f":{"dtype":"F32","shape":[2],"data_offsets":[2,10]}})";
  while ((8 + header.size()) % 4 != 1) header += ' ';
  const std::vector<float> f = {1.5f, -2.25f};
  write_bytes(path("m.safetensors"), file_of(header, bytes_of(std::vector<uint8_t>{7, 200}) + bytes_of(f)));
  const int64_t mem_before = lazygrad::GlobalCounters::mem_used.load();
  const StateDict got = lazygrad::load_safetensors(path("m.safetensors"));
  EXPECT_EQ(lazygrad::GlobalCounters::mem_used.load(), mem_before + 8);  // the copy of "f"
  EXPECT_TRUE(buffer_of(got.at("u"))->external());
  EXPECT_FALSE(buffer_of(got.at("f"))->external());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer_of(got.at("f"))->host_ptr()) % 4, 0u);
  EXPECT_EQ(got.at("u").to_vector<uint8_t>(), (std::vector<uint8_t>{7, 200}));
  EXPECT_EQ(got.at("f").to_vector<float>(), f);
  EXPECT_EQ((got.at("f") * 2).sum().item<float>(), -1.5f);
}

// ------------------------------------------------------------------------------------ saving

TEST_F(SafetensorsTest, SaveIsAtomic) {
  const std::string file = path("ckpt.safetensors").string();
  lazygrad::save_safetensors(file, {{"a", Tensor::from_vector<int64_t>({1, 2}, {2})}});
  const std::string good = read_bytes(file);
  // A lazy tensor that fails when computed: the save stops before touching the file.
  const Tensor bad =
      Tensor::from_vector<int32_t>({1, 2}, {2}).floor_divide(Tensor::zeros({2}, lazygrad::kInt32));
  expect_error([&] { lazygrad::save_safetensors(file, {{"a", bad}}); }, {"division by zero"});
  // Bad names and values are refused before anything is written.
  const Tensor ok = Tensor::from_vector<int64_t>({3}, {1});
  expect_error(
      [&] {
        lazygrad::save_safetensors(file, {{"__metadata__", ok}});
      },
      {"save_safetensors", file, "__metadata__"});
  expect_error(
      [&] {
        lazygrad::save_safetensors(file, {{"bad\xFF", ok}});
      },
      {"save_safetensors", "not valid UTF-8"});
  expect_error(
      [&] {
        lazygrad::save_safetensors(file, {{"undefined", Tensor()}});
      },
      {"save_safetensors", "undefined"});
  expect_error(
      [&] {
        lazygrad::save_safetensors(file, {{"a", ok}}, {{"k", "\xC0\x80"}});
      },
      {"not valid UTF-8"});
  EXPECT_EQ(read_bytes(file), good);
  EXPECT_EQ(files(), std::vector<std::string>{"ckpt.safetensors"});  // no temporary file left behind
  // A directory that does not exist: an Error naming the path.
  const std::string nowhere = path("missing/dir/x.safetensors").string();
  expect_error([&] { lazygrad::save_safetensors(nowhere, {{"a", ok}}); }, {"save_safetensors", nowhere});
  // A symbolic link: the file it points to is replaced, the link stays a link.
  fs::create_symlink(file, path("link.safetensors"));
  lazygrad::save_safetensors(path("link.safetensors").string(), {{"b", ok}});
  EXPECT_TRUE(fs::is_symlink(path("link.safetensors")));
  EXPECT_EQ(lazygrad::load_safetensors(file).count("b"), 1u);
}

// ----------------------------------------------------------------------------- corrupt files

struct BadFile {
  const char* what;
  std::string bytes;
  std::vector<std::string> words;  // besides the function's name and the path
};

std::vector<BadFile> bad_files() {
  const std::string f32x2(8, '\0');
  // The offsets below are of the file: the 8-byte length, then the header.
  return {
      {"empty", "", {"too short", "at byte 0"}},
      {"seven bytes", std::string(7, '\0'), {"too short"}},
      {"length past the end", file_of("{}").substr(0, 9), {"header length 2 runs past the end", "at byte 0"}},
      {"length over the limit", std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x7F", 8) + "{}", {"exceeds"}},
      {"not JSON", file_of("{\"a\":"), {"not valid JSON", "at byte 13"}},
      {"trailing comma", file_of("{\"a\":{},}"), {"not valid JSON", "at byte 16"}},
      {"garbage after", file_of("{}x"), {"not valid JSON", "at byte 10"}},
      {"NUL padding", file_of(std::string("{}\0\0", 4)), {"not valid JSON", "at byte 10"}},
      {"invalid UTF-8", file_of("{\"\xC3(\":1}"), {"not valid JSON", "UTF-8", "at byte 10"}},
      {"lone surrogate", file_of(R"({"\udc00":1})"), {"not valid JSON", "surrogate"}},
      {"raw newline in a name", file_of("{\"a\nb\":1}"), {"not valid JSON", "control character"}},
      {"deep nesting",
       file_of("{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["),
       {"nested deeper"}},
      {"an array", file_of("[]"), {"must be a JSON object", "at byte 8"}},
      {"entry not an object", file_of(R"({"a":[]})"), {"tensor \"a\"", "expected an object", "at byte 13"}},
      {"missing field",
       file_of(R"({"a":{"dtype":"F32","shape":[]}})"),
       {"tensor \"a\"", "missing field \"data_offsets\""}},
      {"unknown field",
       file_of(R"({"a":{"dtype":"F32","shape":[],"data_offsets":[0,4],"strides":[]}})", "abcd"),
       {"tensor \"a\"", "unknown field \"strides\"", "at byte 60"}},
      {"dtype not a string",
       file_of(R"({"a":{"dtype":32,"shape":[],"data_offsets":[0,4]}})", "abcd"),
       {"\"dtype\" must be a string, found a number", "at byte 22"}},
      {"unknown dtype",
       file_of(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", "x"),
       {"tensor \"a\"", "unknown dtype \"Q4\"", "at byte 22"}},
      {"float8",
       file_of(R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "x"),
       {"unknown dtype \"F8_E4M3\""}},
      {"negative size",
       file_of(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "x"),
       {"non-negative integer", "found -1", "at byte 36"}},
      {"fractional size",
       file_of(R"({"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}})", "x"),
       {"found 1.0"}},
      {"size over 2^64",
       file_of(R"({"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,1]}})", "x"),
       {"below 2^64"}},
      {"numel overflows",
       file_of(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", "abcd"),
       {"too large"}},
      {"three offsets",
       file_of(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", "x"),
       {"[begin, end]"}},
      {"end before begin",
       file_of(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}})", "x"),
       {"end before"}},
      {"size mismatch",
       file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"),
       {"tensor \"a\"", "hold 4 bytes, but shape {2} of F32 needs 8", "at byte 55"}},
      {"past the end of the data",
       file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd"),
       {"tensor \"a\"", "run past the end of the data (4 bytes", "at byte 9"}},
      {"overlap",
       file_of(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           f32x2),
       {"tensor \"b\"", "overlap those of tensor \"a\""}},
      {"gap",
       file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32x2),
       {"tensor \"a\"", "bytes [0, 4) of the data", "belong to no tensor"}},
      {"trailing data",
       file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32x2),
       {"4 bytes after the last tensor", "at byte 66"}},
      {"duplicate name",
       file_of(
           R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
           "xy"),
       {"duplicate key \"a\"", "at byte 61"}},
      {"metadata not an object", file_of(R"({"__metadata__":"pt"})"), {"\"__metadata__\" must be an object"}},
      {"metadata not text",
       file_of(R"({"__metadata__":{"step":1}})"),
       {"value of \"step\" must be a string", "at byte 32"}},
      {"bool byte 2",
       file_of(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", std::string("\x01\x00\x02", 3)),
       {"tensor \"m\"", "BOOL byte is 2", "at byte 65"}},
  };
}

TEST_F(SafetensorsTest, EachCorruptFileIsAnErrorNamingFileAndOffset) {
  for (const BadFile& bad : bad_files()) {
    SCOPED_TRACE(bad.what);
    const std::string file = path("bad.safetensors").string();
    write_bytes(file, bad.bytes);
    std::vector<std::string> words = bad.words;
    words.push_back("load_safetensors: \"" + file + "\"");
    expect_error([&] { lazygrad::load_safetensors(file); }, words);
  }
  expect_error([&] { lazygrad::load_safetensors(path("absent.safetensors").string()); },
               {"cannot open", "absent"});
  expect_error([&] { lazygrad::load_safetensors(dir_.string()); }, {"not a regular file"});
  expect_error([&] { lazygrad::load_safetensors_metadata(path("absent.safetensors").string()); },
               {"load_safetensors_metadata", "cannot open"});
}

// Loads `bytes` and reports whether it threw lazygrad::Error (true) or loaded (false); any other
// outcome fails the test. The sanitizer build turns a bad read into a failure too.
bool load_fails(const std::string& file, const std::string& bytes) {
  write_bytes(file, bytes);
  try {
    lazygrad::load_safetensors(file);
    return false;
  } catch (const lazygrad::Error&) {
    return true;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw another exception: " << e.what();
    return true;
  }
}

TEST_F(SafetensorsTest, TruncatedAnywhereIsAnError) {
  const std::string good = read_bytes(fixture_dir() / "reference.safetensors");
  ASSERT_GT(good.size(), 8u);
  const std::string file = path("cut.safetensors").string();
  for (size_t n = 0; n < good.size(); n++) EXPECT_TRUE(load_fails(file, good.substr(0, n))) << "cut at " << n;
}

TEST_F(SafetensorsTest, FlippedHeaderBytesNeverCrash) {
  const std::string good = read_bytes(fixture_dir() / "reference.safetensors");
  uint64_t header = 0;
  for (int i = 0; i < 8; i++) header |= uint64_t(static_cast<unsigned char>(good[i])) << (8 * i);
  const std::string file = path("flip.safetensors").string();
  // Every byte of the length and the header, flipped two ways: many flips still give a valid file
  // (a letter of a name), the others must be Errors.
  int failed = 0;
  for (size_t i = 0; i < 8 + header; i++)
    for (unsigned char mask : {0x01, 0xFF}) {
      std::string bytes = good;
      bytes[i] = static_cast<char>(bytes[i] ^ mask);
      failed += load_fails(file, bytes);
    }
  EXPECT_GT(failed, 0);
  // And some random damage anywhere (seeded): several bytes at once, data included.
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; trial++) {
    std::string bytes = good;
    for (int k = 0; k < 4; k++) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    load_fails(file, bytes);
  }
}

}  // namespace
