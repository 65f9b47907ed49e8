// CIFAR-10 in its binary format (cifar-10-batches-bin): six files of records, each one label byte
// and 3072 pixel bytes (a 32x32 image's red plane, then green, then blue, rows top to bottom).
// Checked record by record, so a truncated or foreign file fails here, naming the file and offset.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "lazygrad/data.h"
#include "lazygrad/error.h"

namespace lazygrad::data {

namespace {

constexpr int64_t kPixels = 3 * 32 * 32, kRecord = 1 + kPixels;

struct Part {
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
};

void read_batch(const std::filesystem::path& path, Part& into) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(
        "load_cifar10: no " + path.filename().string() + " in '" + path.parent_path().string() +
        "' (the folder cifar-10-batches-bin of https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz)");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("load_cifar10: cannot open '" + path.string() + "'");
  std::ostringstream bytes_stream;
  bytes_stream << f.rdbuf();
  const std::string bytes = bytes_stream.str();
  const auto size = static_cast<int64_t>(bytes.size());
  if (size == 0 || size % kRecord != 0)
    throw Error("load_cifar10: '" + path.string() + "' has " + std::to_string(size) +
                " bytes, not a whole number of " + std::to_string(kRecord) +
                "-byte records (label and 32x32x3 pixels): " +
                (size == 0
                     ? std::string("empty")
                     : "the record at offset " + std::to_string(size - size % kRecord) + " is cut short"));
  for (int64_t at = 0; at < size; at += kRecord) {
    const auto label = static_cast<uint8_t>(bytes[static_cast<size_t>(at)]);
    if (label > 9)
      throw Error("load_cifar10: '" + path.string() + "': label " + std::to_string(label) + " at offset " +
                  std::to_string(at) + " (record " + std::to_string(at / kRecord) + ") is not in 0..9");
    into.labels.push_back(label);
    into.pixels.insert(into.pixels.end(), bytes.begin() + at + 1, bytes.begin() + at + kRecord);
  }
}

std::pair<Tensor, Tensor> to_tensors(const Part& p) {
  const auto n = static_cast<int64_t>(p.labels.size());
  return {Tensor::from_bytes(p.pixels.data(), p.pixels.size(), {n, 3, 32, 32}, kUInt8),
          Tensor::from_vector(p.labels, {n})};
}

}  // namespace

Cifar10 load_cifar10(const std::string& root) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec))
    throw Error("load_cifar10: '" + root +
                "' is not a folder (cifar-10-batches-bin, with data_batch_1.bin to "
                "data_batch_5.bin and test_batch.bin)");
  Part train, test;
  for (int i = 1; i <= 5; i++)
    read_batch(std::filesystem::path(root) / ("data_batch_" + std::to_string(i) + ".bin"), train);
  read_batch(std::filesystem::path(root) / "test_batch.bin", test);
  Cifar10 d;
  std::tie(d.train_images, d.train_labels) = to_tensors(train);
  std::tie(d.test_images, d.test_labels) = to_tensors(test);
  return d;
}

Tensor random_crop_flip(const Tensor& images, int64_t padding, uint64_t seed) {
  if (images.dtype() != kUInt8 || images.dim() != 4)
    throw Error("random_crop_flip: expected uint8 images [N, C, H, W], got " +
                std::string(dtype_name(images.dtype())) + " " + shape_str(images.shape()));
  if (padding < 0 || padding > std::max(images.size(2), images.size(3)))
    throw Error("random_crop_flip: padding " + std::to_string(padding) + " is not in 0.." +
                std::to_string(std::max(images.size(2), images.size(3))) + " for images " +
                shape_str(images.shape()));
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  const std::vector<uint8_t> in = images.to_vector<uint8_t>();
  std::vector<uint8_t> out(in.size(), 0);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < n; i++) {
    // The crop's top-left corner in the padded image, and whether to mirror it.
    const auto dy = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * padding + 1)) - padding;
    const auto dx = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * padding + 1)) - padding;
    const bool flip = rng() & 1;
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
          const int64_t sy = y + dy, sx = (flip ? w - 1 - x : x) + dx;
          if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;  // the zero padding
          out[static_cast<size_t>(((i * c + ch) * h + y) * w + x)] =
              in[static_cast<size_t>(((i * c + ch) * h + sy) * w + sx)];
        }
  }
  return Tensor::from_bytes(out.data(), out.size(), images.shape(), kUInt8);
}

}  // namespace lazygrad::data
