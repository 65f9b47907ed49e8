// Opens OpenMPI's libmpi (mpi_api.h) and says why it cannot be used when it cannot.
#include "multi/mpi_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "runtime/shared_library.h"

namespace lazygrad::mpi {

namespace {

// The exported global behind one of OpenMPI's predefined handles; adds its name to `missing`.
void* global(void* lib, const char* name, std::string& missing) {
  void* p = dlsym(lib, name);
  if (!p) missing += std::string(missing.empty() ? "" : ", ") + name;
  return p;
}

Api open_api() {
  Api a;
  std::vector<std::string> candidates{"libmpi.so.40", "libmpi.so"};
  if (const char* forced = std::getenv("LAZYGRAD_MPI_LIBRARY"); forced && *forced) candidates = {forced};
  // RTLD_GLOBAL: OpenMPI's plugins (mca_*.so, which it opens itself) use libmpi's symbols without
  // linking it. Never closed: MPI keeps threads and handlers that must outlive any unload.
  void* lib = nullptr;
  std::string tried;
  for (const std::string& path : candidates) {
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (lib) {
      a.path = path;
      break;
    }
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  if (!lib) {
    a.error = "no libmpi (" + tried + "); Debian: apt-get install openmpi-bin libopenmpi-dev";
    return a;
  }
  std::string missing;
  bind_symbol(lib, a.MPI_Init_thread, "MPI_Init_thread", missing);
  bind_symbol(lib, a.MPI_Initialized, "MPI_Initialized", missing);
  bind_symbol(lib, a.MPI_Finalize, "MPI_Finalize", missing);
  bind_symbol(lib, a.MPI_Abort, "MPI_Abort", missing);
  bind_symbol(lib, a.MPI_Comm_rank, "MPI_Comm_rank", missing);
  bind_symbol(lib, a.MPI_Comm_size, "MPI_Comm_size", missing);
  bind_symbol(lib, a.MPI_Comm_set_errhandler, "MPI_Comm_set_errhandler", missing);
  bind_symbol(lib, a.MPI_Isend, "MPI_Isend", missing);
  bind_symbol(lib, a.MPI_Irecv, "MPI_Irecv", missing);
  bind_symbol(lib, a.MPI_Test, "MPI_Test", missing);
  bind_symbol(lib, a.MPI_Cancel, "MPI_Cancel", missing);
  bind_symbol(lib, a.MPI_Request_free, "MPI_Request_free", missing);
  bind_symbol(lib, a.MPI_Error_string, "MPI_Error_string", missing);
  bind_symbol(lib, a.MPI_Get_library_version, "MPI_Get_library_version", missing);
  if (!missing.empty()) {
    a.error = a.path + " lacks " + missing;
    return a;
  }
  std::string globals;
  a.comm_world = global(lib, "ompi_mpi_comm_world", globals);
  a.byte = global(lib, "ompi_mpi_byte", globals);
  a.errors_return = global(lib, "ompi_mpi_errors_return", globals);
  if (!globals.empty()) {
    a.error = a.path + " is not OpenMPI's (it has no " + globals + "; lazygrad speaks OpenMPI's ABI only)";
    return a;
  }
  // One of the few calls allowed before MPI_Init.
  char text[MPI_MAX_STRING] = {};
  int length = 0;
  if (a.MPI_Get_library_version(text, &length) == MPI_SUCCESS) {
    a.version.assign(text, static_cast<size_t>(length > 0 ? length : 0));
    a.version = a.version.substr(0, a.version.find(','));
  }
  return a;
}

}  // namespace

const Api& api() {
  static const Api a = open_api();
  return a;
}

}  // namespace lazygrad::mpi
