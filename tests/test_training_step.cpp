// One training step of a 2-layer MLP (forward, cross-entropy, backward, SGD update) realized at
// once: a small, fixed number of kernels. docs/autograd.md explains the count.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <cmath>

#include "ir/uop.h"

using namespace lazygrad;

namespace {

struct Mlp {
  Tensor w1, b1, w2, b2;
  std::vector<Tensor*> params() { return {&w1, &b1, &w2, &b2}; }
};

Mlp make_mlp() {
  Tensor::manual_seed(0);
  return {(Tensor::randn({16, 20}) * 0.2).requires_grad(true), Tensor::zeros({16}).requires_grad(true),
          (Tensor::randn({10, 16}) * 0.2).requires_grad(true), Tensor::zeros({10}).requires_grad(true)};
}

// The loss of one batch; the graph's intermediate tensors die here, so the update can write the
// parameters' buffers in place (nothing else holds their old values).
Tensor loss_of(const Mlp& m, const Tensor& x, const Tensor& y) {
  return x.linear(m.w1, m.b1).relu().linear(m.w2, m.b2).cross_entropy(y);
}

// p -= lr * p.grad, then the gradients are dropped: the updates hold their graphs, and nothing
// else still reads the old parameters, so the updates write the parameters' buffers in place.
void sgd_update(Mlp& m, double lr) {
  NoGrad no_grad;
  for (Tensor* p : m.params()) {
    p->assign(*p - p->grad() * lr);
    p->zero_grad();
  }
}

const Buffer* buffer_of(const Tensor& t) {
  UOpPtr u = t.uop();
  const UOp* b = u.get();
  while (b->op != Ops::BUFFER) b = b->src[0].get();
  return b->as<std::shared_ptr<Buffer>>().get();
}

}  // namespace

TEST(TrainingStep, OneMlpStepIsAFixedSmallNumberOfKernels) {
  Tensor::manual_seed(1);
  Tensor x = Tensor::randn({32, 20}).realize(), y = Tensor::randint(0, 10, {32}).realize();
  Mlp m = make_mlp();
  std::vector<float> losses;
  const Buffer* w1_buffer = buffer_of(m.w1);
  for (int step = 0; step < 5; step++) {
    Tensor loss = loss_of(m, x, y);
    loss.backward();
    sgd_update(m, 0.5);
    GlobalCounters::reset();
    realize({loss, m.w1, m.b1, m.w2, m.b2});
    // Forward 6: the two matmuls, the row max and the row sum of exp of log_softmax, the count of
    // targets that are not ignore_index, the batch sum of the loss. Backward 6: the row sum of the
    // gradient of log_softmax, the hidden layer's gradient, and one kernel per parameter: its
    // gradient reduction with the SGD update fused in. docs/autograd.md walks through them.
    EXPECT_EQ(GlobalCounters::kernel_count, 12) << "step " << step;
    EXPECT_EQ(buffer_of(m.w1), w1_buffer) << "the update wrote a new buffer";
    losses.push_back(loss.item<float>());
  }
  EXPECT_NEAR(losses[0], std::log(10.0f), 0.5f);  // about chance at the start
  for (size_t i = 1; i < losses.size(); i++) EXPECT_LT(losses[i], losses[i - 1]);
}

TEST(TrainingStep, FusedStepEqualsTheStepDoneInPieces) {
  Tensor::manual_seed(2);
  Tensor x = Tensor::randn({32, 20}).realize(), y = Tensor::randint(0, 10, {32}).realize();
  Mlp fused = make_mlp(), pieces = make_mlp();
  // In pieces: realize the loss, then each gradient, then each update.
  Tensor loss_p = loss_of(pieces, x, y);
  loss_p.backward();
  loss_p.realize();
  for (Tensor* p : pieces.params()) p->grad().realize();
  sgd_update(pieces, 0.5);
  for (Tensor* p : pieces.params()) p->realize();
  // Fused: one realize.
  Tensor loss_f = loss_of(fused, x, y);
  loss_f.backward();
  sgd_update(fused, 0.5);
  realize({loss_f, fused.w1, fused.b1, fused.w2, fused.b2});
  EXPECT_NEAR(loss_f.item<float>(), loss_p.item<float>(), 1e-6);
  for (size_t i = 0; i < 4; i++) {
    auto a = fused.params()[i]->to_vector<float>(), b = pieces.params()[i]->to_vector<float>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); k++) EXPECT_NEAR(a[k], b[k], 1e-5) << "param " << i << " element " << k;
  }
}
