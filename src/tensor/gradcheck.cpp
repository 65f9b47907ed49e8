// Finite differences against autograd, in float64.
#include "lazygrad/gradcheck.h"

#include <cmath>
#include <sstream>

namespace lazygrad {

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
                          double eps, double atol, double rtol) {
  std::vector<std::vector<double>> values;
  std::vector<Tensor> leaves;
  for (const auto& t : inputs) {
    values.push_back(t.to_vector<double>());
    leaves.push_back(Tensor::from_vector(values.back(), t.shape()).requires_grad(true));
  }
  Tensor out = fn(leaves);
  // Weights make the scalar sum(out * w) depend on every output element differently.
  Tensor::manual_seed(12345);
  Tensor w = Tensor::uniform(out.shape(), 0.5, 1.5, kFloat64).realize();
  std::vector<Tensor> analytic = (out.to(kFloat64) * w).sum().gradient(leaves);
  auto scalar_at = [&](const std::vector<std::vector<double>>& v) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < v.size(); i++) xs.push_back(Tensor::from_vector(v[i], inputs[i].shape()));
    return (fn(xs).to(kFloat64) * w).sum().item<double>();
  };
  GradcheckResult result;
  for (size_t i = 0; i < inputs.size(); i++) {
    std::vector<double> a = analytic[i].to_vector<double>();
    for (size_t k = 0; k < values[i].size(); k++) {
      auto plus = values, minus = values;
      plus[i][k] += eps;
      minus[i][k] -= eps;
      double numeric = (scalar_at(plus) - scalar_at(minus)) / (2 * eps);
      double err = std::abs(numeric - a[k]);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (result.ok && err > atol + rtol * std::abs(numeric)) {
        std::ostringstream os;
        os << "gradcheck: input " << i << " element " << k << ": autograd " << a[k] << ", finite differences "
           << numeric << " (|diff| " << err << ")";
        result.ok = false;
        result.message = os.str();
      }
    }
  }
  return result;
}

}  // namespace lazygrad
