// Devices: the registry, copies between devices (every dtype, views, empty tensors), ops across
// devices refused, kernel errors on a device without a return code, gradients through a copy, a Jit
// step with copies, Module::to, and training on OpenCL giving the CPU's losses. The CL cases skip,
// saying why, where no OpenCL device is found; the CPU:1 cases run everywhere.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "../models/mlp.h"
#include "codegen/optimize.h"
#include "engine/realize.h"
#include "runtime/device.h"
#include "skip_without_cl.h"

using namespace lazygrad;

namespace {

// Values of every dtype, with the edge cases a copy must keep bit for bit (-0.0, NaN, extremes).
Tensor sample(DType dt, const std::string& device) {
  std::vector<double> v{0.0, 1.0, -1.0, 2.5, -0.0, 100.0, -128.0, 127.0, 3.0e38, 65504.0, 1e-30};
  Tensor t = Tensor::from_vector(v, {11}, device);
  if (dt == kBool || !is_float(dt)) t = t.clamp(-100, 100);
  return t.to(dt);
}

void expect_same_bits(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); i++) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i])) << i;
      continue;
    }
    EXPECT_EQ(x[i], y[i]) << i;
    EXPECT_EQ(std::signbit(x[i]), std::signbit(y[i])) << i;
  }
}

void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.shape(), b.shape());
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); i++)
    EXPECT_NEAR(x[i], y[i], tol * (1 + std::fabs(x[i]))) << "element " << i;
}

}  // namespace

TEST(Devices, NamesAreCanonical) {
  EXPECT_EQ(canonical_device("cpu"), "CPU");
  EXPECT_EQ(canonical_device("CPU:0"), "CPU");
  EXPECT_EQ(canonical_device("cpu:2"), "CPU:2");
  EXPECT_EQ(canonical_device("cl:0"), "CL");
  EXPECT_EQ(canonical_device("CL:1"), "CL:1");
  EXPECT_THROW(canonical_device("TPU"), Error);
  EXPECT_THROW(canonical_device("CPU:x"), Error);
  try {
    Tensor::zeros({2}, kFloat32, "metal");
    FAIL() << "an unknown device was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'metal' is unknown"), std::string::npos) << e.what();
  }
}

TEST(Devices, EveryFactoryTakesADevice) {
  for (const Tensor& t :
       {Tensor::zeros({2}, kFloat32, "CPU:1"), Tensor::ones({2}, kFloat32, "CPU:1"),
        Tensor::full({2}, 3, std::nullopt, "CPU:1"), Tensor::arange(4, std::nullopt, "CPU:1"),
        Tensor::linspace(0, 1, 3, kFloat32, "CPU:1"), Tensor::eye(2, std::nullopt, kFloat32, "CPU:1"),
        Tensor::rand({2}, kFloat32, "CPU:1"), Tensor::randn({2}, kFloat32, "CPU:1"),
        Tensor::uniform({2}, 0, 1, kFloat32, "CPU:1"), Tensor::randint(0, 5, {2}, kInt64, "CPU:1"),
        Tensor::empty({2}, kFloat32, "CPU:1"), Tensor::from_vector<float>({1, 2}, {2}, "CPU:1")})
    EXPECT_EQ(t.device(), "CPU:1");
  Tensor x = Tensor::ones({2, 3}, kFloat32, "cpu:1");
  EXPECT_EQ(Tensor::zeros_like(x).device(), "CPU:1");
  EXPECT_EQ((x + 1).sum().device(), "CPU:1");
  EXPECT_EQ(x.transpose(0, 1).device(), "CPU:1");
  EXPECT_EQ(Tensor::zeros({1}).device(), default_device());
}

