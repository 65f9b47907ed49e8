// The indexing, pooling, interpolation and padding ops of issue 16 against PyTorch: forward values
// and gradients from tests/fixtures/api_index.txt (written by scripts/fixtures_api_index.py), then
// what the fixtures cannot say: finite-difference gradchecks, the errors and their kinds, and that
// the padding modes stay views that fuse.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_api_index
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "expect_error.h"
#include "fixture_harness.h"
#include "lazygrad/gradcheck.h"

namespace {

using fixtures::Case;
using fixtures::Ins;
using lazygrad::ErrorKind;
using lazygrad::GlobalCounters;
using lazygrad::Tensor;

// ---- the fixture cases ----

Tensor pool_indices(const Case& c, const Tensor& x) {
  int64_t nd = c.i("nd");
  auto k = c.ints("kernel"), s = c.ints("stride"), p = c.ints("padding"), d = c.ints("dilation");
  bool ceil = c.flag("ceil_mode");
  Tensor::ValuesIndices r = nd == 1   ? x.max_pool1d_with_indices(k, s, p, d, ceil)
                            : nd == 2 ? x.max_pool2d_with_indices(k, s, p, d, ceil)
                                      : x.max_pool3d_with_indices(k, s, p, d, ceil);
  return c.str("part") == "values" ? r.values : r.indices;
}

Tensor unpool(const Case& c, const Ins& x) {
  int64_t nd = c.i("nd");
  auto k = c.ints("kernel"), s = c.ints("stride"), p = c.ints("padding");
  Tensor::IntList out = c.has("output_size") ? Tensor::IntList(c.ints("output_size")) : Tensor::IntList();
  if (nd == 1) return x.at(0).max_unpool1d(x.at(1), k, s, p, out);
  if (nd == 2) return x.at(0).max_unpool2d(x.at(1), k, s, p, out);
  return x.at(0).max_unpool3d(x.at(1), k, s, p, out);
}

Tensor interpolate(const Case& c, const Tensor& x) {
  std::optional<bool> align =
      c.has("align_corners") ? std::optional<bool>(c.flag("align_corners")) : std::nullopt;
  if (c.has("size")) return x.interpolate(c.ints("size"), {}, c.str("mode"), align);
  std::vector<double> scale;
  for (const auto& tok : c.get("scale").toks) scale.push_back(std::strtod(tok.c_str(), nullptr));
  return x.interpolate({}, scale, c.str("mode"), align);
}

const fixtures::OpTable& api_index_ops() {
  static const fixtures::OpTable table = {
      {"masked_select", [](const Case&, const Ins& x) { return x.at(0).masked_select(x.at(1)); }},
      {"nonzero", [](const Case&, const Ins& x) { return x.at(0).nonzero(); }},
      {"scatter.reduce_tensor",
       [](const Case& c, const Ins& x) {
         return x.at(0).scatter(c.i("dim"), x.at(1), x.at(2), c.str("reduce"));
       }},
      {"scatter.reduce_scalar",
       [](const Case& c, const Ins& x) {
         return x.at(0).scatter(c.i("dim"), x.at(1), c.scalar("value"), c.str("reduce"));
       }},
      {"scatter_reduce",
       [](const Case& c, const Ins& x) {
         return x.at(0).scatter_reduce(c.i("dim"), x.at(1), x.at(2), c.str("reduce"), c.flag("include_self"));
       }},
      {"max_pool_indices", [](const Case& c, const Ins& x) { return pool_indices(c, x.at(0)); }},
      {"max_unpool", [](const Case& c, const Ins& x) { return unpool(c, x); }},
      {"max_pool3d",
       [](const Case& c, const Ins& x) {
         return x.at(0).max_pool3d(c.ints("kernel"), c.ints("stride"), c.ints("padding"), c.ints("dilation"),
                                   c.flag("ceil_mode"));
       }},
      {"avg_pool3d",
       [](const Case& c, const Ins& x) {
         return x.at(0).avg_pool3d(c.ints("kernel"), c.ints("stride"), c.ints("padding"), c.flag("ceil_mode"),
                                   c.flag("count_include_pad"));
       }},
      {"interpolate", [](const Case& c, const Ins& x) { return interpolate(c, x.at(0)); }},
      {"pad", [](const Case& c, const Ins& x) { return x.at(0).pad(c.ints("padding"), Tensor::pad_mode(c.str("mode"))); }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(ApiIndexParity, api_index_ops(), "api_index.txt")

// ---- helpers ----

Tensor ints(const std::vector<int64_t>& v, const lazygrad::Shape& shape) {
  return Tensor::from_vector<int64_t>(v, shape);
}

Tensor f64(const lazygrad::Shape& shape, uint64_t seed) {
  Tensor::manual_seed(seed);
  return Tensor::randn(shape, lazygrad::kFloat64).realize();
}

// The call throws lazygrad::Error of `kind` whose message has every one of `words`.
void expect_kind(const std::function<void()>& call, ErrorKind kind,
                 std::initializer_list<std::string> words) {
  try {
    call();
    ADD_FAILURE() << "no lazygrad::Error thrown";
  } catch (const lazygrad::Error& e) {
    EXPECT_EQ(e.kind(), kind) << lazygrad::error_kind_name(e.kind()) << ": " << e.what();
    for (const auto& w : words)
      EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << "'" << w << "' is not in: " << e.what();
  }
}

void expect_gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                      const std::vector<Tensor>& in) {
  lazygrad::GradcheckResult r = lazygrad::gradcheck(fn, in);
  EXPECT_TRUE(r.ok) << r.message;
}

// ---- gradcheck: finite differences agree with the gradients ----

TEST(ApiIndexGradcheck, MaskedSelect) {
  Tensor mask = Tensor::from_vector<bool>({true, false, true, true, false, true}, {2, 3});
  expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].masked_select(mask); },
                   {f64({2, 3}, 1)});
  expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].masked_select(mask); }, {f64({3}, 2)});
}

