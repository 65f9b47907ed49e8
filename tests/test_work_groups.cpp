// Work-groups (docs/devices.md): Local pieces (the work-items of a group along output axes) and
// grouped reductions (a work-group shares one reduction: partial results in local memory, a tree
// combine). Each case forces opts on a kernel run on CL and checks its values against the CPU's,
// including sizes the group does not divide, NaN in a max, int32 sums that wrap, bools, a grouped
// reduction in a row statistic's loop and one writing in place. The optimizer's and BEAM's side:
// what fits which target. The CL cases skip, saying why, where no OpenCL device is found.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cmath>

#include "codegen/linearize.h"
#include "codegen/optimize.h"
#include "engine/beam.h"
#include "engine/realize.h"
#include "engine/schedule.h"
#include "forced_opts.h"
#include "renderer/renderer.h"
#include "runtime/device.h"
#include "skip_without_cl.h"

using namespace lazygrad;

namespace {

// The kernel's row statistics as loops (what every kernel needs), then `extra`.
std::vector<Opt> with(const Kernel& k, std::vector<Opt> extra) {
  std::vector<Opt> opts = required_opts(k);
  opts.insert(opts.end(), extra.begin(), extra.end());
  return opts;
}

// A Group of `amount` on the first reduction axis of every kernel that has one.
std::vector<Opt> group_first_reduction(const Kernel& k, const KernelAxes& ax, int64_t amount) {
  if (ax.ranges.size() == ax.n_output) return with(k, {});
  return with(k, {{AxisKind::Group, static_cast<int>(ax.n_output), amount}});
}

bool any_grouped(const std::vector<std::string>& used) {
  for (const auto& s : used)
    if (s.find('R') != std::string::npos) return true;
  return false;
}

// The one kernel that computes t from realized inputs.
Kernel only_kernel(const Tensor& t) {
  Schedule s = create_schedule({t.uop()}, {t.device()});
  EXPECT_EQ(s.kernels.size(), 1u);
  return s.kernels.at(0);
}

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.shape(), b.shape());
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); i++) {
    if (std::isnan(y[i])) {
      EXPECT_TRUE(std::isnan(x[i])) << "element " << i;
      continue;
    }
    EXPECT_NEAR(x[i], y[i], tol * (1 + std::fabs(y[i]))) << "element " << i;
  }
}

}  // namespace

TEST(WorkGroups, AGroupedSumOverASizeTheGroupDoesNotDivideIsRight) {
  SKIP_WITHOUT_CL();
  Tensor x = Tensor::randn({3, 1000}, kFloat32, "CPU");
  Tensor want = x.sum(1);
  // 1000 = 15 * 64 + 40: the last trip of 24 of the 64 work-items is past the row's end. 50 on
  // groups of 64: 14 work-items never get an element. 64: exactly one element each.
  for (int64_t group : {64, 7, 256}) {
    ForcedOpts forced(
        [group](const Kernel& k, const KernelAxes& ax) { return group_first_reduction(k, ax, group); });
    expect_close(x.to("CL").sum(1), want);
    expect_close(x.to("CL").narrow(1, 0, 50).sum(1), x.narrow(1, 0, 50).sum(1));
    expect_close(x.to("CL").narrow(1, 0, 64).sum(1), x.narrow(1, 0, 64).sum(1));
    EXPECT_TRUE(any_grouped(forced.used)) << group;
  }
}

TEST(WorkGroups, AGroupedReductionCountsTheFlopsOfAllItsWorkItems) {
  SKIP_WITHOUT_CL();
  Tensor x = Tensor::randn({4, 256}, kFloat32, "CL").realize();
  auto flops = [&](int64_t group) {
    ForcedOpts forced([group](const Kernel& k, const KernelAxes& ax) {
      return group ? group_first_reduction(k, ax, group) : with(k, {});
    });
    int64_t before = GlobalCounters::global_ops;
    x.sum(1).realize();
    return GlobalCounters::global_ops - before;
  };
  const int64_t ungrouped = flops(0);
  EXPECT_GE(ungrouped, 4 * 256);
  EXPECT_EQ(flops(16), ungrouped);
  EXPECT_EQ(flops(64), ungrouped);
}

