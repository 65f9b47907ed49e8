// lazygrad::learn: how an exercise file of `lazygrad learn` hands its answer to the checker.
//
// `lazygrad learn check N` compiles the learner's file into a shared object and loads it into the
// `lazygrad` process. Loading runs the file's one registration line,
//
//   const bool submitted = lazygrad::learn::submit(&sigmoid_backward);
//
// which passes the function to the checker; the overload chosen by the function's type says which
// exercise it answers. The submit functions are defined by the `lazygrad` program (apps/learn.cpp),
// not by the library: only a file loaded by `lazygrad learn check` can call them.
// docs/learn/exercises.md describes the exercises.
#pragma once

#include <vector>

#include "lazygrad/tensor.h"

namespace lazygrad::learn {

// Exercise 1, sigmoid-backward: d(sigmoid(x))/dx * grad_output, elementwise.
using SigmoidBackwardFn = Tensor (*)(const Tensor& x, const Tensor& grad_output);

// Exercise 2, attention: causal scaled dot-product attention of q, k, v shaped [B, H, T, D].
using CausalAttentionFn = Tensor (*)(const Tensor& q, const Tensor& k, const Tensor& v);

// Exercise 3, sgd-momentum: one step of SGD with momentum over `params` (whose gradients are
// params[i].grad()), updating each parameter in place. `velocity` is empty before the first step
// and must hold one tensor per parameter after each step: the checker passes the same vector again.
using SgdMomentumStepFn = void (*)(std::vector<Tensor>& params, std::vector<Tensor>& velocity, double lr,
                                   double momentum);

// Exercise 4, fusion-count: how many kernels realizing each expression runs, its inputs already
// realized (float32; a, b, c and w are [256, 256], bias [256], rows [8, 256]). -1: no prediction.
struct KernelCounts {
  int elementwise_chain = -1;  // ((a + b) * c).relu().exp()
  int sum_of_product = -1;     // (a * b).sum()
  int centered = -1;           // a - a.mean()
  int softmax = -1;            // a.softmax(-1)
  int softmax_few_rows = -1;   // rows.softmax(-1)
  int linear_relu = -1;        // (a.matmul(w) + bias).relu()
  int two_matmuls = -1;        // a.matmul(b).matmul(c)
  int transpose = -1;          // a.t()
};
using KernelCountsFn = KernelCounts (*)();

// Hand a function to the checker; returns true (a value to initialize the registration line's
// constant with, so that the call runs when the file is loaded).
bool submit(SigmoidBackwardFn fn);
bool submit(CausalAttentionFn fn);
bool submit(SgdMomentumStepFn fn);
bool submit(KernelCountsFn fn);

}  // namespace lazygrad::learn