TEST(ApiIndexGradcheck, ScatterReduce) {
  Tensor index = ints({0, 2, 0, 1, 1, 1, 3, 0}, {2, 4});
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
    for (bool include_self : {true, false}) {
      SCOPED_TRACE(std::string(reduce) + (include_self ? " include_self" : ""));
      expect_gradcheck(
          [&](const std::vector<Tensor>& in) {
            return in[0].scatter_reduce(1, index, in[1], reduce, include_self);
          },
          {f64({2, 4}, 3), f64({2, 5}, 4)});
    }
  expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].scatter(1, index, in[1], "multiply"); },
                   {f64({2, 4}, 5), f64({2, 4}, 6)});
  expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].scatter(1, index, 2.5, "add"); },
                   {f64({2, 4}, 7)});
}

TEST(ApiIndexGradcheck, PoolsWithIndices) {
  expect_gradcheck(
      [](const std::vector<Tensor>& in) { return in[0].max_pool2d_with_indices(3, 2, 1).values; },
      {f64({1, 2, 5, 4}, 8)});
  expect_gradcheck([](const std::vector<Tensor>& in) { return in[0].max_pool1d_with_indices(2).values; },
                   {f64({2, 1, 7}, 9)});
  expect_gradcheck([](const std::vector<Tensor>& in) { return in[0].max_pool3d(2, 1); },
                   {f64({1, 1, 3, 3, 3}, 10)});
  expect_gradcheck([](const std::vector<Tensor>& in) { return in[0].avg_pool3d(2, 2, 1, true, false); },
                   {f64({1, 2, 3, 4, 3}, 11)});
  Tensor x = f64({1, 2, 4, 6}, 12);
  Tensor indices = x.max_pool2d_with_indices(2).indices;
  expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].max_unpool2d(indices, 2); },
                   {f64({1, 2, 2, 3}, 13)});
}

TEST(ApiIndexGradcheck, InterpolateAndPad) {
  expect_gradcheck(
      [](const std::vector<Tensor>& in) {
        return in[0].interpolate({3, 4, 2}, {}, "trilinear", true);
      },
      {f64({1, 1, 2, 3, 3}, 14)});
  expect_gradcheck(
      [](const std::vector<Tensor>& in) {
        return in[0].interpolate({5, 3}, {}, "nearest-exact");
      },
      {f64({1, 1, 3, 4}, 15)});
  expect_gradcheck(
      [](const std::vector<Tensor>& in) {
        return in[0].interpolate({2, 3}, {}, "area");
      },
      {f64({1, 1, 5, 4}, 16)});
  expect_gradcheck(
      [](const std::vector<Tensor>& in) {
        return in[0].interpolate({5, 2}, {}, "bicubic");
      },
      {f64({1, 1, 3, 4}, 18)});
  for (const char* mode : {"reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    expect_gradcheck(
        [&](const std::vector<Tensor>& in) {
          return in[0].pad({2, 1, 1, 2}, Tensor::pad_mode(mode));
        },
        {f64({2, 3, 4}, 17)});
  }
}