TEST(WorkGroups, GroupedMaxProdIntAndBoolReductionsMatchTheCpu) {
  SKIP_WITHOUT_CL();
  Tensor x = Tensor::randn({4, 300}, kFloat32, "CPU");
  Tensor nan = Tensor::from_vector(std::vector<float>{1, NAN, 3, -2, 5, 0}, {1, 6}, "CPU");
  // int32 sums that wrap, as PyTorch's do: 300 values near 2^30.
  Tensor big = (Tensor::arange(300, kInt32, "CPU") + (1 << 30)).reshape({1, 300});
  ForcedOpts forced([](const Kernel& k, const KernelAxes& ax) { return group_first_reduction(k, ax, 16); });
  expect_close(x.to("CL").max(1), x.max(1));
  expect_close(x.to("CL").min(1), x.min(1));
  expect_close((x.to("CL") * 0.1f + 1).prod(1), (x * 0.1f + 1).prod(1), 1e-4);
  expect_close(nan.to("CL").max(1), nan.max(1));
  EXPECT_EQ(big.to("CL").sum(1).to_vector<int32_t>(), big.sum(1).to_vector<int32_t>());
  EXPECT_EQ((x.to("CL") > 2.5f).any(1).to_vector<bool>(), (x > 2.5f).any(1).to_vector<bool>());
  EXPECT_EQ((x.to("CL") > -3.5f).all(1).to_vector<bool>(), (x > -3.5f).all(1).to_vector<bool>());
  expect_close(x.to("CL").argmax(1), x.argmax(1));
  EXPECT_TRUE(any_grouped(forced.used));
}

TEST(WorkGroups, LocalPiecesAndAGroupTogether) {
  SKIP_WITHOUT_CL();
  Tensor a = Tensor::randn({8, 96}, kFloat32, "CPU"), b = Tensor::randn({96, 12}, kFloat32, "CPU");
  // Rows 4 to a group, columns 2, and the reduction shared by 8: 64 work-items per group.
  ForcedOpts forced([](const Kernel& k, const KernelAxes& ax) {
    if (ax.n_output != 2 || ax.ranges.size() != 3) return with(k, {});
    return with(k, {{AxisKind::Local, 0, 4}, {AxisKind::Local, 1, 2}, {AxisKind::Group, 2, 8}});
  });
  expect_close(a.to("CL").matmul(b.to("CL")), a.matmul(b), 1e-4);
  EXPECT_TRUE(any_grouped(forced.used));
  // Local pieces alone: an elementwise kernel's work-groups are 4 x 8 of its outputs.
  ForcedOpts locals([](const Kernel& k, const KernelAxes& ax) {
    if (ax.n_output != 2 || ax.sizes[0] % 4 || ax.sizes[1] % 8) return with(k, {});
    return with(k, {{AxisKind::Local, 0, 4}, {AxisKind::Local, 1, 8}});
  });
  Tensor c = Tensor::randn({12, 40}, kFloat32, "CPU");
  expect_close((c.to("CL") * 2 + 1).exp(), (c * 2 + 1).exp());
  EXPECT_TRUE(std::any_of(locals.used.begin(), locals.used.end(),
                          [](const std::string& s) { return s.find("T0:4 T1:8") != std::string::npos; }));
}

TEST(WorkGroups, AGroupedRowStatisticInsideItsReadersLoop) {
  SKIP_WITHOUT_CL();
  // softmax fuses the row's max and sum into the kernel that reads the row back: the grouped
  // reductions run inside a loop, their local memory used once a row.
  Tensor x = Tensor::randn({5, 200}, kFloat32, "CPU");
  ForcedOpts forced([](const Kernel& k, const KernelAxes& ax) {
    std::vector<Opt> opts = required_opts(k);
    if (ax.ranges.size() > ax.n_output && ax.sizes[ax.n_output] > 1)
      opts.push_back({AxisKind::Group, static_cast<int>(ax.n_output), 32});
    return opts;
  });
  expect_close(x.to("CL").softmax(1), x.softmax(1));
  expect_close(x.to("CL").log_softmax(1), x.log_softmax(1));
  EXPECT_TRUE(any_grouped(forced.used));
}

TEST(WorkGroups, AGroupedReductionWritingInPlaceWritesOnce) {
  SKIP_WITHOUT_CL();
  // Every work-item of the group holds the sum; one stores. Were all 32 to read, add and store,
  // a late one would add to an early one's result.
  Tensor base = Tensor::randn({6, 100}, kFloat32, "CPU");
  Tensor x = base.to("CL").contiguous().realize();
  ForcedOpts forced([](const Kernel& k, const KernelAxes& ax) { return group_first_reduction(k, ax, 32); });
  Tensor row = Tensor::ones({6, 1}, kFloat32, "CL").contiguous().realize();
  row.assign(row + x.sum(1, true)).realize();
  expect_close(row, base.sum(1, true) + 1, 1e-5);
  EXPECT_TRUE(any_grouped(forced.used));
}

