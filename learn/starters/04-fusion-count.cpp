// lazygrad learn, exercise 4: fusion-count (docs/learn/05-scheduler.md)
//
// How many kernels does lazygrad run to realize each expression below? A kernel is one compiled
// loop nest that writes one buffer; GlobalCounters::kernel_count counts them. The inputs are
// float32 buffers, realized already: a, b, c and w are [256, 256], bias is [256], rows is [8, 256].
// Predict from the scheduler's rules, then check: for each wrong prediction the checker names the
// rule that explains the count. (Guessing is fine: the explanations are the point.)
//
// Check it with:   lazygrad learn check 4     (add --file PATH when this file is elsewhere)
#include <lazygrad/learn.h>

using lazygrad::learn::KernelCounts;

KernelCounts predict_kernel_counts() {
  KernelCounts p;
  // TODO: replace each -1 with the number of kernels you expect.
  p.elementwise_chain = -1;  // ((a + b) * c).relu().exp()
  p.sum_of_product = -1;     // (a * b).sum()
  p.centered = -1;           // a - a.mean()
  p.softmax = -1;            // a.softmax(-1)
  p.softmax_few_rows = -1;   // rows.softmax(-1)
  p.linear_relu = -1;        // (a.matmul(w) + bias).relu()
  p.two_matmuls = -1;        // a.matmul(b).matmul(c)
  p.transpose = -1;          // a.t()
  return p;
}

// Hands predict_kernel_counts to the checker when `lazygrad learn check` loads this file. Keep it last.
const bool submitted = lazygrad::learn::submit(&predict_kernel_counts);
