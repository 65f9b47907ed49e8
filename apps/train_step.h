// The training step of `lazygrad train` (apps/train.cpp): the model, its input, Adam and the Jit.
// A header of its own so that bench/train_epoch.cpp times exactly the step the command runs.
#pragma once

#include <lazygrad/lazygrad.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../models/lenet.h"
#include "../models/mlp.h"

namespace lazygrad::cli {

// "cnn" is models::LeNet; anything else models::MLP.
inline std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "cnn") return std::make_shared<models::LeNet>();
  return std::make_shared<models::MLP>();
}

// uint8 images [N, 28, 28] as the models take them: float32 [N, 1, 28, 28] in [0, 1]. Lazy: the
// scheduler computes it once per batch rather than inside every output column of the first layer's
// matrix products (docs/optimizer.md, "The scheduler's part").
inline Tensor model_input(const Tensor& images) { return data::pixels_to_float(images).unsqueeze(1); }

// One optimizer step on a batch: forward, cross-entropy, backward and Adam's update, realized in one
// schedule. With `jit`, the first call runs it normally, the second also captures its kernels, and
// every later call replays them on the new batch's buffers (no graph, no schedule, no compiler), so
// every batch must have the first one's shape (a DataLoader with drop_last).
class TrainStep {
 public:
  TrainStep(std::shared_ptr<nn::Module> model, double lr, bool jit)
      : model_(std::move(model)),
        opt_(model_->parameters(), lr),
        jit_([this](const std::vector<Tensor>& batch) { return run(batch); }),
        use_jit_(jit) {}
  // The Jit's function points at this object.
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;

  // The batch's loss, realized. Under the Jit it is the captured output buffer, which the next call
  // overwrites: read it (item()) before then.
  Tensor operator()(const Tensor& images, const Tensor& labels) {
    return (use_jit_ ? jit_({images, labels}) : run({images, labels}))[0];
  }

  nn::Module& model() { return *model_; }
  const Jit& jit() const { return jit_; }

 private:
  // What the optimizer needs realized in one schedule: the loss, the gradients and the update.
  // zero_grad() drops the gradients' graphs before the next step builds new ones.
  std::vector<Tensor> run(const std::vector<Tensor>& batch) {
    const Tensor logits = (*model_)(model_input(batch[0]));
    const ProfileScope scope("loss");  // the profiler's name for the loss and its gradient
    Tensor loss = logits.cross_entropy(batch[1]);
    loss.backward();
    opt_.step({loss});
    opt_.zero_grad();
    return {loss};
  }

  std::shared_ptr<nn::Module> model_;
  optim::Adam opt_;
  Jit jit_;
  bool use_jit_;
};

// The same step with the batch split across `devices` (lazygrad::DataParallel, docs/multi.md): a
// replica of the model and an Adam on each, each replica's share of the mean loss backward, the
// gradients all-reduced, every optimizer's update, the whole-batch loss: one schedule, which the
// Jit captures like the single-device one. Equals TrainStep on the whole batch up to the order in
// which the gradients' sums are taken.
class DataParallelTrainStep {
 public:
  DataParallelTrainStep(const std::string& model, std::vector<std::string> devices, double lr, bool jit)
      : dp_([&] { return make_model(model); }, std::move(devices)),
        jit_([this](const std::vector<Tensor>& batch) { return run(batch); }),
        use_jit_(jit) {
    for (size_t i = 0; i < dp_.size(); i++)
      opts_.push_back(std::make_unique<optim::Adam>(dp_.replica(i).parameters(), lr));
  }
  DataParallelTrainStep(const DataParallelTrainStep&) = delete;
  DataParallelTrainStep& operator=(const DataParallelTrainStep&) = delete;

  // The batch's loss, on the first device (under the Jit, overwritten by the next call).
  Tensor operator()(const Tensor& images, const Tensor& labels) {
    return (use_jit_ ? jit_({images, labels}) : run({images, labels}))[0];
  }
  // The first replica (every replica holds the same values).
  std::shared_ptr<nn::Module> model() const { return dp_.replica_ptr(0); }
  const DataParallel& data_parallel() const { return dp_; }

