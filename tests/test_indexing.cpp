// Indexing ops against PyTorch: forward values and gradients from tests/fixtures/indexing.txt
// (written by scripts/fixtures_indexing.py), then what the fixtures cannot say: the errors, that
// the cutting and repeating ops are views, how many kernels a gather, scatter or sort costs, and
// the documented differences from PyTorch.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_indexing
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "expect_error.h"
#include "fixture_harness.h"
#include "ir/uop.h"

namespace {

using fixtures::Case;
using fixtures::Ins;
using lazygrad::Error;
using lazygrad::GlobalCounters;
using lazygrad::Tensor;

// ---- the fixture cases ----

// Ops with several results: the case names the piece to compare and how many PyTorch returns.
Tensor piece(const Case& c, const std::vector<Tensor>& parts) {
  EXPECT_EQ(static_cast<int64_t>(parts.size()), c.i("pieces"))
      << "PyTorch returns a different number of pieces";
  return parts.at(static_cast<size_t>(c.i("piece")));
}

Tensor part(const Case& c, const Tensor::ValuesIndices& r) {
  return c.str("part") == "values" ? r.values : r.indices;
}

Tensor roll(const Case& c, const Tensor& x) {
  const bool one_shift = c.get("shifts").kind == "int";
  if (!c.has("dims")) return one_shift ? x.roll(c.i("shifts")) : x.roll(c.ints("shifts"));
  if (one_shift) return x.roll(c.i("shifts"), c.i("dims"));
  return x.roll(c.ints("shifts"), c.ints("dims"));
}

const fixtures::OpTable& indexing_ops() {
  static const fixtures::OpTable table = {
      {"gather", [](const Case& c, const Ins& x) { return x.at(0).gather(c.i("dim"), x.at(1)); }},
      {"take_along_dim",
       [](const Case& c, const Ins& x) { return x.at(0).take_along_dim(x.at(1), c.opt_int("dim")); }},
      {"index_select", [](const Case& c, const Ins& x) { return x.at(0).index_select(c.i("dim"), x.at(1)); }},
      {"index", [](const Case& c, const Ins& x) { return x.at(0).index(c.i("dim"), x.at(1)); }},
      {"scatter.tensor",
       [](const Case& c, const Ins& x) { return x.at(0).scatter(c.i("dim"), x.at(1), x.at(2)); }},
      {"scatter.scalar",
       [](const Case& c, const Ins& x) { return x.at(0).scatter(c.i("dim"), x.at(1), c.scalar("value")); }},
      {"scatter_add",
       [](const Case& c, const Ins& x) { return x.at(0).scatter_add(c.i("dim"), x.at(1), x.at(2)); }},
      {"masked_fill.scalar",
       [](const Case& c, const Ins& x) { return x.at(0).masked_fill(x.at(1), c.scalar("value")); }},
      {"masked_fill.tensor", [](const Case&, const Ins& x) { return x.at(0).masked_fill(x.at(1), x.at(2)); }},
      {"one_hot", [](const Case& c, const Ins& x) { return x.at(0).one_hot(c.i("num_classes")); }},
      {"repeat", [](const Case& c, const Ins& x) { return x.at(0).repeat(c.ints("repeats")); }},
      {"repeat_interleave",
       [](const Case& c, const Ins& x) {
         return x.at(0).repeat_interleave(c.i("repeats"), c.opt_int("dim"));
       }},
      {"roll", [](const Case& c, const Ins& x) { return roll(c, x.at(0)); }},
      {"split",
       [](const Case& c, const Ins& x) {
         const bool one_size = c.get("size").kind == "int";
         return piece(c, one_size ? x.at(0).split(c.i("size"), c.i("dim"))
                                  : x.at(0).split_with_sizes(c.ints("size"), c.i("dim")));
       }},
      {"chunk",
       [](const Case& c, const Ins& x) { return piece(c, x.at(0).chunk(c.i("chunks"), c.i("dim"))); }},
      {"unbind", [](const Case& c, const Ins& x) { return piece(c, x.at(0).unbind(c.i("dim"))); }},
      {"meshgrid",
       [](const Case& c, const Ins& x) { return piece(c, lazygrad::meshgrid(x, c.str("indexing"))); }},
      {"sort",
       [](const Case& c, const Ins& x) { return part(c, x.at(0).sort(c.i("dim"), c.flag("descending"))); }},
      {"argsort",
       [](const Case& c, const Ins& x) { return x.at(0).argsort(c.i("dim"), c.flag("descending")); }},
      {"topk", [](const Case& c,
                  const Ins& x) { return part(c, x.at(0).topk(c.i("k"), c.i("dim"), c.flag("largest"))); }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(IndexingParity, indexing_ops(), "indexing.txt")

// ---- helpers ----

Tensor ints(const std::vector<int64_t>& v, const lazygrad::Shape& shape) {
  return Tensor::from_vector<int64_t>(v, shape);
}
Tensor floats(const std::vector<float>& v, const lazygrad::Shape& shape) {
  return Tensor::from_vector<float>(v, shape);
}

// Kernels launched to realize t.
int64_t kernels_to_realize(Tensor t) {
  GlobalCounters::reset();
  t.realize();
  return GlobalCounters::kernel_count;
}

// t is a chain of movement ops over a realized buffer: a view, with no kernel of its own.
bool is_view_of_buffer(const Tensor& t) {
  const auto graph = t.uop();  // a view builds its chain on demand: keep it alive while walking it
  const lazygrad::UOp* u = graph.get();
  while (lazygrad::is_movement(u->op)) u = u->src[0].get();
  return u->op == lazygrad::Ops::BUFFER;
}

// ---- errors: bad input throws lazygrad::Error naming the op ----

TEST(IndexingErrors, GatherFamily) {
  Tensor x = Tensor::zeros({2, 3}), i = ints({0, 1}, {1, 2});
  expect_error([&] { x.gather(1, i.to(lazygrad::kFloat32)); }, "gather");
  expect_error([&] { x.gather(1, i.to(lazygrad::kBool)); }, "gather");
  expect_error([&] { x.gather(2, i); }, "gather");
  expect_error([&] { x.gather(1, ints({0, 1}, {2})); }, "gather");        // rank differs
  expect_error([&] { x.gather(1, ints({0, 0, 0}, {3, 1})); }, "gather");  // larger than self outside dim
  expect_error([&] { x.take_along_dim(ints({0}, {1}), 1); }, "take_along_dim");
  expect_error(
      [&] {
        x.take_along_dim(ints({0, 0, 0}, {3, 1}), 1);
      },
      "take_along_dim");  // 3 vs 2: no broadcast
  expect_error([&] { x.index_select(0, ints({0, 1}, {1, 2})); }, "index_select");
  expect_error([&] { x.index_select(0, floats({0}, {1})); }, "index_select");
  expect_error([&] { Tensor::full({}, 1.0).index(0, ints({0}, {1})); }, "index");
  expect_error([&] { x.index(-3, ints({0}, {1})); }, "index");
}

TEST(IndexingErrors, ScatterFamily) {
  Tensor x = Tensor::zeros({2, 3}), i = ints({0, 1}, {1, 2});
  expect_error(
      [&] {
        x.scatter(1, i, Tensor::ones({2, 3}, lazygrad::kFloat64));
      },
      "scatter");                                                                   // dtype differs
  expect_error([&] { x.scatter(1, i, Tensor::ones({1, 1})); }, "scatter");          // src smaller than index
  expect_error([&] { x.scatter(1, ints({0, 1}, {2}), 1.0); }, "scatter");           // rank differs
  expect_error([&] { x.scatter(0, ints({0, 0, 0, 0}, {1, 4}), 1.0); }, "scatter");  // wider than self
  expect_error([&] { x.scatter_add(1, i.to(lazygrad::kFloat32), Tensor::ones({2, 3})); }, "scatter_add");
  expect_error([&] { x.scatter_add(-3, i, Tensor::ones({2, 3})); }, "scatter_add");
  expect_error([&] { x.masked_fill(Tensor::ones({2, 3}), 1.0); }, "masked_fill");  // float mask
  expect_error([&] { x.masked_fill(Tensor::ones({4}, lazygrad::kBool), 1.0); },
               "masked_fill");  // no broadcast
  expect_error([&] { x.masked_fill(Tensor::ones({3}, lazygrad::kBool), Tensor::ones({1})); },
               "masked_fill");  // 1-d value
  expect_error([&] { ints({1, 2}, {2}).to(lazygrad::kInt32).one_hot(); }, "one_hot");
  expect_error([&] { ints({1, -2}, {2}).one_hot(); }, "one_hot");
  expect_error([&] { ints({}, {0}).one_hot(); }, "one_hot");
  expect_error([&] { ints({1}, {1}).one_hot(-2); }, "one_hot");
}

TEST(IndexingErrors, ViewsAndSorting) {
  Tensor x = Tensor::zeros({2, 3}), s = Tensor::full({}, 1.0);
  expect_error([&] { x.repeat({2}); }, "repeat");
  expect_error([&] { x.repeat({2, -1}); }, "repeat");
  expect_error([&] { x.repeat_interleave(-1); }, "repeat_interleave");
  expect_error([&] { s.repeat_interleave(2, 0); }, "repeat_interleave");
  expect_error([&] { x.roll(std::vector<int64_t>{}, {}); }, "roll");
  expect_error([&] { x.roll({1}, {0, 1}); }, "roll");
  expect_error([&] { x.roll({1, 1}); }, "roll");
  expect_error([&] { x.roll(1, 2); }, "roll");
  expect_error([&] { s.roll(1, 0); }, "roll");
  expect_error([&] { s.split(1); }, "split");
  expect_error([&] { x.split(-1); }, "split");
  expect_error([&] { x.split(0, 1); }, "split");
  expect_error([&] { x.split_with_sizes({1, 1}, 1); }, "split_with_sizes");
  expect_error([&] { x.split_with_sizes({-1, 4}, 1); }, "split_with_sizes");
  expect_error([&] { x.chunk(0); }, "chunk");
  expect_error([&] { s.chunk(1); }, "chunk");
  expect_error([&] { s.unbind(0); }, "unbind");
  expect_error([&] { x.unbind(2); }, "unbind");
  expect_error([&] { lazygrad::meshgrid({}); }, "meshgrid");
  expect_error([&] { lazygrad::meshgrid({x}); }, "meshgrid");
  expect_error(
      [&] {
        lazygrad::meshgrid({Tensor::zeros({2}), Tensor::zeros({2}, lazygrad::kInt64)});
      },
      "meshgrid");
  expect_error([&] { lazygrad::meshgrid({Tensor::zeros({2})}, "ab"); }, "meshgrid");
  expect_error([&] { x.sort(2); }, "sort");
  expect_error([&] { x.topk(4); }, "topk");
  expect_error([&] { x.topk(-1); }, "topk");
  expect_error([&] { x.topk(1, -3); }, "topk");
}

// ---- views: cutting, repeating and rolling never copy ----

TEST(IndexingViews, ResultsAreViewsOfTheBuffer) {
  Tensor x = Tensor::arange(24, lazygrad::kFloat32).reshape({2, 3, 4}).contiguous().realize();
  Tensor v = Tensor::arange(3, lazygrad::kFloat32).contiguous().realize();
  std::vector<Tensor> views = {x.repeat({2, 1, 1, 2}),  x.repeat_interleave(2, 1),
                               x.roll({1, -2}, {0, 2}), x.roll(5),
                               x.split(2, 2).at(1),     x.chunk(2, 1).at(1),
                               x.unbind(1).at(2),       lazygrad::meshgrid({v, v}, "xy").at(0)};
  for (size_t k = 0; k < views.size(); k++) EXPECT_TRUE(is_view_of_buffer(views[k])) << "result " << k;
}

TEST(IndexingViews, WritesThroughPiecesReachTheBase) {
  Tensor x = Tensor::arange(6, lazygrad::kFloat32).reshape({2, 3}).contiguous().realize();
  x.split(1, 1).at(2) += 10;
  x.unbind(0).at(0) *= -1;
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{-0, -1, -12, 3, 4, 15}));
}

// ---- kernels: what each gather, scatter and sort costs ----

TEST(IndexingKernels, GathersFuseIntoOneKernel) {
  Tensor x = Tensor::rand({4, 5}).realize(), i = ints({0, 4, 2, 1, 3, 3, 0, 1}, {4, 2}).realize();
  EXPECT_EQ(kernels_to_realize(x.gather(1, i)), 1);
  EXPECT_EQ(kernels_to_realize(x.index(1, i)), 1);  // (i has a 4, out of range for dimension 0)
  EXPECT_EQ(kernels_to_realize((x * 2).index_select(1, i.flatten()).exp()),
            1);  // producer and consumer fuse in
  EXPECT_EQ(kernels_to_realize(x.scatter_add(1, i, x)), 1);
  EXPECT_EQ(kernels_to_realize(x.masked_fill(x.gt(0.5), 0.0)), 1);
}

TEST(IndexingKernels, ScatterAndSortCountsOfKernels) {
  Tensor x = Tensor::rand({4, 5}).realize(), i = ints({0, 4, 2, 1, 3, 3, 0, 1}, {4, 2}).realize();
  // The last writer per target is a max of its own; the values are a second reduction.
  EXPECT_EQ(kernels_to_realize(x.scatter(1, i, x)), 2);
  EXPECT_EQ(kernels_to_realize(x.scatter(1, i, 1.0)), 1);
  // Sorting: the ranks (one reduction over all pairs), then the gather by rank.
  EXPECT_EQ(kernels_to_realize(x.sort(1).values), 2);
  auto [values, indices] = x.topk(2, 0);
  GlobalCounters::reset();
  lazygrad::realize({values, indices});
  EXPECT_EQ(GlobalCounters::kernel_count, 3);  // the ranks once, then values and indices
}

// ---- the documented behaviour where PyTorch would raise or leaves things unspecified ----

// ---- out-of-range indices: an Error when the kernel runs, as PyTorch raises at the call ----

// Realizing t throws a lazygrad::Error whose message holds every one of words.
void expect_realize_error(const Tensor& t, std::initializer_list<std::string> words) {
  expect_error([&] { Tensor(t).realize(); }, words);
}

TEST(IndexingOutOfRange, GathersAndSelectsNameTheOpTheDimensionAndTheSize) {
  // PyTorch: "index 5 is out of bounds for dimension 1 with size 3" (gather, take_along_dim).
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {2, 3});
  const std::string dim1 = "out of bounds for dimension 1 with size 3";
  expect_realize_error(x.gather(1, ints({5, 0}, {2, 1})), {"gather", dim1});
  expect_realize_error(x.gather(1, ints({-1, 0}, {2, 1})), {"gather", dim1});  // no negatives
  expect_realize_error(x.gather(0, ints({2, 0, 0}, {1, 3})), {"gather", "dimension 0 with size 2"});
  expect_realize_error(x.take_along_dim(ints({5, 0}, {2, 1}), 1), {"take_along_dim", dim1});
  expect_realize_error(x.take_along_dim(ints({6}, {1})), {"take_along_dim", "dimension 0 with size 6"});
  expect_realize_error(x.index_select(1, ints({5}, {1})), {"index_select", dim1});
  expect_realize_error(x.index_select(1, ints({-1}, {1})), {"index_select", dim1});
  expect_realize_error(Tensor::full({}, 2.0f).index_select(0, ints({1}, {1})), {"index_select", "size 1"});
  // Advanced indexing (x[i]) counts from the end down to -size, as PyTorch does.
  expect_realize_error(x.index(0, ints({5}, {1})), {"index", "dimension 0 with size 2"});
  expect_realize_error(x.index(0, ints({-3}, {1})), {"index", "dimension 0 with size 2"});
  expect_realize_error(x.index(1, ints({0, 3}, {2})), {"index", dim1});
  EXPECT_EQ(x.index(0, ints({-1}, {1})).to_vector<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(x.index(1, ints({-3, 2}, {2})).to_vector<float>(), (std::vector<float>{0, 2, 3, 5}));
  // In range, the values are PyTorch's.
  EXPECT_EQ(x.gather(1, ints({2, 0}, {2, 1})).to_vector<float>(), (std::vector<float>{2, 3}));
}

TEST(IndexingOutOfRange, ScattersOneHotAndEmbedding) {
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {2, 3});
  const std::string dim1 = "out of bounds for dimension 1 with size 3";
  expect_realize_error(x.scatter(1, ints({5, 0}, {2, 1}), 9.0), {"scatter", dim1});
  expect_realize_error(x.scatter(1, ints({-1, 0}, {2, 1}), Tensor::ones({2, 1})), {"scatter", dim1});
  expect_realize_error(x.scatter_add(1, ints({3, 0}, {2, 1}), Tensor::ones({2, 1})), {"scatter_add", dim1});
  // PyTorch: "Class values must be smaller than num_classes." / "... must be non-negative."
  expect_realize_error(ints({0, 3}, {2}).one_hot(3), {"one_hot", "num_classes (3)"});
  expect_realize_error(ints({-1}, {1}).one_hot(3), {"one_hot", "non-negative"});
  expect_error([] { ints({-1, 2}, {2}).one_hot(); }, {"one_hot", "non-negative"});  // read at the call
  // Embedding: PyTorch's "index out of range in self", negative indices included.
  lazygrad::nn::Embedding emb(4, 2);
  expect_realize_error(emb.forward(ints({4}, {1})), {"embedding", "index out of range", "[0, 4)"});
  expect_realize_error(emb.forward(ints({-1}, {1})), {"embedding", "index out of range"});
  expect_realize_error(lazygrad::embedding(ints({0, 9}, {2}), x), {"embedding", "[0, 2)"});
  EXPECT_EQ(lazygrad::embedding(ints({1, 0}, {2}), x).to_vector<float>(),
            (std::vector<float>{3, 4, 5, 0, 1, 2}));
  expect_error([&] { lazygrad::embedding(ints({0}, {1}), floats({1, 2}, {2})); }, {"embedding", "2-D"});
}

TEST(IndexingOutOfRange, LossTargetsButNotIgnoreIndex) {
  // PyTorch: "Target 3 is out of bounds."; ignore_index (-100, or one given) is not an error.
  Tensor logits = Tensor::zeros({2, 3});
  expect_realize_error(logits.cross_entropy(ints({3, 0}, {2})), {"cross_entropy", "target", "[0, 3)"});
  expect_realize_error(logits.cross_entropy(ints({-1, 0}, {2})), {"cross_entropy", "target"});
  expect_realize_error(logits.cross_entropy(ints({3, 0}, {2}), std::nullopt, -100, "mean", 0.1),
                       {"cross_entropy", "target"});
  expect_realize_error(Tensor::zeros({2, 3, 2}).cross_entropy(ints({3, 0, 0, 0}, {2, 2})), {"cross_entropy"});
  expect_realize_error(logits.nll_loss(ints({3, 0}, {2})), {"nll_loss", "target"});
  EXPECT_NEAR(logits.cross_entropy(ints({-100, 0}, {2})).item<float>(), std::log(3.0f), 1e-6);
  EXPECT_NEAR(logits.cross_entropy(ints({5, 0}, {2}), std::nullopt, 5).item<float>(), std::log(3.0f), 1e-6);
  EXPECT_EQ(logits.nll_loss(ints({-100, 0}, {2})).item<float>(), 0.0f);
}

TEST(IndexingOutOfRange, TheErrorComesFromTheKernelThatReadsTheIndex) {
  // The index may itself be computed (here in the same kernel as the gather), and several checked
  // indices in one kernel each name their own op.
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor i = ints({1, 2}, {2, 1});
  expect_realize_error(x.gather(1, i * 2), {"gather", "dimension 1 with size 3"});
  Tensor two_checks = x.gather(1, i) + x.index_select(1, ints({0, 5}, {2}));  // one kernel, two checks
  try {
    two_checks.realize();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("index_select: an index is out of bounds for dimension 1 with size 3", 0),
        0u)
        << e.what();
  }
  expect_realize_error(x.gather(1, ints({3, 0}, {2, 1}).to(lazygrad::kUInt8)).sum(), {"gather", "size 3"});
  // The process carries on, and the same tensors still work.
  EXPECT_EQ(x.gather(1, i).to_vector<float>(), (std::vector<float>{1, 5}));
}

