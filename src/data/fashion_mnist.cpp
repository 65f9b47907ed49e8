// Fashion-MNIST (and MNIST, which has the same files): four IDX files in one folder, checked for
// the shapes and labels the dataset must have, so a wrong folder fails here rather than in training.
#include <filesystem>
#include <vector>

#include "lazygrad/data.h"
#include "lazygrad/error.h"

namespace lazygrad::data {

namespace {

// The file for `stem` in `root`: the official name or the dotted one some mirrors use
// (train-images.idx3-ubyte), each plain or gzipped.
std::string find_file(const std::string& root, const std::string& stem, const std::string& dotted) {
  std::vector<std::string> tried;
  for (const std::string& name : {stem, stem + ".gz", dotted, dotted + ".gz"}) {
    std::filesystem::path p = std::filesystem::path(root) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p.string();
    tried.push_back(name);
  }
  std::string names;
  for (const auto& n : tried) names += (names.empty() ? "" : ", ") + n;
  throw Error("load_fashion_mnist: no " + stem + " in '" + root + "' (tried " + names +
              "; Debian's dataset-fashion-mnist package installs them in " + std::string(kFashionMnistRoot) +
              ")");
}

// Any number of images, so subsets and look-alikes (KMNIST) load too.
Tensor load_images(const std::string& root, const std::string& split) {
  std::string path = find_file(root, split + "-images-idx3-ubyte", split + "-images.idx3-ubyte");
  Tensor images = read_idx(path);
  if (images.dtype() != kUInt8 || images.dim() != 3 || images.size(1) != 28 || images.size(2) != 28)
    throw Error("load_fashion_mnist: '" + path + "' holds " + std::string(dtype_name(images.dtype())) + " " +
                shape_str(images.shape()) + ", expected uint8 {N, 28, 28}");
  return images;
}

// int64 like torchvision's targets, widened on the host (no kernel).
Tensor load_labels(const std::string& root, const std::string& split, int64_t count) {
  std::string path = find_file(root, split + "-labels-idx1-ubyte", split + "-labels.idx1-ubyte");
  Tensor labels = read_idx(path);
  if (labels.dtype() != kUInt8 || labels.shape() != Shape{count})
    throw Error("load_fashion_mnist: '" + path + "' holds " + std::string(dtype_name(labels.dtype())) + " " +
                shape_str(labels.shape()) + ", expected uint8 " + shape_str({count}) +
                " to match the images");
  std::vector<int64_t> values = labels.to_vector<int64_t>();
  for (size_t i = 0; i < values.size(); i++)
    if (values[i] > 9)
      throw Error("load_fashion_mnist: '" + path + "': label " + std::to_string(values[i]) + " of example " +
                  std::to_string(i) + " (byte " + std::to_string(8 + i) + " of the data) is not in 0..9");
  return Tensor::from_vector(values, {count});
}

}  // namespace

FashionMnist load_fashion_mnist(const std::string& root) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec))
    throw Error("load_fashion_mnist: '" + root + "' is not a folder (Debian's dataset-fashion-mnist " +
                "package installs the files in " + std::string(kFashionMnistRoot) + ")");
  FashionMnist d;
  d.train_images = load_images(root, "train");
  d.train_labels = load_labels(root, "train", d.train_images.size(0));
  d.test_images = load_images(root, "t10k");
  d.test_labels = load_labels(root, "t10k", d.test_images.size(0));
  return d;
}

Tensor pixels_to_float(const Tensor& images) {
  if (images.dtype() != kUInt8)
    throw Error("pixels_to_float: expected uint8 pixels, got " + std::string(dtype_name(images.dtype())) +
                " " + shape_str(images.shape()));
  return images.to(kFloat32).div(255);
}

}  // namespace lazygrad::data
