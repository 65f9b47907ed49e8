// The reference: a plain scalar interpreter of a fuzz Program, element by element, with PyTorch's
// semantics for each call (type promotion, integer wrap-around, floor division, NaN-propagating
// max, float16 rounding after every op). It uses nothing of lazygrad's but the DType enum.
//
// Beside each float value it keeps a bound on how far a correct implementation may be from it: the
// roundings of the ops that made it (one ulp each, a few for a transcendental or a composed op,
// sqrt(n) for a sum of n) carried through each op's derivative. An integer or bool that a float
// near such a limit decides (a comparison of two values closer than their bounds, a cast near an
// integer, an argmax with a near tie) is "don't care": no implementation can be held to it.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "program.h"

namespace lazygrad::fuzz {

struct RefTensor {
  Shape shape;
  DType dtype = kFloat32;
  std::vector<double> f;    // float dtypes: the values
  std::vector<int64_t> i;   // integer and bool dtypes: the values (uint64 as its bits)
  std::vector<double> err;  // float dtypes: the bound described above (absolute)
  std::vector<uint8_t> dc;  // 1: don't care
  // An argmax or argmin element with a near tie: every index that is right (dc is set too).
  std::vector<std::vector<int64_t>> choices;
  // An argmax or argmin: every element, don't care or not, is an index in [0, index_limit).
  int64_t index_limit = -1;

  int64_t numel() const;
  bool is_float_type() const { return is_float(dtype); }
  double value(int64_t k) const { return is_float_type() ? f[k] : static_cast<double>(i[k]); }
};

// A step that PyTorch would refuse (a max over an empty axis, a zero integer divisor, ...): the
// generator draws another instead.
struct Invalid : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The value of one step from the values of its inputs.
RefTensor ref_apply(const Step& step, const std::vector<const RefTensor*>& inputs);

// Rounds x to what dtype holds (round to nearest even; integers wrap to the dtype's width).
double round_to(DType dtype, double x);
int64_t wrap_int(DType dtype, int64_t x);
double ulp_of(DType dtype);  // the spacing of dtype's values at 1.0

}  // namespace lazygrad::fuzz
