// `lazygrad learn`: what the command (apps/learn.cpp) and the exercises' checkers
// (apps/learn_checks.cpp) share. A checker calls the learner's function on inputs of its own,
// compares with lazygrad's own answer, and says what is wrong, why, and how to fix it.
#pragma once

#include <lazygrad/learn.h>

#include <string>
#include <utility>
#include <vector>

namespace lazygrad::cli {

// One thing wrong with a learner's answer, in three parts (TinyTorch's style of feedback).
struct Problem {
  std::string what;  // what went wrong: the input, what came back, what was expected
  std::string why;   // the idea behind it
  std::string fix;   // what to change
};

// A checker's answer: right, with a line saying what was checked, or wrong, with its problems.
struct Verdict {
  bool right = false;
  std::string headline;  // one line
  std::string details;   // more lines after it, or empty (a table of predictions)
  std::vector<Problem> problems;
};

// What the loaded file handed over through lazygrad::learn::submit (apps/learn.cpp).
struct Submissions {
  learn::SigmoidBackwardFn sigmoid_backward = nullptr;
  learn::CausalAttentionFn causal_attention = nullptr;
  learn::SgdMomentumStepFn sgd_momentum_step = nullptr;
  learn::KernelCountsFn kernel_counts = nullptr;
};
Submissions& submissions();

// A verdict of one problem.
inline Verdict wrong(std::string headline, std::string what, std::string why, std::string fix) {
  return {false, std::move(headline), "", {{std::move(what), std::move(why), std::move(fix)}}};
}

Verdict check_sigmoid_backward(learn::SigmoidBackwardFn fn);
Verdict check_causal_attention(learn::CausalAttentionFn fn);
Verdict check_sgd_momentum(learn::SgdMomentumStepFn fn);
Verdict check_fusion_count(learn::KernelCountsFn fn);

}  // namespace lazygrad::cli