TEST(Devices, OpsOnTwoDevicesAreRefusedNamingBoth) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3}, "CPU");
  Tensor b = Tensor::from_vector<float>({1, 2, 3}, {3}, "CPU:1");
  try {
    (void)(a + b);
    FAIL() << "an op across two devices was accepted";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("CPU and CPU:1"), std::string::npos) << m;
  }
  EXPECT_THROW((void)a.matmul(b.reshape({3, 1})), Error);
  // Constants and random numbers are computed where they are read: they mix with any device.
  EXPECT_EQ((b + Tensor::ones({3}) * 2).to_vector<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ((a + b.to("CPU")).to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(Devices, CopiesBetweenCpuDevicesKeepEveryDtype) {
  for (DType dt : kAllDTypes) {
    Tensor x = sample(dt, "CPU");
    Tensor y = x.to("CPU:1");
    EXPECT_EQ(y.device(), "CPU:1");
    expect_same_bits(x, y.to("CPU"));
  }
}

TEST(Devices, CopiesToClAndBackKeepEveryDtype) {
  SKIP_WITHOUT_CL();
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = sample(dt, "CPU").realize();
    Tensor y = x.to("CL");
    EXPECT_EQ(y.device(), "CL");
    expect_same_bits(x, y);                 // read straight from CL
    expect_same_bits(x, y.to("CPU"));       // and through a copy back
    expect_same_bits(x, sample(dt, "CL"));  // computed there: the same casts
  }
}

TEST(Devices, CopiesOfViewsAndEmptyTensors) {
  SKIP_WITHOUT_CL();
  Tensor x = Tensor::arange(24, kFloat32).reshape({2, 3, 4}).realize();
  for (const Tensor& v : {x.permute({2, 0, 1}), x.slice(2, 1, 3), x.flip(1),
                          x.slice(0, 1, 2).expand({3, 3, 4}), x.pad({1, 1}, 0.0)}) {
    Tensor on_cl = v.to("CL");
    EXPECT_EQ(on_cl.device(), "CL");
    expect_same_bits(v, on_cl);
    expect_same_bits(v, on_cl.to("CPU"));
  }
  Tensor cl = x.to("CL");
  expect_same_bits(x.permute({1, 2, 0}), cl.permute({1, 2, 0}).to("CPU"));
  Tensor empty = Tensor::zeros({0, 3}).contiguous().to("CL");
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  EXPECT_TRUE(empty.to("CPU").to_vector<float>().empty());
  EXPECT_TRUE(Tensor::from_vector<float>({}, {0}, "CL").to_vector<float>().empty());
}

TEST(Devices, Debug2ShowsTheClKernelAndTheCopy) {
  SKIP_WITHOUT_CL();
  Tensor x = Tensor::rand({4, 4}, kFloat32, "CL").realize();
  testing::internal::CaptureStderr();
  set_debug(2);
  (x * 2).to("CPU").realize();  // a kernel on CL, then the copy (a floating rand would move instead)
  set_debug(0);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("*** CL "), std::string::npos) << log;
  EXPECT_NE(log.find("copy 64 CPU <- CL"), std::string::npos) << log;
}

TEST(Devices, OpsOnClMatchTheCpu) {
  SKIP_WITHOUT_CL();
  Tensor::manual_seed(3);
  Tensor a = Tensor::randn({17, 33}), b = Tensor::randn({33, 9}), img = Tensor::randn({2, 3, 9, 9}),
         w = Tensor::randn({4, 3, 3, 3});
  auto run = [&](const std::string& d) {
    Tensor x = a.to(d), y = b.to(d);
    return std::vector<Tensor>{x.matmul(y),
                               x.softmax(1),
                               x.sum(0),
                               x.max(1),
                               x.argmax(1),
                               (x.exp() + x.abs().log() + x.sin() + x.cos() + x.abs().sqrt()).mean(1),
                               x.where(x.gt(0), x * 0.5),
                               x.abs().pow(1.7),
                               img.to(d).conv2d(w.to(d), std::nullopt, 1, 1),
                               x.to(kFloat16) * 3,
                               x.to(kBFloat16).sum(1),
                               x.to(kFloat64).cumsum(1),
                               (x * 100).to(kInt32).floor_divide(7).remainder(5)};
  };
  std::vector<Tensor> cpu = run("CPU"), cl = run("CL");
  for (size_t i = 0; i < cpu.size(); i++) {
    SCOPED_TRACE("result " + std::to_string(i));
    EXPECT_EQ(cl[i].device(), "CL");
    expect_close(cpu[i], cl[i],
                 cpu[i].dtype() == kBFloat16  ? 1e-2
                 : cpu[i].dtype() == kFloat16 ? 1e-3
                                              : 1e-5);
  }
}

TEST(Devices, ARowCountThatIsNoMultipleOfTheGroupIsRight) {
  SKIP_WITHOUT_CL();
  // 100 and 1000 rows are no multiple of the 64 work-items of a group: the last group is cut short.
  for (int64_t rows : {1, 63, 65, 100, 1000}) {
    Tensor x = Tensor::arange(rows * 7, kFloat32).reshape({rows, 7});
    expect_close(x.sum(1), x.to("CL").sum(1));
    expect_close(x.max(0), x.to("CL").max(0));
  }
}

