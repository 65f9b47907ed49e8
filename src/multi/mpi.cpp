// The MPI transport (lazygrad/mpi.h): MPI_COMM_WORLD, an all-gather made of point-to-point messages
// that wait against a deadline, and the all-reduce built on it with lazygrad's own ops.
//
// Why not MPI_Allreduce: a collective blocks until every rank takes part, so a stopped rank would
// hang the others forever, and which rank is missing could not be said. Here each rank posts a
// non-blocking receive from and a send to every other rank (MPI_Irecv, MPI_Isend on raw bytes)
// and polls them (MPI_Test) until the deadline; the ranks whose messages are still missing then are
// the ones that did not answer. The sum is taken afterwards by lazygrad in rank order, which gives
// every rank the same bits and follows lazygrad's semantics for every dtype. Each rank receives
// (n - 1) whole buffers: for 2 ranks what a ring moves, for more ranks more (docs/multi.md).
#include "lazygrad/mpi.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <span>
#include <thread>
#include <vector>

#include "engine/schedule.h"
#include "lazygrad/error.h"
#include "lazygrad/runtime.h"
#include "multi/mpi_api.h"
#include "runtime/buffer.h"

namespace lazygrad::mpi {

namespace {

constexpr double kDefaultTimeoutS = 60;
constexpr int kTag = 20;  // issue 20's; every exchange uses it (messages between two ranks keep their order)
constexpr size_t kMaxMessage = size_t{1} << 30;  // MPI counts in int: larger buffers go as 1 GiB pieces

struct World {
  int rank = 0, size = 1;
  bool initialized_here = false;  // MPI_Init was ours (not an embedding program's), so finalize is too
  std::string broken;             // why exchanges are refused: an earlier one timed out or failed
};
bool g_initialized = false;  // set once MPI_Init is done, for finalize() and abort()

std::string error_text(int code) {
  char text[MPI_MAX_STRING] = {};
  int length = 0;
  if (api().MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(std::max(length, 0)));
}

void check(int code, const std::string& what) {
  if (code != MPI_SUCCESS) throw Error("MPI: " + what + " failed: " + error_text(code));
}

World init() {
  const Api& a = api();
  if (!a.error.empty()) throw Error("MPI is absent: " + a.error);
  if (!launched_by_mpirun())
    throw Error(
        "MPI: this process was not started by mpirun (OMPI_COMM_WORLD_SIZE is not set); run it as "
        "`mpirun -np N lazygrad ...`");
  World w;
  int done = 0;
  check(a.MPI_Initialized(&done), "MPI_Initialized");
  if (!done) {
    int provided = 0;
    check(a.MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    w.initialized_here = true;
  }
  g_initialized = true;
  // Errors come back as return codes (an Error naming the rank), not as MPI's abort of the job.
  check(a.MPI_Comm_set_errhandler(a.comm_world, a.errors_return), "MPI_Comm_set_errhandler");
  check(a.MPI_Comm_rank(a.comm_world, &w.rank), "MPI_Comm_rank");
  check(a.MPI_Comm_size(a.comm_world, &w.size), "MPI_Comm_size");
  // The ranks mpirun started on this machine share its cores: each takes its part of them, unless
  // THREADS says otherwise (a pool per rank as wide as the machine would fight over the cores).
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const char* threads = std::getenv("THREADS");
  if (local && std::atoi(local) > 1 && !(threads && *threads))
    set_threads(std::max(1, settings().threads / std::atoi(local)));
  return w;
}

World& world() {
  static World w = init();  // a failed init throws, and the next call tries again
  return w;
}

// One message piece in flight, to or from `peer`.
struct Message {
  Request request = nullptr;
  int peer = 0;
  bool done = false;
};

// Sleeps in proportion to the time already waited (at most 1 ms): a reply that comes soon is seen
// soon, and a long wait (a peer still computing) leaves the cores to the ranks that share them.
void back_off(std::chrono::steady_clock::duration waited) {
  const auto pause = std::min<std::chrono::steady_clock::duration>(waited / 20, std::chrono::milliseconds(1));
  if (pause < std::chrono::microseconds(20))
    sched_yield();
  else
    std::this_thread::sleep_for(pause);
}

// Gives up on the messages still in flight: cancelled and freed, so that MPI lets go of them.
void cancel(std::vector<Message>& messages) {
  for (Message& m : messages)
    if (!m.done) {
      api().MPI_Cancel(&m.request);
      api().MPI_Request_free(&m.request);
    }
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); i++)
    s += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return s;
}

// Sends each of `mine` to every other rank and receives rank r's into into[r] (one span for each of
// `mine`, of its size; into[rank] unused), waiting at most timeout_s() for all of it.
void exchange(World& w, const std::vector<std::span<const std::byte>>& mine,
              const std::vector<std::vector<std::span<std::byte>>>& into) {
  if (!w.broken.empty()) throw Error("MPI: no more exchanges after an earlier failure (" + w.broken + ")");
  const Api& a = api();
  std::vector<Message> messages;
  auto post = [&](bool receive, int peer, std::byte* data, size_t bytes) {
    const size_t pieces = std::max<size_t>(1, (bytes + kMaxMessage - 1) / kMaxMessage);
    for (size_t i = 0; i < pieces; i++) {
      const size_t at = i * kMaxMessage;
      const int count = static_cast<int>(std::min(kMaxMessage, bytes - at));
      Message m{.peer = peer};
      const int code = receive ? a.MPI_Irecv(data + at, count, a.byte, peer, kTag, a.comm_world, &m.request)
                               : a.MPI_Isend(data + at, count, a.byte, peer, kTag, a.comm_world, &m.request);
      if (code != MPI_SUCCESS) {
        cancel(messages);
        w.broken = std::string(receive ? "MPI_Irecv from" : "MPI_Isend to") + " rank " +
                   std::to_string(peer) + ": " + error_text(code);
        throw Error("MPI: " + w.broken);
      }
      messages.push_back(m);
    }
  };
  // Between two ranks messages arrive in the order they were sent: the i-th receive gets the i-th send.
  for (int peer = 0; peer < w.size; peer++)
    if (peer != w.rank)
      for (const std::span<std::byte>& part : into[static_cast<size_t>(peer)])
        post(true, peer, part.data(), part.size());
  for (int peer = 0; peer < w.size; peer++)
    if (peer != w.rank)
      for (const std::span<const std::byte>& part : mine)  // MPI only reads it
        post(false, peer, const_cast<std::byte*>(part.data()), part.size());

  const auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_s()));
  auto last_poll = start;
  for (size_t left = messages.size(); left > 0;) {
    bool progressed = false;
    for (Message& m : messages) {
      if (m.done) continue;
      int flag = 0;
      if (int code = a.MPI_Test(&m.request, &flag, MPI_STATUS_IGNORE); code != MPI_SUCCESS) {
        cancel(messages);
        w.broken = "a message between ranks " + std::to_string(w.rank) + " and " + std::to_string(m.peer) +
                   " failed: " + error_text(code);
        throw Error("MPI: " + w.broken);
      }
      if (flag) {
        m.done = true;
        left--;
        progressed = true;
      }
    }
    if (left == 0) break;
    const auto now = std::chrono::steady_clock::now();
    // A poll that comes a second or more after the last one (which slept at most 1 ms) means this
    // rank itself did not run (it was stopped, SIGSTOP): that time is not the others' to answer for.
    if (now - last_poll > std::chrono::seconds(1)) deadline += now - last_poll;
    last_poll = now;
    if (now >= deadline) {
      std::vector<int> silent;
      for (const Message& m : messages)
        if (!m.done && std::find(silent.begin(), silent.end(), m.peer) == silent.end())
          silent.push_back(m.peer);
      std::sort(silent.begin(), silent.end());
      cancel(messages);
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_s());
      w.broken = rank_list(silent) + " did not answer rank " + std::to_string(w.rank) + " within " + seconds +
                 " s (LAZYGRAD_MPI_TIMEOUT)";
      throw Error("MPI: " + w.broken + ": stopped, hung or unreachable");
    }
    if (!progressed) back_off(now - start);
  }
}