 private:
  std::vector<Tensor> run(const std::vector<Tensor>& batch) {
    Tensor loss =
        dp_.backward(batch[0], batch[1], [](nn::Module& m, const Tensor& images, const Tensor& labels) {
          return m(model_input(images)).cross_entropy(labels);
        });
    std::vector<Tensor> targets{loss};
    for (auto& opt : opts_) {
      for (const Tensor& t : opt->schedule_step()) targets.push_back(t);
      opt->zero_grad();
    }
    realize(targets);
    return {loss};
  }

  DataParallel dp_;
  std::vector<std::unique_ptr<optim::Adam>> opts_;
  Jit jit_;
  bool use_jit_;
};

// The step of `lazygrad train --ddp`: one process per rank under mpirun (lazygrad/mpi.h,
// docs/multi.md). Every rank holds the whole model and an Adam of its own, takes its rows of the
// global batch (split_rows: DataParallel's rule) and scales its mean loss by its share of the rows;
// the scaled loss and the gradients go to every other rank, and each rank sums all of them in rank
// order before Adam's update. Every rank so takes the same step on the same bits, and the step
// equals TrainStep's on the whole batch up to the order of the gradients' sums. Two Jits, since the
// exchange runs on the host between them: backward (the batch to the loss and the gradients) and
// update (every rank's loss and gradients to the parameters).
class MpiTrainStep {
 public:
  MpiTrainStep(std::shared_ptr<nn::Module> model, double lr, bool jit)
      : model_(std::move(model)),
        opt_(model_->parameters(), lr),
        backward_([this](const std::vector<Tensor>& batch) { return backward(batch); }),
        update_([this](const std::vector<Tensor>& parts) { return update(parts); }),
        use_jit_(jit) {}
  MpiTrainStep(const MpiTrainStep&) = delete;
  MpiTrainStep& operator=(const MpiTrainStep&) = delete;

  // The global batch's loss, the same on every rank (under the Jit, overwritten by the next call).
  Tensor operator()(const Tensor& images, const Tensor& labels) {
    const std::vector<Tensor> mine = use_jit_ ? backward_({images, labels}) : backward({images, labels});
    std::vector<Tensor> parts;  // the loss's from every rank, then each gradient's
    for (const std::vector<Tensor>& ranks : mpi::all_gather(mine))
      parts.insert(parts.end(), ranks.begin(), ranks.end());
    return (use_jit_ ? update_(parts) : update(parts))[0];
  }

 private:
  // This rank's share of the loss and every parameter's gradient, realized.
  std::vector<Tensor> backward(const std::vector<Tensor>& batch) {
    const int64_t rows = batch[0].size(0);
    const auto [start, length] = split_rows(rows, mpi::size(), mpi::rank());
    const Tensor logits = (*model_)(model_input(batch[0].narrow(0, start, length)));
    Tensor loss = logits.cross_entropy(batch[1].narrow(0, start, length)) *
                  (static_cast<double>(length) / static_cast<double>(rows));
    loss.backward();
    std::vector<Tensor> out{loss};
    for (const Tensor& p : opt_.params())  // a parameter the loss does not reach counts zeros
      out.push_back(p.grad().defined() ? p.grad() : Tensor::zeros_like(p));
    realize(out);
    opt_.zero_grad();
    return out;
  }

  // The sums, in rank order, of every rank's loss and gradients; Adam steps with the gradients.
  std::vector<Tensor> update(const std::vector<Tensor>& parts) {
    const auto n = static_cast<size_t>(mpi::size());
    auto sum = [&](size_t i) {
      return mpi::reduce(std::vector<Tensor>(parts.begin() + static_cast<std::ptrdiff_t>(i * n),
                                             parts.begin() + static_cast<std::ptrdiff_t>((i + 1) * n)));
    };
    for (size_t i = 0; i < opt_.params().size(); i++) Tensor(opt_.params()[i]).set_grad(sum(i + 1));
    std::vector<Tensor> targets = opt_.schedule_step();
    opt_.zero_grad();
    const Tensor loss = sum(0);
    targets.push_back(loss);
    realize(targets);
    return {loss};
  }

  std::shared_ptr<nn::Module> model_;
  optim::Adam opt_;
  Jit backward_, update_;
  bool use_jit_;
};

}  // namespace lazygrad::cli