TEST(Devices, IntegerDivisionByZeroOnClRaises) {
  SKIP_WITHOUT_CL();
  Tensor a = Tensor::from_vector<int32_t>({7, 8, 9}, {3}, "CL"),
         b = Tensor::from_vector<int32_t>({2, 0, 3}, {3}, "CL");
  try {
    a.floor_divide(b).realize();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("integer division by zero in kernel"), std::string::npos)
        << e.what();
  }
  // The error word was cleared: the next kernel on CL runs as usual.
  EXPECT_EQ(a.floor_divide(b + 1).to_vector<int32_t>(), (std::vector<int32_t>{2, 8, 2}));
  Tensor idx = Tensor::from_vector<int64_t>({0, 5}, {2}, "CL");
  try {
    a.gather(0, idx).realize();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of bounds"), std::string::npos) << e.what();
  }
}

// The compiler fuzzer's seed 3 on CL (mode "CL opts", the reduction unrolled 4 then 2): an int32
// square that overflows wraps, as on the CPU (-fwrapv) and in PyTorch. OpenCL C leaves signed
// overflow undefined and clang folded the argmin of the squares to index 0; the C-style base now
// does a signed + or * that can overflow in the unsigned type.
TEST(Devices, SignedOverflowWrapsOnCl) {
  SKIP_WITHOUT_CL();
  const std::vector<Opt> unrolled{{AxisKind::Unroll, 0, 4}, {AxisKind::Unroll, 0, 2}};
  set_opts_chooser(
      [unrolled](const Kernel& k) {
        try {
          apply_opts(k, unrolled);
          return unrolled;
        } catch (const Error&) {
          return required_opts(k);
        }
      },
      0x5eed3);
  Tensor cpu = Tensor::from_vector<int32_t>({0, -2, -4, -214440732, 0, 1, 97153226, -2}, {8});
  Tensor cl = cpu.to("CL");
  EXPECT_EQ(cl.square().to_vector<int32_t>(), cpu.square().to_vector<int32_t>());
  EXPECT_EQ(cl.square().argmin(0, true).to_vector<int64_t>(), (std::vector<int64_t>{3}));
  Tensor big = Tensor::from_vector<int64_t>({INT64_MAX, 3, INT64_MIN + 1}, {3});
  EXPECT_EQ((big.to("CL") * 3 + 7).to_vector<int64_t>(), (big * 3 + 7).to_vector<int64_t>());
  EXPECT_EQ(big.to("CL").sum().item<int64_t>(), big.sum().item<int64_t>());
  set_opts_chooser(nullptr, 0);
}

TEST(Devices, GradientsFlowBackAcrossACopy) {
  SKIP_WITHOUT_CL();
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {3}).requires_grad(true);
  Tensor y = (x.to("CL") * x.to("CL")).sum();
  EXPECT_EQ(y.device(), "CL");
  y.backward();
  EXPECT_EQ(x.grad().device(), "CPU");
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(Devices, AJitStepWithCopiesReplays) {
  SKIP_WITHOUT_CL();
  Jit step([](const std::vector<Tensor>& in) {
    Tensor on_cl = in[0].to("CL");
    return std::vector<Tensor>{(on_cl * 2 + 1).sum(0).to("CPU")};
  });
  for (int call = 0; call < 5; call++) {
    Tensor x = Tensor::full({4, 3}, static_cast<double>(call)).contiguous().realize();
    std::vector<Tensor> out = step({x});
    EXPECT_EQ(out[0].device(), "CPU");
    std::vector<float> want(3, static_cast<float>(4 * (2 * call + 1)));
    EXPECT_EQ(out[0].to_vector<float>(), want) << "call " << call;
  }
}

TEST(Devices, AJitReplayRefusesAnInputOnAnotherDevice) {
  Jit step([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2}; });
  for (int call = 0; call < 3; call++) step({Tensor::ones({3}).contiguous().realize()});
  try {
    step({Tensor::ones({3}, kFloat32, "CPU:1").contiguous().realize()});
    FAIL() << "a replay took an input on another device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("was on CPU when captured, now on CPU:1"), std::string::npos)
        << e.what();
  }
}

