// Cephes' polevl, shared by the math ops that evaluate rational approximations (math.cpp,
// math_inverse.cpp): c[0] x^n + c[1] x^(n-1) + ... + c[n], by Horner's rule; `monic` puts a
// leading 1 x^(n+1) in front (p1evl).
#pragma once

#include <initializer_list>

#include "lazygrad/tensor.h"

namespace lazygrad {

inline Tensor polynomial(const Tensor& x, std::initializer_list<double> c, bool monic = false) {
  auto it = c.begin();
  Tensor p = monic ? x + *it : x * *it;
  if (!monic) p = p + *++it;
  for (++it; it != c.end(); ++it) p = p * x + *it;
  return p;
}

}  // namespace lazygrad
