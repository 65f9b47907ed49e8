// DataLoader: batches of rows gathered on the host by a prefetch thread.
//
// Threading. The runtime's realize is not documented thread-safe, so the background thread never
// runs a kernel: the sources are realized and copied to host memory (a snapshot) on the caller's
// thread when the loader is built, and the thread only memcpys rows out of that immutable snapshot
// and wraps them with Tensor::from_bytes (which allocates a buffer and makes a BUFFER node; the node
// table and the buffer pool are locked). The only state the two threads share is a pass's queue of
// ready batches, under its mutex. A pass (one epoch) is owned by its iterators and owns its thread,
// so dropping the last iterator (a loop that ends or breaks) stops and joins the thread.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <span>
#include <system_error>
#include <thread>

#include "engine/schedule.h"
#include "lazygrad/data.h"
#include "lazygrad/error.h"
#include "runtime/buffer.h"
#include "tensor/tensor_impl.h"

namespace lazygrad::data {

struct DataLoader::Source {
  std::vector<unsigned char> bytes;  // the rows, contiguous, row-major
  int64_t rows = 0;                  // shape[0]
  Shape row_shape;                   // shape[1:]
  DType dtype = kFloat32;
  size_t row_bytes = 0;
};

namespace {

using Source = DataLoader::Source;

// Copies a realized, contiguous tensor's buffer to host memory.
std::shared_ptr<const Source> snapshot(const Tensor& contiguous) {
  UOpPtr u = contiguous.uop();
  const UOp* node = contiguous_buffer_node(u.get());
  if (!node || node->numel() != u->numel())
    throw Error("DataLoader: internal error: a realized contiguous tensor " + shape_str(contiguous.shape()) +
                " is not backed by a whole buffer");
  const std::shared_ptr<Buffer>& buffer = node->as<std::shared_ptr<Buffer>>();
  auto source = std::make_shared<Source>();
  source->dtype = contiguous.dtype();
  source->rows = contiguous.size(0);
  source->row_shape.assign(contiguous.shape().begin() + 1, contiguous.shape().end());
  source->row_bytes = itemsize(source->dtype);
  for (int64_t s : source->row_shape) source->row_bytes *= static_cast<size_t>(s);
  source->bytes.resize(contiguous.nbytes());
  if (!source->bytes.empty()) buffer->copyout(std::as_writable_bytes(std::span(source->bytes)));
  return source;
}

// Copies rows of `source` (in the given order) into one new contiguous tensor. Runs of consecutive
// rows, the whole batch when not shuffling, are one memcpy. `staging` is reused between batches.
Tensor gather_rows(const Source& source, std::span<const int64_t> rows, std::vector<unsigned char>& staging) {
  const size_t row = source.row_bytes;
  staging.resize(rows.size() * row);
  if (row > 0) {
    for (size_t i = 0; i < rows.size();) {
      size_t j = i + 1;
      while (j < rows.size() && rows[j] == rows[j - 1] + 1) j++;
      std::memcpy(staging.data() + i * row, source.bytes.data() + static_cast<size_t>(rows[i]) * row,
                  (j - i) * row);
      i = j;
    }
  }
  Shape shape{static_cast<int64_t>(rows.size())};
  shape.insert(shape.end(), source.row_shape.begin(), source.row_shape.end());
  return Tensor::from_bytes(staging.data(), staging.size(), shape, source.dtype);
}

// SplitMix64 (Steele, Lea and Flood): a tiny generator whose output is fixed by its seed on every
// platform, unlike std::shuffle and the std distributions, whose algorithms are unspecified.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return mix(state_);
  }
  // Uniform in [0, bound), bound > 0: rejection of the short top range keeps it unbiased.
  uint64_t below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

}  // namespace

// One epoch: its order, the batches made so far and (with prefetch) the thread that makes them.
struct DataLoader::Pass {
  Pass(std::shared_ptr<const Source> inputs, std::shared_ptr<const Source> targets,
       std::vector<int64_t> order, int64_t batch_size, int64_t batches, int64_t prefetch)
      : inputs(std::move(inputs)),
        targets(std::move(targets)),
        order(std::move(order)),
        batch_size(batch_size),
        batches(batches),
        prefetch(prefetch) {
    if (prefetch == 0 || batches == 0) return;
    try {
      worker = std::thread([this] { produce(); });
    } catch (const std::system_error& e) {
      throw Error(std::string("DataLoader: cannot start the prefetch thread: ") + e.what());
    }
  }