TEST(Devices, ModuleToMovesParametersInPlace) {
  SKIP_WITHOUT_CL();
  Tensor::manual_seed(0);
  auto lin = std::make_shared<nn::Linear>(5, 3);
  Tensor w = lin->weight;                      // a handle held elsewhere, as an optimizer holds it
  Tensor x = Tensor::randn({4, 5}).realize();  // a buffer on the CPU
  std::vector<float> before = (*lin)(x).to_vector<float>();
  lin->to("CL");
  EXPECT_EQ(w.device(), "CL");
  EXPECT_EQ(lin->bias.device(), "CL");
  EXPECT_TRUE(w.requires_grad());
  Tensor y = (*lin)(x.to("CL"));
  EXPECT_EQ(y.device(), "CL");
  expect_close(Tensor::from_vector(before, {4, 3}), y);
  EXPECT_THROW((*lin)(x), Error);  // a CPU input to a CL module
}

// A checkpoint read on the CPU, loaded into a module on another device: the module's tensors stay
// where they are (one copy each, no kernel, with assign), and its forward pass runs there. Before,
// assign made the module's tensor read the CPU buffer while claiming its old device, and the
// scheduler refused the first forward on a GPU.
TEST(Devices, ALoadedStateDictStaysOnTheModulesDevice) {
  for (bool assign : {true, false}) {
    Tensor::manual_seed(0);
    auto lin = std::make_shared<nn::Linear>(5, 3);
    lin->to("CPU:1");
    Tensor w = Tensor::arange(15).reshape({3, 5}).to(kFloat32).contiguous().realize();  // on the CPU
    Tensor b = Tensor::from_vector<float>({1, 2, 3}, {3});
    GlobalCounters::reset();
    lin->load_state_dict({{"weight", w}, {"bias", b}}, /*strict=*/true, assign);
    if (assign) {
      EXPECT_EQ(GlobalCounters::kernel_count, 0) << "a copy each, straight into the module's buffers";
    }
    EXPECT_EQ(lin->weight.device(), "CPU:1");
    EXPECT_EQ(lin->bias.device(), "CPU:1");
    Tensor x = Tensor::ones({2, 5}, kFloat32, "CPU:1");
    Tensor y = (*lin)(x);
    EXPECT_EQ(y.device(), "CPU:1");
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{11, 37, 63, 11, 37, 63})) << "assign " << assign;
  }
}

// assign and narrow_assign copy a value from another device, as torch's copy_ does.
TEST(Devices, AssignCopiesAValueFromAnotherDevice) {
  Tensor t = Tensor::zeros({2, 3}, kFloat32, "CPU:1").contiguous().realize();
  t.assign(Tensor::full({2, 3}, 4.0));  // a constant: computed in the writing kernel
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>(6, 4)));
  t.assign(Tensor::from_vector<float>({5, 6, 7, 8, 9, 10}, {2, 3}).realize());  // a buffer on the CPU
  EXPECT_EQ(t.device(), "CPU:1");
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{5, 6, 7, 8, 9, 10}));
  t.narrow_assign(0, 1, Tensor::from_vector<float>({-1, -2, -3}, {1, 3}).realize());
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{5, 6, 7, -1, -2, -3}));
}

// 20 Adam steps of the Fashion-MNIST MLP (models/mlp.h) on CL give the CPU's losses.
TEST(Devices, MlpTrainingOnClGivesTheCpusLosses) {
  SKIP_WITHOUT_CL();
  const std::string root(data::kFashionMnistRoot);
  if (!std::filesystem::exists(root))
    GTEST_SKIP() << "no Fashion-MNIST at " << root << " (dataset-fashion-mnist)";
  data::FashionMnist ds = data::load_fashion_mnist(root);
  auto losses = [&](const std::string& device) {
    Tensor::manual_seed(0);
    auto model = std::make_shared<models::MLP>();
    model->to(device);
    optim::Adam opt(model->parameters(), 1e-3);
    std::vector<float> out;
    for (int64_t step = 0; step < 20; step++) {
      Tensor images = ds.train_images.narrow(0, step * 32, 32).to(device);
      Tensor labels = ds.train_labels.narrow(0, step * 32, 32).to(device);
      Tensor loss = (*model)(data::pixels_to_float(images)).cross_entropy(labels);
      loss.backward();
      opt.step({loss});
      opt.zero_grad();
      out.push_back(loss.item<float>());
    }
    return out;
  };
  std::vector<float> cpu = losses("CPU"), cl = losses("CL");
  for (size_t i = 0; i < cpu.size(); i++) EXPECT_NEAR(cpu[i], cl[i], 1e-5) << "step " << i;
  EXPECT_LT(cl.back(), cl.front());
}
