// Across processes and machines: OpenMPI as the transport between lazygrad processes started by
// mpirun, one per rank (docs/multi.md, "Across processes: MPI"). libmpi is opened with dlopen at
// first use, so lazygrad builds and runs where MPI is not installed; available() says whether it
// is here.
//
//   mpirun -np 2 lazygrad train fashion-mnist --ddp      (each rank: its rows of every batch)
//
//   Tensor g = ...;                                      // this rank's gradient
//   Tensor sum = mpi::all_reduce(g);                     // every rank's, summed in rank order
//
// Everything here is called from one thread of each process, the same calls in the same order on
// every rank (MPI's collective rule). A rank that does not answer within timeout_s() is an Error
// naming it; after one the transport refuses further exchanges, and the process should stop the
// job with abort().
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lazygrad/multi.h"
#include "lazygrad/tensor.h"

namespace lazygrad::mpi {

// Whether the transport can be used: OpenMPI's libmpi opened (LAZYGRAD_MPI_LIBRARY, a path, when
// set; else libmpi.so.40, else libmpi.so). `detail` is the library and its version, or why it is
// absent. Never throws.
struct Availability {
  bool available = false;
  std::string detail;
};
Availability availability();

// Whether OpenMPI's mpirun started this process (OMPI_COMM_WORLD_SIZE is set).
bool launched_by_mpirun();

// How long an exchange waits for another rank before it is an Error naming the rank:
// LAZYGRAD_MPI_TIMEOUT seconds (a positive number), default 60.
double timeout_s();

// This process's rank and the number of ranks (MPI_COMM_WORLD). The first call of any function
// below initializes MPI; an Error when MPI is absent or mpirun did not start this process. Where
// THREADS is not set, the ranks on one machine then divide its cores between them
// (OMPI_COMM_WORLD_LOCAL_SIZE): settings().threads becomes the core count over the local ranks.
int rank();
int size();

// Every rank's `mine` (the same number of bytes on each) into `all`, rank r's at r * mine.size():
// MPI_Allgather, done as each rank sending its bytes to every other directly and waiting for each
// one's, so that a rank that does not answer within timeout_s() is known and named in the Error.
void all_gather(std::span<const std::byte> mine, std::span<std::byte> all);

// Every rank's tensors[i] (each of one shape and dtype on every rank), in rank order: out[i][r] is
// rank r's, on tensors[i]'s device. This rank's is tensors[i] itself (realized), the others' are
// copied in from the bytes they sent; all of them travel in one exchange.
std::vector<std::vector<Tensor>> all_gather(const std::vector<Tensor>& tensors);
// The sum, maximum or product of `parts` taken in their order (part 0 first), lazily, by lazygrad's
// own ops in the parts' dtype (int8 wraps, a bool sum is "any", as lazygrad::all_reduce): given
// all_gather's parts every rank computes the same bits.
Tensor reduce(const std::vector<Tensor>& parts, ReduceOp op = ReduceOp::Sum);
// reduce() of each tensor's all_gather() parts: the same bits on every rank, lazy (realize them, or
// use them in a graph).
std::vector<Tensor> all_reduce(const std::vector<Tensor>& tensors, ReduceOp op = ReduceOp::Sum);
Tensor all_reduce(const Tensor& t, ReduceOp op = ReduceOp::Sum);

// FNV-1a (64 bits) of the tensors' bytes, in order: what the ranks compare to check that they hold
// the same parameters.
uint64_t fnv1a(const std::vector<Tensor>& tensors);
// Gathers every rank's `hash` of `what` ("parameters") and compares: an Error naming the ranks
// whose hash is not rank 0's.
void check_same_on_every_rank(uint64_t hash, const std::string& what);

// After the last exchange, on every rank (MPI_Finalize). Nothing to do when MPI was not initialized.
void finalize();
// Stops this rank and every other one of the job at once with exit status `status` (MPI_Abort):
// for a rank that failed, which the others would otherwise wait for. Exits plainly when MPI was
// not initialized. Never returns.
[[noreturn]] void abort(int status);

}  // namespace lazygrad::mpi