TEST(WorkGroups, WhatFitsWhichTarget) {
  Kernel k = only_kernel(Tensor::randn({4, 256}, kFloat32, "CPU").realize().sum(1));
  const std::vector<Opt> grouped{{AxisKind::Group, 1, 64}};
  // The CPU keeps its thread slices: no work-groups there.
  EXPECT_TRUE(fit_to_target(k, grouped, cpu_target()).empty());
  EXPECT_NE(misfit(apply_opts(k, grouped), cpu_target()).find("no work-groups"), std::string::npos);
  EXPECT_THROW(render_kernel(k, grouped), Error);
  for (const auto& opts : extensions(k, {}, cpu_target()))
    for (const Opt& o : opts) EXPECT_TRUE(o.kind != AxisKind::Local && o.kind != AxisKind::Group);
  // A device with work-groups takes them, up to its group size and its local memory.
  Target wg;
  wg.thread_slices = false;
  wg.local_memory = 1024;
  wg.max_local = {256, 256, 64};
  wg.max_group_size = 256;
  EXPECT_EQ(fit_to_target(k, grouped, wg), grouped);
  EXPECT_NE(misfit(apply_opts(k, std::vector<Opt>{{AxisKind::Group, 1, 512}}), wg).find("more than its 256"),
            std::string::npos);
  EXPECT_NE(misfit(apply_opts(k, std::vector<Opt>{{AxisKind::Local, 0, 2}, {AxisKind::Group, 1, 128}}), wg)
                .find("local memory"),
            std::string::npos);
  bool group_move = false;
  for (const auto& opts : extensions(k, {}, wg)) group_move |= opts.back().kind == AxisKind::Group;
  EXPECT_TRUE(group_move);
  // Where Local and Group go, and what may follow a Group.
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Group, 0, 2}}), Error);  // an output axis
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Local, 1, 2}}), Error);  // the reduction
  // A Group that leaves a partial trip (256 on 3) is its axis's only split; one that divides is not.
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Group, 1, 3}, {AxisKind::Unroll, 1, 2}}), Error);
  EXPECT_NO_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Group, 1, 8}, {AxisKind::Unroll, 1, 2}}));
  EXPECT_NO_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Unroll, 1, 2}, {AxisKind::Group, 1, 8}}));
  EXPECT_THROW(apply_opts(k, std::vector<Opt>{{AxisKind::Unroll, 1, 2}, {AxisKind::Group, 1, 3}}), Error);
  EXPECT_EQ(apply_opts(k, std::vector<Opt>{{AxisKind::Local, 0, 2}, {AxisKind::Group, 1, 3}}).local_size, 6);
  EXPECT_EQ(parse_opts("T0:2 R1:3"), (std::vector<Opt>{{AxisKind::Local, 0, 2}, {AxisKind::Group, 1, 3}}));
}

TEST(WorkGroups, AKernelOfFewOutputsGetsANarrowerGroup) {
  // A GPU's target (renderer/cuda_renderer.cpp): groups of 256, each work-item 4 elements at least.
  Target gpu;
  gpu.thread_slices = false;
  gpu.local_memory = 48 * 1024;
  gpu.max_local = {1024, 1024, 64};
  gpu.max_group_size = 1024;
  gpu.group_reduction = 256;
  auto grouping = [](const std::vector<Opt>& opts) {
    for (const Opt& o : opts)
      if (o.kind == AxisKind::Group) return o.amount;
    return int64_t{0};
  };
  auto row_sum = [](int64_t rows, int64_t n) {
    return only_kernel(Tensor::randn({rows, n}, kFloat32, "CPU").realize().sum(1));
  };
  // A layer norm's statistic over one row of 768: a group of 128 (6 elements each), not one
  // work-item looping over all 768.
  EXPECT_EQ(grouping(default_opts(row_sum(1, 768), gpu)), 128);
  EXPECT_EQ(grouping(default_opts(row_sum(12, 128), gpu)), 32);
  EXPECT_EQ(grouping(default_opts(row_sum(1, 100), gpu)), 0);  // under 4 x 32: no group
  EXPECT_EQ(grouping(default_opts(row_sum(1, 3072), gpu)), 256);
  // Many outputs fill the device on their own: groups of 256 where the row is long enough, as before.
  EXPECT_EQ(grouping(default_opts(row_sum(4096, 768), gpu)), 0);
  EXPECT_EQ(grouping(default_opts(row_sum(4096, 1024), gpu)), 256);
  // A CPU's OpenCL target groups as many work-items as its vector has lanes: unchanged.
  Target lanes = gpu;
  lanes.group_reduction = 16;
  EXPECT_EQ(grouping(default_opts(row_sum(1, 768), lanes)), 16);
  EXPECT_EQ(grouping(default_opts(row_sum(1, 32), lanes)), 0);
}