// The buffer holding t's values contiguously, realized: t's own when it is one, else a copy.
std::shared_ptr<Buffer> contiguous_buffer(const Tensor& t) {
  Tensor c = t.contiguous();
  c.realize();
  return contiguous_buffer_node(c.uop().get())->as<std::shared_ptr<Buffer>>();
}

// A buffer's bytes as the host reads them: its memory where the host can (the CPU's), else a copy
// in `staging`.
std::span<const std::byte> host_bytes(Buffer& b, std::vector<std::byte>& staging) {
  if (const void* host = b.host_ptr()) return {static_cast<const std::byte*>(host), b.nbytes()};
  staging.resize(b.nbytes());
  b.copyout(staging);
  return staging;
}

}  // namespace

Availability availability() {
  const Api& a = api();
  if (!a.error.empty()) return {false, a.error};
  return {true, (a.version.empty() ? std::string("OpenMPI") : a.version) + " (" + a.path + ")"};
}

bool launched_by_mpirun() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && *size;
}

double timeout_s() {
  static const double seconds = [] {
    const char* v = std::getenv("LAZYGRAD_MPI_TIMEOUT");
    if (!v || !*v) return kDefaultTimeoutS;
    char* end = nullptr;
    const double s = std::strtod(v, &end);
    if (*end != '\0' || !(s > 0) || s > 1e9)
      throw Error(std::string("settings: LAZYGRAD_MPI_TIMEOUT=") + v +
                  " is not a positive number of seconds");
    return s;
  }();
  return seconds;
}

int rank() { return world().rank; }
int size() { return world().size; }

void all_gather(std::span<const std::byte> mine, std::span<std::byte> all) {
  World& w = world();
  if (all.size() != mine.size() * static_cast<size_t>(w.size))
    throw Error("mpi::all_gather: " + std::to_string(mine.size()) + " bytes from each of " +
                std::to_string(w.size) + " ranks do not fill " + std::to_string(all.size()));
  std::vector<std::vector<std::span<std::byte>>> into;
  for (int r = 0; r < w.size; r++)
    into.push_back({all.subspan(static_cast<size_t>(r) * mine.size(), mine.size())});
  std::copy(mine.begin(), mine.end(), into[static_cast<size_t>(w.rank)][0].begin());
  exchange(w, {mine}, into);
}

