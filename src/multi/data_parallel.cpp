// DataParallel (lazygrad/multi.h): replicas, the batch's rows per device, and the gradients'
// all-reduce. The step itself (forward, backward, the optimizers) stays the caller's, so any model,
// loss and optimizer work as they do on one device.
#include <set>

#include "lazygrad/error.h"
#include "lazygrad/multi.h"
#include "lazygrad/nn.h"
#include "runtime/device.h"

namespace lazygrad {

std::pair<int64_t, int64_t> split_rows(int64_t rows, int64_t parts, int64_t part) {
  const int64_t base = rows / parts, extra = rows % parts;
  return {part * base + std::min(part, extra), base + (part < extra ? 1 : 0)};
}

DataParallel::DataParallel(const std::function<std::shared_ptr<nn::Module>()>& make,
                           std::vector<std::string> devices)
    : devices_(std::move(devices)) {
  if (devices_.empty()) throw Error("DataParallel: no devices");
  std::set<std::string> seen;
  for (auto& d : devices_) {
    d = canonical_device(d);
    if (!seen.insert(d).second) throw Error("DataParallel: " + d + " is listed twice");
  }
  for (size_t i = 0; i < devices_.size(); i++) {
    std::shared_ptr<nn::Module> m = make();
    if (!m) throw Error("DataParallel: make() returned no model");
    if (i > 0) m->load_state_dict(replicas_[0]->state_dict());  // the same values everywhere
    m->to(devices_[i]);
    replicas_.push_back(std::move(m));
  }
}

std::vector<Tensor> DataParallel::scatter(const Tensor& batch) const {
  const auto k = static_cast<int64_t>(devices_.size());
  const int64_t n = batch.dim() > 0 ? batch.size(0) : 0;
  if (n < k)
    throw Error("DataParallel: a batch of " + std::to_string(n) + " rows cannot be split across " +
                std::to_string(k) + " devices");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < k; i++) {
    auto [start, length] = split_rows(n, k, i);
    out.push_back(batch.narrow(0, start, length).to(devices_[static_cast<size_t>(i)]));
  }
  return out;
}

double DataParallel::share(size_t i, int64_t rows) const {
  const auto [start, length] =
      split_rows(rows, static_cast<int64_t>(devices_.size()), static_cast<int64_t>(i));
  return static_cast<double>(length) / static_cast<double>(rows);
}

void DataParallel::all_reduce_gradients(AllReduceAlgorithm algorithm) const {
  std::vector<std::vector<Tensor>> params;
  for (const auto& r : replicas_) params.push_back(r->parameters());
  for (size_t j = 0; j < params[0].size(); j++) {
    std::vector<Tensor> grads;
    bool any = false;
    for (size_t i = 0; i < replicas_.size(); i++) {
      Tensor g = params[i][j].grad();
      any |= g.defined();
      grads.push_back(g.defined() ? g
                                  : Tensor::zeros(params[i][j].shape(), params[i][j].dtype(), devices_[i]));
    }
    if (!any) continue;  // no replica's backward reached it: it stays without a gradient everywhere
    std::vector<Tensor> summed = all_reduce(grads, ReduceOp::Sum, algorithm);
    for (size_t i = 0; i < replicas_.size(); i++) params[i][j].set_grad(summed[i]);
  }
}

Tensor DataParallel::backward(const Tensor& inputs, const Tensor& targets, const LossFn& loss) const {
  const std::vector<Tensor> xs = scatter(inputs), ys = scatter(targets);
  const int64_t rows = inputs.size(0);
  Tensor total;
  for (size_t i = 0; i < replicas_.size(); i++) {
    Tensor part = loss(*replicas_[i], xs[i], ys[i]) * share(i, rows);
    part.backward();
    Tensor here = part.detach().to(devices_[0]);
    total = total.defined() ? total + here : here;
  }
  all_reduce_gradients();
  return total;
}

}  // namespace lazygrad
