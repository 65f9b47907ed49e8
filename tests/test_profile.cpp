// The profiler (lazygrad/profile.h): each launch is charged to the layers whose nodes it computes,
// by their FLOPs share, so the layers' FLOPs add up to the launches'; a kernel fused across layers
// is split and listed as shared; a layer's backward is charged to it and the optimizer's step to
// "optimizer". Times are measured, never asserted.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <string>

using namespace lazygrad;

namespace {

const LayerProfile* layer(const Profile& p, const std::string& name) {
  for (const auto& l : p.layers)
    if (l.name == name) return &l;
  return nullptr;
}

std::string names(const Profile& p) {
  std::string s;
  for (const auto& l : p.layers) s += l.name + " ";
  return s;
}

}  // namespace

TEST(Profile, ChargesEachLayerOfATrainingStep) {
  auto model = std::make_shared<nn::Sequential>();
  model->register_module("0", std::make_shared<nn::Linear>(8, 16));
  model->register_module("1", std::make_shared<nn::ReLU>());
  model->register_module("2", std::make_shared<nn::Linear>(16, 4));
  optim::SGD opt(model->parameters(), 0.1);
  nn::CrossEntropyLoss loss_fn;
  Tensor x = Tensor::randn({32, 8}).realize(), y = Tensor::randint(0, 4, {32}).realize();
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = loss_fn((*model)(x), y);
    loss.backward();
    opt.step();
    loss.item<float>();
  };
  step();              // compiled before it is profiled (compiling is not what this checks)
  measure_roofline();  // measured once per process: its kernels are not the step's
  const int64_t ops_before = GlobalCounters::global_ops;
  Profile p = profile(step, model.get());
  const int64_t ops = GlobalCounters::global_ops - ops_before;
  for (const char* name : {"0", "1", "2", "CrossEntropyLoss", "optimizer"})
    EXPECT_NE(layer(p, name), nullptr) << name << " is not among: " << names(p);
  ASSERT_NE(layer(p, "0"), nullptr);
  EXPECT_EQ(layer(p, "0")->type, "Linear");
  EXPECT_EQ(layer(p, "0")->parameters, 8 * 16 + 16);
  EXPECT_EQ(layer(p, "2")->parameters, 16 * 4 + 4);
  // The first layer's forward product alone is 2 * 32 * 8 * 16 FLOPs; its weight gradient as much.
  EXPECT_GE(layer(p, "0")->flops, 2.0 * 2 * 32 * 8 * 16);
  double flops = 0;
  int64_t kernel_flops = 0;
  for (const auto& l : p.layers) flops += l.flops;
  for (const auto& k : p.kernels) {
    kernel_flops += k.flops;
    double share = 0;
    for (const auto& [name, s] : k.shares) share += s;
    EXPECT_NEAR(share, 1.0, 1e-9) << k.name;
  }
  EXPECT_EQ(kernel_flops, ops) << "the profile saw every launch the counters counted";
  EXPECT_NEAR(flops, static_cast<double>(kernel_flops), 1e-6 * static_cast<double>(kernel_flops) + 1);
  // The ReLU fuses into a kernel of a Linear (its input's bias add, or the next product's load).
  bool relu_shared = false;
  for (const auto& k : p.kernels)
    if (k.shares.size() > 1)
      for (const auto& [name, s] : k.shares) relu_shared |= name == "1";
  EXPECT_TRUE(relu_shared) << p.table();
  EXPECT_GT(layer(p, "1")->shared_kernels, 0);
  const std::string table = p.table();
  EXPECT_NE(table.find("shared kernels"), std::string::npos) << table;
  EXPECT_NE(table.find("roofline"), std::string::npos) << table;
  EXPECT_GT(p.roofline.gflops, 0);
  EXPECT_GT(p.roofline.gbs, 0);
  std::cout << table;
}

TEST(Profile, ModulesCalledThroughForwardAreChargedWithoutAModel) {
  nn::Linear a(4, 4), b(4, 2);
  Tensor x = Tensor::randn({3, 4}).realize();
  Profile p = profile([&] { b.forward(a.forward(x)).realize(); });
  EXPECT_NE(layer(p, "Linear"), nullptr) << names(p);
  EXPECT_NE(layer(p, "Linear#1"), nullptr) << "a second module of a type is numbered: " << names(p);
}

TEST(Profile, WorkOutsideAnyLayerIsListedAsSuch) {
  Tensor x = Tensor::randn({64}).realize();
  Profile p = profile([&] { (x * 2 + 1).realize(); });
  ASSERT_EQ(p.layers.size(), 1u) << names(p);
  EXPECT_EQ(p.layers[0].name, "(no layer)");
  EXPECT_EQ(p.layers[0].kernels, 1);
  EXPECT_EQ(p.kernels.size(), 1u);
}

TEST(Profile, NothingRealizedIsAnEmptyProfile) {
  Profile p = profile([] {});
  EXPECT_TRUE(p.layers.empty());
  EXPECT_TRUE(p.kernels.empty());
  EXPECT_NE(p.table().find("0 launched"), std::string::npos) << p.table();
}

TEST(Profile, AnErrorInsideLeavesNoProfileRunning) {
  nn::Linear a(4, 4);
  EXPECT_THROW(profile([&] { a.forward(Tensor::randn({3, 5})).realize(); }), Error);
  // Scopes are off again: a graph made now is charged to no layer in the next profile's terms.
  Tensor x = Tensor::randn({2, 4}).realize();
  Tensor y = a.forward(x);
  Profile p = profile([&] { y.realize(); });
  ASSERT_EQ(p.layers.size(), 1u) << names(p);
  EXPECT_EQ(p.layers[0].name, "(no layer)") << "made outside a profile, the graph carries no layer";
}
