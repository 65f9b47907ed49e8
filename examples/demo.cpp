// A first look at lazygrad (`make demo` runs this with DEBUG=2).
//
// Tensors are lazy: `a + b` does not add anything, it records a node in a graph. Work happens only
// when a value is needed (printing, item(), to_vector(), realize()). At that point lazygrad fuses
// the whole expression into as few kernels as it can, writes each kernel as C, compiles it with the
// system compiler and caches the compiled kernel on disk, so a second run compiles nothing.
#include <lazygrad/lazygrad.h>

#include <iostream>

using lazygrad::Tensor;

int main() {
  // 1. Elementwise ops and a reduction, fused. Shapes and broadcasting work as in PyTorch.
  Tensor a = Tensor::arange(12).reshape({3, 4}).to(lazygrad::kFloat32);  // [[0..3], [4..7], [8..11]]
  Tensor b = Tensor::full({3, 4}, 0.5f);                                 // 0.5 everywhere
  Tensor c = Tensor::arange(4).to(lazygrad::kFloat32) - 1.5;             // shape {4}: one value per column
  Tensor y = ((a + b) * c).relu().sum(1);  // still nothing computed: y is only a graph
  std::cout << "a =\n" << a << "\n\n";
  std::cout << "((a + b) * c).relu().sum(1) =\n" << y << "\n\n";  // printing realizes y

  // 2. softmax of one row: exp, max, sum and divide, again compiled from the graph.
  Tensor row = a.select(0, 1).softmax(0);  // a[1] = [4, 5, 6, 7]
  std::cout << "softmax(a[1]) = " << row << "  (sums to " << row.sum().item<float>() << ")\n\n";

  // 3. Random numbers come from a counter-based generator evaluated inside the kernels, so a seed
  //    gives the same numbers for any thread count. realize({...}) computes both results in one
  //    schedule, sharing the work they have in common.
  Tensor::manual_seed(0);
  Tensor r = Tensor::randn({1000});
  Tensor mean = r.mean();
  Tensor stddev = (r - mean).pow(2).mean().sqrt();  // population standard deviation
  lazygrad::realize({mean, stddev});
  std::cout << "randn(1000): mean " << mean.item<float>() << ", std " << stddev.item<float>()
            << "  (expect about 0 and 1)\n\n";

  // What the runtime did: a second run of this program should compile nothing (disk cache hits).
  std::cout << "kernels run: " << lazygrad::GlobalCounters::kernel_count
            << ", compiled: " << lazygrad::GlobalCounters::compile_count
            << ", loaded from cache: " << lazygrad::GlobalCounters::cache_hits << "\n";
  if (lazygrad::settings().debug < 2) {
    std::cout << "Rerun with DEBUG=2 to see one line per kernel, or DEBUG=4 to see their C source.\n";
  } else {
    std::cout << "Rerun with DEBUG=4 to see the C source of each kernel (DEBUG=2 lists them).\n";
  }
  return 0;
}
