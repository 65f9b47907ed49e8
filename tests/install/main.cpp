// Uses the installed headers and library; check.sh expects it to print 8.
#include <lazygrad/lazygrad.h>

#include <iostream>

int main() {
  using lazygrad::Tensor;
  std::cout << (Tensor::ones({2, 2}) + 1).sum().item<float>() << "\n";
  return 0;
}
