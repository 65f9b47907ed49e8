// Autograd smoke test against PyTorch: forward values and gradients of add, mul, exp, sum and
// permute, some through views of their inputs (tests/fixtures/grad_smoke.txt, written by
// scripts/fixtures_grad_smoke.py). Also the smallest example of a test built on fixture_harness.h.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_grad_smoke
//   LAZYGRAD_TEST_GRAD_MODE=backward ...   checks backward()/grad() instead of gradient()
#include "fixture_harness.h"

namespace {

using fixtures::Case;
using fixtures::Ins;

const fixtures::OpTable& grad_smoke_ops() {
  static const fixtures::OpTable table = {
      {"add.tt", [](const Case&, const Ins& x) { return x.at(0) + x.at(1); }},
      {"mul.tt", [](const Case&, const Ins& x) { return x.at(0) * x.at(1); }},
      {"mul.ts", [](const Case& c, const Ins& x) { return x.at(0) * c.scalar("scalar"); }},
      {"exp", [](const Case&, const Ins& x) { return x.at(0).exp(); }},
      {"sum",
       [](const Case& c, const Ins& x) { return c.has("axes") ? x.at(0).sum(c.axes("axes"), c.flag("keepdim")) : x.at(0).sum(); }},
      {"permute", [](const Case& c, const Ins& x) { return x.at(0).permute(c.ints("order")); }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(GradSmoke, grad_smoke_ops(), "grad_smoke.txt")

}  // namespace
