// `lazygrad train fashion-mnist` as a function (apps/train.cpp), which the mlp and cnn milestones
// (apps/milestone.cpp) run too.
#pragma once

#include <lazygrad/lazygrad.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lazygrad::cli {

// The command line, parsed and checked. Defaults are the recipe's.
struct TrainConfig {
  std::string model = "mlp";  // "mlp" or "cnn"; also the name of the output files
  int64_t epochs = 1;
  int64_t batch_size = 128;
  double lr = 1e-3;
  uint64_t seed = 0;
  std::string data_dir = std::string(data::kFashionMnistRoot);
  std::string out_dir = ".";
  int64_t limit = 0;  // train on the first `limit` images; 0: all of them
  bool jit = true;
  std::string device;  // where the model and the batches live; "": the default (DEVICE=, else CPU)
  // Data-parallel across these devices (DataParallelTrainStep); empty: one device.
  std::vector<std::string> devices;
  // Data-parallel across the processes of an mpirun (MpiTrainStep), one rank each (docs/multi.md).
  bool ddp = false;
  int64_t loss_every = 0;  // print every Nth step's loss (`step N: loss X`); 0: none
};

// Trains as the command does, printing its progress, test accuracy, checkpoint and plot; returns
// the test accuracy (%) after each epoch. UsageError for a --limit or --batch-size the data set
// cannot give.
std::vector<double> train_fashion_mnist(const TrainConfig& cfg);

}  // namespace lazygrad::cli