std::vector<std::vector<Tensor>> all_gather(const std::vector<Tensor>& tensors) {
  World& w = world();
  const size_t n = static_cast<size_t>(w.size);
  std::vector<std::vector<std::byte>> send_staging(tensors.size());
  std::vector<std::span<const std::byte>> mine;
  for (size_t i = 0; i < tensors.size(); i++)
    mine.push_back(host_bytes(*contiguous_buffer(tensors[i]), send_staging[i]));
  // Each other rank's bytes go straight into a new buffer on the tensor's device where the host can
  // write it (the CPU's), else through the host.
  std::vector<std::vector<Tensor>> parts(tensors.size(), std::vector<Tensor>(n));
  std::vector<std::vector<std::span<std::byte>>> into(n);
  std::vector<std::vector<std::vector<std::byte>>> staging(
      n, std::vector<std::vector<std::byte>>(tensors.size()));
  for (size_t r = 0; r < n; r++)
    for (size_t i = 0; i < tensors.size(); i++) {
      const Tensor& t = tensors[i];
      if (r == static_cast<size_t>(w.rank)) {
        parts[i][r] = t;
        continue;
      }
      parts[i][r] = Tensor::empty(t.shape(), t.dtype(), t.device());
      Buffer& b = *contiguous_buffer(parts[i][r]);
      if (void* host = b.host_ptr()) {
        into[r].emplace_back(static_cast<std::byte*>(host), b.nbytes());
      } else {
        staging[r][i].resize(b.nbytes());
        into[r].emplace_back(staging[r][i]);
      }
    }
  exchange(w, mine, into);
  for (size_t r = 0; r < n; r++)
    for (size_t i = 0; i < tensors.size(); i++)
      if (!staging[r][i].empty()) contiguous_buffer(parts[i][r])->copyin(staging[r][i]);
  return parts;
}

Tensor reduce(const std::vector<Tensor>& parts, ReduceOp op) {
  if (parts.empty()) throw Error("mpi::reduce: no parts");
  Tensor acc = parts[0];
  for (size_t i = 1; i < parts.size(); i++) {
    if (parts[i].shape() != acc.shape() || parts[i].dtype() != acc.dtype())
      throw Error("mpi::reduce: part " + std::to_string(i) + " is " + shape_str(parts[i].shape()) + " " +
                  std::string(dtype_name(parts[i].dtype())) + ", part 0 " + shape_str(acc.shape()) + " " +
                  std::string(dtype_name(acc.dtype())));
    acc = combine(acc, parts[i], op);
  }
  return acc;
}

std::vector<Tensor> all_reduce(const std::vector<Tensor>& tensors, ReduceOp op) {
  std::vector<Tensor> out;
  for (const std::vector<Tensor>& parts : all_gather(tensors)) out.push_back(reduce(parts, op));
  return out;
}

Tensor all_reduce(const Tensor& t, ReduceOp op) { return mpi::all_reduce(std::vector<Tensor>{t}, op)[0]; }

uint64_t fnv1a(const std::vector<Tensor>& tensors) {
  uint64_t h = 0xcbf29ce484222325ULL;
  std::vector<std::byte> staging;
  for (const Tensor& t : tensors)
    for (std::byte b : host_bytes(*contiguous_buffer(t), staging))
      h = (h ^ std::to_integer<uint64_t>(b)) * 0x100000001b3ULL;
  return h;
}

void check_same_on_every_rank(uint64_t hash, const std::string& what) {
  const int n = size();
  std::vector<uint64_t> all(static_cast<size_t>(n));
  all_gather(std::as_bytes(std::span(&hash, 1)), std::as_writable_bytes(std::span(all)));
  std::vector<int> differ;
  for (int r = 1; r < n; r++)
    if (all[static_cast<size_t>(r)] != all[0]) differ.push_back(r);
  if (differ.empty()) return;
  auto hex = [](uint64_t v) {
    char text[20];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
    return std::string(text);
  };
  std::string detail;
  for (int r : differ) detail += ", rank " + std::to_string(r) + " " + hex(all[static_cast<size_t>(r)]);
  throw Error("MPI: the ranks' " + what + " differ: " + rank_list(differ) + " hold other " + what +
              " than rank 0 (FNV-1a: rank 0 " + hex(all[0]) + detail + ")");
}

void finalize() {
  if (!g_initialized) return;
  World& w = world();
  // After a failure the others may never get here: MPI_Finalize would wait for them.
  if (!w.broken.empty() || !w.initialized_here) return;
  check(api().MPI_Finalize(), "MPI_Finalize");
  g_initialized = false;
}

void abort(int status) {
  std::cout.flush();
  std::cerr.flush();
  if (g_initialized) api().MPI_Abort(api().comm_world, status);
  std::_Exit(status);  // MPI_Abort does not return; nor does a process MPI never joined
}

}  // namespace lazygrad::mpi