TEST(WorkGroups, APartialGroupInsideAnOutputLoopIsRefused) {
  // PoCL aborted the process on such a kernel (the compiler fuzzer's seed 95064 on CL): each row
  // of 13 reduced by 2 work-items (one has a trip fewer), the 7 rows a loop around it.
  Kernel k = only_kernel(Tensor::randn({7, 13}, kFloat32, "CPU").realize().max(1));
  Target wg;
  wg.thread_slices = false;
  wg.local_memory = 1024;
  wg.max_local = {256, 256, 64};
  wg.max_group_size = 256;
  const std::vector<Opt> partial{{AxisKind::Loop, 0, 7}, {AxisKind::Group, 1, 2}};
  EXPECT_NE(misfit(apply_opts(k, partial), wg).find("partial inside an output loop"), std::string::npos);
  EXPECT_EQ(fit_to_target(k, partial, wg), required_opts(k));
  // A group that divides the row, or rows that are not a loop, are fine.
  EXPECT_EQ(misfit(apply_opts(k, std::vector<Opt>{{AxisKind::Loop, 0, 7}, {AxisKind::Group, 1, 13}}), wg),
            "");
  EXPECT_EQ(misfit(apply_opts(k, std::vector<Opt>{{AxisKind::Group, 1, 2}}), wg), "");
}

namespace {

// A target with work-groups, as OpenCL's and WebGPU's are.
Target work_group_target() {
  Target wg;
  wg.thread_slices = false;
  wg.local_memory = 1024;
  wg.max_local = {256, 256, 64};
  wg.max_group_size = 256;
  return wg;
}

// cat({a, b, a}) of a = x.argmin(0, true): one argmin read by two pieces of the cat, so one
// reduction range listed as two axes (2 and 3) of the kernel, r_3_5_16_16.
Tensor argmin_twice_in_a_cat(const Tensor& x) {
  Tensor a = x.argmin(0, true).to(kInt32);
  Tensor b = Tensor::from_vector<int32_t>({2, -1051818258, -2, -2, 2}, {1, 5}, x.device());
  return Tensor::cat({a, b, a}, 0);
}

Kernel kernel_with_two_reductions(const Tensor& t) {
  for (const Kernel& k : create_schedule({t.uop()}, {t.device()}).kernels)
    if (kernel_axes(k).reduces.size() == 2) return k;
  ADD_FAILURE() << "no kernel with two reductions";
  return {};
}

// uint8 x % y, then its min over the 5 elements of a 32-element buffer: with a Group of 32 on the
// 5, 27 work-items run no trip of the reduction, and the bytes past the 5th (the divisors there
// are 0) must not be read by them.
Tensor min_of_remainders(const char* dev) {
  std::vector<uint8_t> x(32, 7), y(32, 0);
  const uint8_t xs[] = {9, 193, 10, 2, 105}, ys[] = {8, 1, 3, 3, 4};
  std::copy(std::begin(xs), std::end(xs), x.begin());
  std::copy(std::begin(ys), std::end(ys), y.begin());
  Tensor a = Tensor::from_vector<uint8_t>(x, {32}, dev).narrow(0, 0, 5);
  Tensor b = Tensor::from_vector<uint8_t>(y, {32}, dev).narrow(0, 0, 5);
  return a.remainder(b).min(0);
}

}  // namespace

