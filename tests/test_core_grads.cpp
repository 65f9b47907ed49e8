// Gradient parity with PyTorch autograd for the ops that predate autograd: arithmetic (with
// broadcasting, scalar operands and type promotion), neg, reciprocal, exp2, log2, sin, cos, where,
// sum/mean/prod/max/min, softmax/log_softmax, the movement ops, cat/stack, contiguous/clone and
// to(dtype). Cases: tests/fixtures/core_grads.txt, written by scripts/fixtures_core_grads.py.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_core_grads
//   LAZYGRAD_TEST_GRAD_MODE=backward ...   checks backward()/grad() instead of gradient()
#include "fixture_harness.h"

namespace {

using fixtures::Case;
using fixtures::Ins;
using lazygrad::Tensor;

const fixtures::OpTable& core_grad_ops() {
  static const fixtures::OpTable table = {
      // arithmetic: tt = a.op(b), ts = a.op(scalar), st = the C++ operator scalar OP a
      {"add.tt", [](const Case&, const Ins& x) { return x.at(0).add(x.at(1)); }},
      {"add.ts", [](const Case& c, const Ins& x) { return x.at(0).add(c.scalar("scalar")); }},
      {"add.st", [](const Case& c, const Ins& x) { return c.scalar("scalar") + x.at(0); }},
      {"sub.tt", [](const Case&, const Ins& x) { return x.at(0).sub(x.at(1)); }},
      {"sub.ts", [](const Case& c, const Ins& x) { return x.at(0).sub(c.scalar("scalar")); }},
      {"sub.st", [](const Case& c, const Ins& x) { return c.scalar("scalar") - x.at(0); }},
      {"mul.tt", [](const Case&, const Ins& x) { return x.at(0).mul(x.at(1)); }},
      {"mul.ts", [](const Case& c, const Ins& x) { return x.at(0).mul(c.scalar("scalar")); }},
      {"mul.st", [](const Case& c, const Ins& x) { return c.scalar("scalar") * x.at(0); }},
      {"div.tt", [](const Case&, const Ins& x) { return x.at(0).div(x.at(1)); }},
      {"div.ts", [](const Case& c, const Ins& x) { return x.at(0).div(c.scalar("scalar")); }},
      {"div.st", [](const Case& c, const Ins& x) { return c.scalar("scalar") / x.at(0); }},
      // unary
      {"neg", [](const Case&, const Ins& x) { return x.at(0).neg(); }},
      {"reciprocal", [](const Case&, const Ins& x) { return x.at(0).reciprocal(); }},
      {"exp2", [](const Case&, const Ins& x) { return x.at(0).exp2(); }},
      {"log2", [](const Case&, const Ins& x) { return x.at(0).log2(); }},
      {"sin", [](const Case&, const Ins& x) { return x.at(0).sin(); }},
      {"cos", [](const Case&, const Ins& x) { return x.at(0).cos(); }},
      // where: inputs are (condition, x[, y])
      {"where.free", [](const Case&, const Ins& x) { return lazygrad::where(x.at(0), x.at(1), x.at(2)); }},
      {"where.method", [](const Case&, const Ins& x) { return x.at(1).where(x.at(0), x.at(2)); }},
      {"where.free_sx",
       [](const Case& c, const Ins& x) { return lazygrad::where(x.at(0), c.scalar("scalar"), x.at(1)); }},
      {"where.free_xs",
       [](const Case& c, const Ins& x) { return lazygrad::where(x.at(0), x.at(1), c.scalar("scalar")); }},
      // reductions (no axes: all of them)
      {"sum", [](const Case& c, const Ins& x) { return x.at(0).sum(c.axes("axes"), c.flag("keepdim")); }},
      {"mean", [](const Case& c, const Ins& x) { return x.at(0).mean(c.axes("axes"), c.flag("keepdim")); }},
      {"prod", [](const Case& c, const Ins& x) { return x.at(0).prod(c.axes("axes"), c.flag("keepdim")); }},
      {"max", [](const Case& c, const Ins& x) { return x.at(0).max(c.axes("axes"), c.flag("keepdim")); }},
      {"min", [](const Case& c, const Ins& x) { return x.at(0).min(c.axes("axes"), c.flag("keepdim")); }},
      {"softmax", [](const Case& c, const Ins& x) { return x.at(0).softmax(c.i("axis")); }},
      {"log_softmax", [](const Case& c, const Ins& x) { return x.at(0).log_softmax(c.i("axis")); }},
      // movement
      {"reshape", [](const Case& c, const Ins& x) { return x.at(0).reshape(c.ints("shape")); }},
      {"permute", [](const Case& c, const Ins& x) { return x.at(0).permute(c.ints("order")); }},
      {"transpose", [](const Case& c, const Ins& x) { return x.at(0).transpose(c.i("dim0"), c.i("dim1")); }},
      {"expand", [](const Case& c, const Ins& x) { return x.at(0).expand(c.ints("shape")); }},
      {"flatten",
       [](const Case& c, const Ins& x) { return x.at(0).flatten(c.i_or("start_dim", 0), c.i_or("end_dim", -1)); }},
      {"squeeze",
       [](const Case& c, const Ins& x) { return c.has("dim") ? x.at(0).squeeze(c.i("dim")) : x.at(0).squeeze(); }},
      {"unsqueeze", [](const Case& c, const Ins& x) { return x.at(0).unsqueeze(c.i("dim")); }},
      {"pad", [](const Case& c, const Ins& x) { return x.at(0).pad(c.ints("pads"), c.scalar("value")); }},
      {"slice",
       [](const Case& c, const Ins& x) {
         return x.at(0).slice(c.i("dim"), c.opt_int("start"), c.opt_int("end"), c.i_or("step", 1));
       }},
      {"narrow",
       [](const Case& c, const Ins& x) { return x.at(0).narrow(c.i("dim"), c.i("start"), c.i("length")); }},
      {"select", [](const Case& c, const Ins& x) { return x.at(0).select(c.i("dim"), c.i("index")); }},
      {"flip", [](const Case& c, const Ins& x) { return x.at(0).flip(c.axes("dims")); }},
      {"cat", [](const Case& c, const Ins& x) { return Tensor::cat(x, c.i("dim")); }},
      {"stack", [](const Case& c, const Ins& x) { return Tensor::stack(x, c.i("dim")); }},
      {"contiguous", [](const Case&, const Ins& x) { return x.at(0).contiguous(); }},
      {"clone", [](const Case&, const Ins& x) { return x.at(0).clone(); }},
      {"to", [](const Case& c, const Ins& x) { return x.at(0).to(c.dtype("dtype")); }},
  };
  return table;
}

LAZYGRAD_FIXTURE_SUITE(CoreGrads, core_grad_ops(), "core_grads.txt")

}  // namespace
