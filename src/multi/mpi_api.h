// The slice of OpenMPI's C API lazygrad uses (lazygrad/mpi.h), declared here rather than taken from
// <mpi.h>: lazygrad builds without MPI and opens libmpi at run time (dlopen), so a machine without
// it runs everything else and `lazygrad info` says the transport is absent.
//
// Why this is OpenMPI's and not MPI's: the standard fixes the functions' names and arguments, not
// what a handle is. In OpenMPI (libmpi.so.40, versions 3 to 5) MPI_Comm, MPI_Datatype,
// MPI_Errhandler and MPI_Request are pointers to structs, the predefined handles (MPI_COMM_WORLD,
// MPI_BYTE, MPI_ERRORS_RETURN) are the addresses of exported globals (ompi_mpi_comm_world, ...), and
// MPI_STATUS_IGNORE is a null pointer. MPICH (libmpi.so.12) uses integers instead; opening it finds
// no such globals, and the transport reports it is not OpenMPI. This file is all of that knowledge.
#pragma once

#include <string>

namespace lazygrad::mpi {

using Comm = void*;        // struct ompi_communicator_t*
using Datatype = void*;    // struct ompi_datatype_t*
using Errhandler = void*;  // struct ompi_errhandler_t*
using Request = void*;     // struct ompi_request_t*

constexpr int MPI_SUCCESS = 0;
constexpr int MPI_THREAD_FUNNELED = 1;  // only the thread that called MPI_Init calls MPI
constexpr int MPI_MAX_STRING = 256;     // MPI_MAX_LIBRARY_VERSION_STRING and MPI_MAX_ERROR_STRING
constexpr void* MPI_STATUS_IGNORE = nullptr;

struct Api {
  std::string path;   // the library opened
  std::string error;  // why it cannot be used; empty when it can

  int (*MPI_Init_thread)(int* argc, char*** argv, int required, int* provided) = nullptr;
  int (*MPI_Initialized)(int* flag) = nullptr;
  int (*MPI_Finalize)() = nullptr;
  int (*MPI_Abort)(Comm comm, int errorcode) = nullptr;
  int (*MPI_Comm_rank)(Comm comm, int* rank) = nullptr;
  int (*MPI_Comm_size)(Comm comm, int* size) = nullptr;
  int (*MPI_Comm_set_errhandler)(Comm comm, Errhandler handler) = nullptr;
  int (*MPI_Isend)(const void* buf, int count, Datatype type, int dest, int tag, Comm comm,
                   Request* request) = nullptr;
  int (*MPI_Irecv)(void* buf, int count, Datatype type, int source, int tag, Comm comm,
                   Request* request) = nullptr;
  int (*MPI_Test)(Request* request, int* flag, void* status) = nullptr;  // status: MPI_Status*
  int (*MPI_Cancel)(Request* request) = nullptr;
  int (*MPI_Request_free)(Request* request) = nullptr;
  int (*MPI_Error_string)(int errorcode, char* text, int* length) = nullptr;
  int (*MPI_Get_library_version)(char* text, int* length) = nullptr;

  Comm comm_world = nullptr;           // MPI_COMM_WORLD
  Datatype byte = nullptr;             // MPI_BYTE
  Errhandler errors_return = nullptr;  // MPI_ERRORS_RETURN

  // "Open MPI v4.1.4" (MPI_Get_library_version up to its first comma), once opened.
  std::string version;
};

// libmpi, opened once: LAZYGRAD_MPI_LIBRARY when set (a path; one that is not there hides MPI),
// else libmpi.so.40, else libmpi.so. Never closed. api().error says why it cannot be used.
const Api& api();

}  // namespace lazygrad::mpi