// The compiler fuzzer's seeds 3256 and 3718 on WEBGPU: a Group piece on axis 2 of the argmin in
// two pieces of a cat was replaced by axis 3's split of the same range, so the code indexed no
// work-item, yet local_size counted 4: the kernel was rendered for groups of 5 (one work-item per
// output) and launched with 4. local_size is now the pieces the code indexes, and one function
// (work_groups) gives the engine's launch and the renderers' group.
TEST(WorkGroups, AGroupOnAnAxisTheCodeNoLongerIndexesMakesNoGroup) {
  Kernel k =
      kernel_with_two_reductions(argmin_twice_in_a_cat(Tensor::randn({16, 5}, kFloat32, "CPU").realize()));
  const KernelAxes ax = kernel_axes(k);
  ASSERT_EQ(ax.n_output, 2u);
  ASSERT_EQ(ax.ranges.size(), 4u);
  EXPECT_EQ(ax.ranges[2], ax.ranges[3]);  // one range, two axes
  const Target wg = work_group_target();
  Kernel vanished = apply_opts(
      k, std::vector<Opt>{{AxisKind::Upcast, 0, 3}, {AxisKind::Group, 2, 4}, {AxisKind::Unroll, 3, 4}});
  EXPECT_EQ(vanished.local_size, 1);
  EXPECT_TRUE(linearize(vanished).thread_ranges.empty());
  const WorkGroups plain = work_groups(vanished, wg);
  EXPECT_FALSE(plain.per_index);
  EXPECT_EQ(plain.size, 5);  // one work-item per output, in one group
  EXPECT_EQ(plain.count, 1);
  // On the axis the code keeps, the Group is a group of 4 work-items per output.
  Kernel grouped = apply_opts(k, std::vector<Opt>{{AxisKind::Upcast, 0, 3}, {AxisKind::Group, 3, 4}});
  EXPECT_EQ(grouped.local_size, 4);
  EXPECT_EQ(linearize(grouped).thread_ranges.size(), 1u);
  const WorkGroups per_output = work_groups(grouped, wg);
  EXPECT_TRUE(per_output.per_index);
  EXPECT_EQ(per_output.size, 4);
  EXPECT_EQ(per_output.count, 5);
}

// The compiler fuzzer's seed 3820 (WEBGPU, and CL too): the loads and the remainder of a grouped
// reduction's body were hoisted out of its loop, whose own bound lets work-items past the row's
// end run no trip, so they divided by bytes read past the row ("integer division by zero"). What
// depends on the work-item where such a bound does stays inside the loop, under its bound.
TEST(WorkGroups, WhatAnIdleWorkItemWouldReadStaysUnderItsLoopsBound) {
  Kernel k = only_kernel(min_of_remainders("CPU"));
  Kernel applied = apply_opts(k, std::vector<Opt>{{AxisKind::Group, 0, 32}});
  const LinearKernel lin = linearize(applied);
  size_t open = lin.insts.size(), close = lin.insts.size();
  for (size_t i = 0; i < lin.insts.size(); i++) {
    const Inst& in = lin.insts[i];
    if (in.step == Step::Open && in.u->src.size() > 1) open = i;  // the loop with its own bound
    if (in.step == Step::Close && open < i && close == lin.insts.size()) close = i;
  }
  ASSERT_LT(open, lin.insts.size()) << "no loop with a bound of its own";
  int loads = 0;
  for (size_t i = 0; i < lin.insts.size(); i++) {
    const Ops op = lin.insts[i].u->op;
    if (lin.insts[i].step != Step::Compute || (op != Ops::LOAD && op != Ops::MOD)) continue;
    loads += op == Ops::LOAD;
    EXPECT_TRUE(open < i && i < close) << "step " << i << " (" << op_name(op) << ") outside the bounded loop";
  }
  EXPECT_EQ(loads, 2);
}

TEST(WorkGroups, AnIdleWorkItemOfAGroupedReductionReadsNothing) {
  SKIP_WITHOUT_CL();
  ForcedOpts forced([](const Kernel& k, const KernelAxes& ax) { return group_first_reduction(k, ax, 32); });
  for (int run = 0; run < 3; run++) EXPECT_EQ(min_of_remainders("CL").item<uint8_t>(), 0);
  EXPECT_TRUE(any_grouped(forced.used));
}

TEST(WorkGroups, BeamOnClSearchesWorkGroups) {
  SKIP_WITHOUT_CL();
  // Small, since PoCL compiles every candidate.
  Kernel k = only_kernel(Tensor::randn({2, 16}, kFloat32, "CL").realize().sum(1));
  ASSERT_EQ(k.device, "CL");
  const Target& t = device("CL").renderer().target();
  bool local = false, group = false;
  for (const auto& opts : extensions(k, {}, t)) {
    local |= opts.back().kind == AxisKind::Local;
    group |= opts.back().kind == AxisKind::Group;
  }
  EXPECT_TRUE(local && group);
  std::vector<Opt> best = beam_opts(k, 2, t);
  EXPECT_TRUE(misfit(apply_opts(k, best), t).empty()) << opts_str(best);
}
