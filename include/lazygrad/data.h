// lazygrad::data: reading IDX files (the MNIST format), loading (Fashion-)MNIST, and a DataLoader
// that batches tensors sharing dim 0 with a background prefetch thread. See docs/data.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lazygrad/tensor.h"

namespace lazygrad::data {

// ---- IDX (src/data/idx.cpp) ----------------------------------------------------------------------
// Reads an IDX file: a big-endian header (two zero bytes, a dtype code, the number of dims, then
// each dim as a uint32) followed by the values, big-endian, row-major. Dtype codes: 0x08 uint8,
// 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64. The result is a realized tensor of
// the file's dtype and shape (0 dims give a 0-d tensor). A gzip-compressed file is recognised by its
// magic bytes (0x1f 0x8b), not its name, and read through zlib. A malformed file (bad magic, unknown
// dtype code, a shape whose size overflows, fewer or more value bytes than the header says, a
// corrupt or truncated gzip stream) throws lazygrad::Error naming the file and the byte offset.
Tensor read_idx(const std::string& path);

// ---- Fashion-MNIST and MNIST (src/data/fashion_mnist.cpp) -----------------------------------------
// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr std::string_view kFashionMnistRoot = "/usr/share/datasets/fashion-mnist";

// torchvision.datasets.FashionMNIST.classes: the name of each label.
inline constexpr std::array<std::string_view, 10> kFashionMnistClasses = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

struct FashionMnist {
  Tensor train_images;  // uint8 [60000, 28, 28], 0 is background
  Tensor train_labels;  // int64 [60000], 0..9 (int64 like torchvision's targets)
  Tensor test_images;   // uint8 [10000, 28, 28]
  Tensor test_labels;   // int64 [10000]
};

// Loads the four files from `root`: train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each plain or with .gz (the names with a dot,
// train-images.idx3-ubyte, are found too). MNIST's files have the same names and layout, so the
// folder of plain MNIST loads the same way. Any number of examples is accepted (images must be
// uint8 [N, 28, 28], labels uint8 [N] in 0..9). Throws lazygrad::Error naming the folder and the
// names tried when a file is missing, and the file when its shape or a label is wrong.
FashionMnist load_fashion_mnist(const std::string& root = std::string(kFashionMnistRoot));

// ---- CIFAR-10 (src/data/cifar10.cpp) -------------------------------------------------------------
// torchvision.datasets.CIFAR10.classes.
inline constexpr std::array<std::string_view, 10> kCifar10Classes = {
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};

struct Cifar10 {
  Tensor train_images;  // uint8 [50000, 3, 32, 32] (RGB planes)
  Tensor train_labels;  // int64 [50000], 0..9
  Tensor test_images;   // uint8 [10000, 3, 32, 32]
  Tensor test_labels;   // int64 [10000]
};

// Loads the binary version's folder, cifar-10-batches-bin: data_batch_1.bin to data_batch_5.bin
// (training, in that order) and test_batch.bin, each a run of 3073-byte records (a label byte, then
// the red, green and blue 32x32 planes). One or more records per file. Throws lazygrad::Error
// naming the file for a missing one, and the file and byte offset for a size that is not a whole
// number of records or a label outside 0..9.
Cifar10 load_cifar10(const std::string& root);

// torchvision's RandomCrop(size, padding) and RandomHorizontalFlip() on a batch, the usual CIFAR
// augmentation: each uint8 image [N, C, H, W] is zero-padded by `padding` on every side, cropped back
// to H x W at a random offset, and mirrored with probability 1/2; the draws come from `seed`. On the
// host (as torchvision's transforms run on the CPU's data loader), a new realized tensor.
Tensor random_crop_flip(const Tensor& images, int64_t padding, uint64_t seed);

// uint8 pixels to float32 in [0, 1], as torchvision's ToTensor: images.to(float32) / 255. Lazy, so
// applied to a batch it fuses into the first kernel that reads it.
Tensor pixels_to_float(const Tensor& images);

// ---- DataLoader (src/data/dataloader.cpp) --------------------------------------------------------
// One batch: rows of inputs and of targets (undefined when the loader was given no targets).
// `for (auto& [x, y] : loader)` works.
struct Batch {
  Tensor inputs;
  Tensor targets;
};

// torch.utils.data.DataLoader's arguments that apply here, with its defaults, in its order.
struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  bool drop_last = false;  // drop the last, smaller batch (otherwise it is shorter)
  // The order of an epoch depends only on (seed, epoch), not on Tensor::manual_seed: PyTorch's
  // `generator` argument, seeded. The same seed gives the same orders on every run and platform.
  uint64_t seed = 0;
  // Batches the background thread prepares ahead of the caller (PyTorch's prefetch_factor of its
  // one worker). 0: no thread; each batch is gathered on the caller's thread when asked for.
  int64_t prefetch_factor = 2;
};

// Batches of rows of tensors that share dim 0, like DataLoader(TensorDataset(inputs, targets)).
// Each batch is a new, realized, contiguous tensor of the source's dtype, [b, *shape[1:]]: its rows
// are copied on the host (memcpy) by a background thread while the caller works on the previous
// batch; that thread never runs a kernel. The loader reads a snapshot of the tensors taken (and
// realized) when it is constructed: later in-place updates of them are not seen.
//
// Each begin() starts a new epoch (0, 1, ...; set_epoch() changes the next one) with a new
// permutation when shuffling. A pass is owned by its iterators: breaking out of a loop stops and
// joins its thread, and the loader may be destroyed at any point. Passes are independent: two
// iterators from two begin() calls run two epochs side by side.
class DataLoader {
 public:
  explicit DataLoader(const Tensor& inputs, DataLoaderOptions options = {});
  DataLoader(const Tensor& inputs, const Tensor& targets, DataLoaderOptions options = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  struct Pass;  // one epoch in progress: its order, its thread and its queue of batches

  // An input iterator: copies share one pass, so advancing one advances them all.
  class Iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::input_iterator_tag;

    Iterator() = default;
    explicit Iterator(std::shared_ptr<Pass> pass);
    Batch& operator*() const;
    Batch* operator->() const { return &**this; }
    Iterator& operator++();
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const;

   private:
    std::shared_ptr<Pass> pass_;
  };

  Iterator begin();  // starts the next epoch
  std::default_sentinel_t end() const { return {}; }

  // Batches per epoch: len(loader). ceil(n / batch_size), or floor with drop_last.
  int64_t size() const;
  int64_t dataset_size() const;                   // n, the rows in dim 0
  uint64_t epoch() const { return next_epoch_; }  // the epoch the next begin() starts
  void set_epoch(uint64_t epoch) { next_epoch_ = epoch; }
  const DataLoaderOptions& options() const { return options_; }

  // The order of the rows in an epoch: 0..n-1, or with shuffle a permutation that depends only on
  // (seed, epoch).
  std::vector<int64_t> indices(uint64_t epoch) const;

  struct Source;  // a host snapshot of one tensor's bytes

 private:
  DataLoaderOptions options_;
  std::shared_ptr<const Source> inputs_;
  std::shared_ptr<const Source> targets_;  // null without targets
  uint64_t next_epoch_ = 0;
};

}  // namespace lazygrad::data