// ---- data-dependent shapes ----

TEST(ApiIndexData, NonzeroTupleAndArgwhere) {
  Tensor x = Tensor::from_vector<float>({0, 1, 0, 2, 3, 0}, {2, 3});
  std::vector<Tensor> parts = x.nonzero_tuple();
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(parts[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(parts[0].dtype(), lazygrad::kInt64);
  EXPECT_EQ(x.argwhere().to_vector<int64_t>(), x.nonzero().to_vector<int64_t>());
  // a 0-d tensor counts as 1-d for the tuple form, as in PyTorch
  std::vector<Tensor> scalar = Tensor::full({}, 5).nonzero_tuple();
  ASSERT_EQ(scalar.size(), 1u);
  EXPECT_EQ(scalar[0].to_vector<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_EQ(Tensor::full({}, 0).nonzero().shape(), (lazygrad::Shape{0, 0}));
}

// ---- padding modes are views: the padded tensor is one kernel with its consumer ----

TEST(ApiIndexViews, PadModesFuse) {
  Tensor x = Tensor::rand({3, 8, 8}).realize();
  for (const char* mode : {"reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    Tensor y = (x.pad({2, 2, 1, 3}, Tensor::pad_mode(mode)) * 2).sum();
    GlobalCounters::reset();
    y.realize();
    EXPECT_EQ(GlobalCounters::kernel_count, 1);
  }
}

// ---- errors: the op, the shapes, and PyTorch's exception class ----

TEST(ApiIndexErrors, DataDependent) {
  Tensor x = Tensor::zeros({2, 3});
  expect_kind(
      [&] {
        x.masked_select(Tensor::ones({2, 2}, lazygrad::kBool));
      },
      ErrorKind::Runtime, {"masked_select", "{2, 3}", "{2, 2}"});
  expect_kind(
      [&] {
        x.masked_select(Tensor::ones({2, 3}, lazygrad::kFloat32));
      },
      ErrorKind::Runtime, {"masked_select", "float32"});
}

TEST(ApiIndexErrors, Scatter) {
  Tensor x = Tensor::zeros({2, 3}), i = ints({0, 1}, {1, 2}), src = Tensor::ones({1, 2});
  expect_kind([&] { x.scatter(1, i, src, "max"); }, ErrorKind::Value, {"scatter", "add", "multiply"});
  expect_kind([&] { x.scatter_reduce(1, i, src, "add"); }, ErrorKind::Value, {"scatter_reduce", "amax"});
  expect_kind([&] { x.scatter_reduce(2, i, src, "sum"); }, ErrorKind::Index, {"scatter_reduce"});
  expect_kind([&] { x.scatter_reduce(1, i, src.to(lazygrad::kFloat64), "sum"); }, ErrorKind::Runtime,
              {"scatter_reduce", "dtype"});
  expect_kind(
      [&] {
        x.scatter_reduce(1, ints({0, 0, 0, 0}, {1, 4}), src, "sum");
      },
      ErrorKind::Runtime, {"scatter_reduce", "{1, 4}"});
  // an index out of range is found when the kernel runs
  // PyTorch's out-of-range gather/scatter index is a RuntimeError
  expect_kind(
      [&] {
        x.scatter_reduce(1, ints({0, 3}, {1, 2}), src, "amax").realize();
      },
      ErrorKind::Runtime, {"scatter_reduce", "out of bounds"});
}

TEST(ApiIndexErrors, Pools) {
  Tensor x = Tensor::rand({1, 1, 4, 4});
  auto [values, indices] = x.max_pool2d_with_indices(2);
  expect_kind([&] { x.to(lazygrad::kInt32).max_pool2d_with_indices(2); }, ErrorKind::Runtime,
              {"max_pool2d", "int32"});
  expect_kind(
      [&] {
        values.max_unpool2d(indices, 2, {}, 0, {3, 3, 3});
      },
      ErrorKind::Value, {"max_unpool2d", "output_size"});
  expect_kind(
      [&] {
        values.max_unpool2d(indices, 2, {}, 0, {9, 9});
      },
      ErrorKind::Value, {"max_unpool2d", "{9, 9}"});
  expect_kind(
      [&] {
        values.max_unpool2d(indices.reshape({1, 1, 4}), 2);
      },
      ErrorKind::Runtime, {"max_unpool2d", "{1, 1, 4}"});
  expect_kind([&] { values.max_unpool2d(indices.to(lazygrad::kFloat32), 2); }, ErrorKind::Type,
              {"max_unpool2d"});
  expect_kind(
      [&] {
        values.max_unpool2d(Tensor::full({1, 1, 2, 2}, int64_t{16}), 2).realize();
      },
      ErrorKind::Runtime, {"max_unpool", "out of bounds"});
  expect_kind([&] { Tensor::rand({2, 3}).max_pool3d(2); }, ErrorKind::Runtime, {"max_pool3d", "{2, 3}"});
  expect_kind(
      [&] {
        Tensor::rand({1, 1, 2, 2, 2}).avg_pool3d(2, {}, 2);
      },
      ErrorKind::Runtime, {"avg_pool3d", "padding"});
}

TEST(ApiIndexErrors, Interpolate) {
  Tensor x = Tensor::rand({1, 1, 3, 3, 3});
  expect_kind(
      [&] {
        x.interpolate({4, 4, 4}, {}, "bicubic");
      },
      ErrorKind::NotImplemented, {"interpolate", "bicubic", "4-D"});  // PyTorch's bicubic is 4-D only
  expect_kind(
      [&] {
        x.interpolate({4, 4, 4}, {}, "cubic");
      },
      ErrorKind::NotImplemented, {"interpolate", "cubic"});
  expect_kind(
      [&] {
        x.interpolate({4, 4}, {}, "bilinear");
      },
      ErrorKind::NotImplemented, {"interpolate", "bilinear"});
  expect_kind(
      [&] {
        Tensor::rand({1, 1, 3, 3}).interpolate({4, 4}, {}, "trilinear");
      },
      ErrorKind::NotImplemented, {"interpolate", "trilinear", "{1, 1, 3, 3}"});
  expect_kind(
      [&] {
        x.interpolate({4, 4, 4}, {}, "nearest-exact", true);
      },
      ErrorKind::Value, {"interpolate", "align_corners"});
  expect_kind(
      [&] {
        Tensor::rand({1, 1, 1, 1, 1, 1}).interpolate(2);
      },
      ErrorKind::NotImplemented, {"interpolate", "{1, 1, 1, 1, 1, 1}"});
}

TEST(ApiIndexErrors, Pad) {
  Tensor x = Tensor::rand({2, 3});
  expect_kind([&] { x.pad({3, 0}, Tensor::PadMode::Reflect); }, ErrorKind::Runtime, {"pad", "less than", "{2, 3}"});
  expect_kind([&] { x.pad({0, 0, 2, 0}, Tensor::PadMode::Reflect); }, ErrorKind::Runtime, {"pad", "dimension 0"});
  expect_kind([&] { x.pad({4, 0}, Tensor::PadMode::Circular); }, ErrorKind::Runtime, {"pad", "wrapping", "{2, 3}"});
  expect_kind([&] { Tensor::rand({2, 0}).pad({1, 1}, Tensor::PadMode::Replicate); }, ErrorKind::Runtime, {"pad", "{2, 0}"});
  expect_kind([&] { x.pad({1, 1}, Tensor::pad_mode("mirror")); }, ErrorKind::NotImplemented, {"pad", "mirror"});
  // A literal 0 is the constant pad's value, not a mode (a const char* overload once took it).
  EXPECT_EQ(x.pad({1, 1}, 0).to_vector<float>()[0], 0.0f);
  expect_kind([&] { x.pad({1, 1, 1}, Tensor::PadMode::Reflect); }, ErrorKind::Runtime, {"pad", "{2, 3}"});
  // "constant" is the plain pad, with its value
  EXPECT_EQ(x.pad({1, 0}, Tensor::PadMode::Constant, 7).to_vector<float>()[0], 7.0f);
}

}  // namespace