TEST(IndexingOutOfRange, AJitReplayReportsItToo) {
  Tensor x = floats({0, 1, 2, 3, 4, 5}, {2, 3});
  lazygrad::Jit jit(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{x.gather(1, in[0]) * 2}; });
  for (int k = 0; k < 3; k++)
    EXPECT_EQ(jit({ints({2, 0}, {2, 1})})[0].to_vector<float>(), (std::vector<float>{4, 6}));
  expect_error([&] { jit({ints({3, 0}, {2, 1})})[0].realize(); }, {"gather", "dimension 1 with size 3"});
  EXPECT_EQ(jit({ints({1, 1}, {2, 1})})[0].to_vector<float>(), (std::vector<float>{2, 8}));
}

TEST(IndexingSemantics, TopkIsAlwaysSorted) {
  Tensor x = floats({0.5f, 3, -1, 2, 7, 1}, {6});
  auto a = x.topk(3, -1, true, false), b = x.topk(3);
  EXPECT_EQ(a.values.to_vector<float>(), b.values.to_vector<float>());
  EXPECT_EQ(a.indices.to_vector<int64_t>(), (std::vector<int64_t>{4, 1, 3}));
}

TEST(IndexingSemantics, StructuredBindingsAndArgsort) {
  auto [values, indices] = floats({2, -1, 5}, {3}).sort(0, true);
  EXPECT_EQ(values.to_vector<float>(), (std::vector<float>{5, 2, -1}));
  EXPECT_EQ(indices.dtype(), lazygrad::kInt64);
  EXPECT_EQ(floats({2, -1, 5}, {3}).argsort().to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
}

}  // namespace