  ~Pass() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    changed.notify_all();
    if (worker.joinable()) worker.join();
  }

  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

  // Batch `index` from the immutable sources: safe on any thread; `staging` belongs to the caller.
  Batch make_batch(int64_t index, std::vector<unsigned char>& staging) const {
    const int64_t start = index * batch_size;
    const int64_t count = std::min<int64_t>(batch_size, static_cast<int64_t>(order.size()) - start);
    std::span<const int64_t> rows(order.data() + start, static_cast<size_t>(count));
    Batch batch;
    batch.inputs = gather_rows(*inputs, rows, staging);
    if (targets) batch.targets = gather_rows(*targets, rows, staging);
    return batch;
  }

  // The prefetch thread: makes every batch in order, waiting while `prefetch` of them are ready.
  void produce() {
    std::vector<unsigned char> staging;
    for (int64_t index = 0; index < batches; index++) {
      Ready item;
      try {
        item.batch = make_batch(index, staging);
      } catch (...) {
        item.error = std::current_exception();  // handed to the caller at this batch's turn
      }
      const bool failed = item.error != nullptr;
      {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(lock, [&] { return stop || static_cast<int64_t>(ready.size()) < prefetch; });
        if (stop) return;
        ready.push_back(std::move(item));
      }
      changed.notify_all();
      if (failed) return;
    }
  }

  // The caller's thread: makes `current` the next batch, or ends the pass.
  void advance() {
    if (done) throw Error("DataLoader: increment of an iterator past the end of its epoch");
    if (next_index == batches) {
      done = true;
      current = Batch{};
      return;
    }
    Ready item;
    if (prefetch == 0) {
      try {
        item.batch = make_batch(next_index, caller_staging);
      } catch (...) {
        item.error = std::current_exception();
      }
    } else {
      {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(lock, [&] { return !ready.empty(); });
        item = std::move(ready.front());
        ready.pop_front();
      }
      changed.notify_all();
    }
    next_index++;
    if (item.error) {
      done = true;  // the thread has stopped: a later increment must not wait for it
      current = Batch{};
      std::rethrow_exception(item.error);
    }
    current = std::move(item.batch);
  }

  struct Ready {
    Batch batch;
    std::exception_ptr error;
  };

  // Immutable while the thread runs.
  const std::shared_ptr<const Source> inputs;
  const std::shared_ptr<const Source> targets;
  const std::vector<int64_t> order;
  const int64_t batch_size;
  const int64_t batches;
  const int64_t prefetch;

  // The caller's side only.
  Batch current;
  int64_t next_index = 0;
  bool done = false;
  std::vector<unsigned char> caller_staging;  // without a thread

  // Shared, under mu.
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Ready> ready;
  bool stop = false;

  std::thread worker;  // last: started once everything above is built
};

DataLoader::DataLoader(const Tensor& inputs, DataLoaderOptions options)
    : DataLoader(inputs, Tensor(), options) {}

DataLoader::DataLoader(const Tensor& inputs, const Tensor& targets, DataLoaderOptions options)
    : options_(options) {
  if (options.batch_size <= 0)
    throw ValueError("DataLoader: batch_size should be a positive integer value, but got batch_size=" +
                     std::to_string(options.batch_size));
  if (options.prefetch_factor < 0)
    throw ValueError("DataLoader: prefetch_factor should be 0 (no thread) or more, but got prefetch_factor=" +
                     std::to_string(options.prefetch_factor));
  if (!inputs.defined()) throw Error("DataLoader: inputs is an undefined tensor");
  if (inputs.dim() == 0) throw Error("DataLoader: inputs is 0-d (shape {}): batching needs a dim 0");
  if (targets.defined()) {
    if (targets.dim() == 0) throw Error("DataLoader: targets is 0-d (shape {}): batching needs a dim 0");
    if (targets.size(0) != inputs.size(0))
      throw Error("DataLoader: size mismatch between tensors: inputs " + shape_str(inputs.shape()) +
                  " and targets " + shape_str(targets.shape()) + " differ in dim 0");
  }
  // One schedule for both (contiguous() is the tensor itself when it already is a whole buffer);
  // NoGrad: the snapshot is data, not part of any gradient graph.
  Tensor x, y;
  {
    NoGrad no_grad;
    x = inputs.contiguous();
    if (targets.defined()) y = targets.contiguous();
  }
  if (y.defined())
    realize({x, y});
  else
    x.realize();
  inputs_ = snapshot(x);
  if (y.defined()) targets_ = snapshot(y);
}

DataLoader::~DataLoader() = default;  // passes own their threads and hold the snapshots they read

int64_t DataLoader::dataset_size() const { return inputs_->rows; }

int64_t DataLoader::size() const {
  const int64_t n = dataset_size(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::indices(uint64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(dataset_size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!options_.shuffle) return order;
  // Fisher-Yates from a generator seeded by (seed, epoch): each epoch's order on its own.
  SplitMix64 rng(SplitMix64::mix(options_.seed) ^ SplitMix64::mix(epoch + 0x632BE59BD9B4E019ULL));
  for (size_t i = order.size(); i > 1; i--) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

DataLoader::Iterator DataLoader::begin() {
  auto pass = std::make_shared<Pass>(inputs_, targets_, indices(next_epoch_), options_.batch_size, size(),
                                     options_.prefetch_factor);
  next_epoch_++;
  pass->advance();
  return Iterator(std::move(pass));
}

DataLoader::Iterator::Iterator(std::shared_ptr<Pass> pass) : pass_(std::move(pass)) {}

Batch& DataLoader::Iterator::operator*() const {
  if (!pass_) throw Error("DataLoader: dereference of an end iterator");
  return pass_->current;
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (!pass_) throw Error("DataLoader: increment of an end iterator");
  pass_->advance();
  return *this;
}

bool DataLoader::Iterator::operator==(std::default_sentinel_t) const { return !pass_ || pass_->done; }

}  // namespace lazygrad::data
