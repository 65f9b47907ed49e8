// The slice of the OpenCL C API lazygrad uses, declared here rather than taken from <CL/cl.h>:
// lazygrad builds on machines with no OpenCL headers, and finds the library at run time (dlopen),
// so a machine without OpenCL still runs everything else and `lazygrad info` says why CL is missing.
//
// Names, values and signatures are the Khronos ones (OpenCL 1.2, which every driver still in use
// provides), so the spec reads as documentation for this file.
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "runtime/shared_library.h"

namespace lazygrad::cl {

using cl_int = int32_t;
using cl_uint = uint32_t;
using cl_long = int64_t;
using cl_ulong = uint64_t;
using cl_bool = cl_uint;
using cl_bitfield = cl_ulong;
using cl_device_type = cl_bitfield;
using cl_device_fp_config = cl_bitfield;
using cl_command_queue_properties = cl_bitfield;
using cl_mem_flags = cl_bitfield;
using cl_platform_info = cl_uint;
using cl_device_info = cl_uint;
using cl_program_info = cl_uint;
using cl_program_build_info = cl_uint;
using cl_profiling_info = cl_uint;
using cl_context_properties = intptr_t;

// Opaque handles: only the driver looks inside.
struct _cl_platform_id;
struct _cl_device_id;
struct _cl_context;
struct _cl_command_queue;
struct _cl_mem;
struct _cl_program;
struct _cl_kernel;
struct _cl_event;
using cl_platform_id = _cl_platform_id*;
using cl_device_id = _cl_device_id*;
using cl_context = _cl_context*;
using cl_command_queue = _cl_command_queue*;
using cl_mem = _cl_mem*;
using cl_program = _cl_program*;
using cl_kernel = _cl_kernel*;
using cl_event = _cl_event*;

// Constants (values from cl.h and cl_ext.h).
constexpr cl_int CL_SUCCESS = 0;
constexpr cl_int CL_DEVICE_NOT_FOUND = -1;
constexpr cl_int CL_MEM_OBJECT_ALLOCATION_FAILURE = -4;
constexpr cl_int CL_OUT_OF_RESOURCES = -5;
constexpr cl_int CL_OUT_OF_HOST_MEMORY = -6;
constexpr cl_int CL_BUILD_PROGRAM_FAILURE = -11;
constexpr cl_int CL_PLATFORM_NOT_FOUND_KHR = -1001;  // the ICD loader found no vendor library

constexpr cl_bool CL_FALSE = 0;
constexpr cl_bool CL_TRUE = 1;

constexpr cl_platform_info CL_PLATFORM_VERSION = 0x0901;
constexpr cl_platform_info CL_PLATFORM_NAME = 0x0902;

constexpr cl_device_type CL_DEVICE_TYPE_ALL = 0xFFFFFFFF;

constexpr cl_device_info CL_DEVICE_TYPE = 0x1000;
constexpr cl_device_type CL_DEVICE_TYPE_CPU = 1 << 1;
constexpr cl_device_info CL_DEVICE_MAX_COMPUTE_UNITS = 0x1002;
constexpr cl_device_info CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS = 0x1003;
constexpr cl_device_info CL_DEVICE_MAX_WORK_GROUP_SIZE = 0x1004;
constexpr cl_device_info CL_DEVICE_MAX_WORK_ITEM_SIZES = 0x1005;
constexpr cl_device_info CL_DEVICE_SINGLE_FP_CONFIG = 0x101B;
constexpr cl_device_info CL_DEVICE_GLOBAL_MEM_SIZE = 0x101F;
constexpr cl_device_info CL_DEVICE_LOCAL_MEM_SIZE = 0x1023;
constexpr cl_device_info CL_DEVICE_NAME = 0x102B;
constexpr cl_device_info CL_DRIVER_VERSION = 0x102D;
constexpr cl_device_info CL_DEVICE_EXTENSIONS = 0x1030;
constexpr cl_device_info CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT = 0x103A;

constexpr cl_device_fp_config CL_FP_DENORM = 1 << 0;
constexpr cl_device_fp_config CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 7;

constexpr cl_command_queue_properties CL_QUEUE_PROFILING_ENABLE = 1 << 1;

constexpr cl_mem_flags CL_MEM_READ_WRITE = 1 << 0;
constexpr cl_mem_flags CL_MEM_COPY_HOST_PTR = 1 << 5;

constexpr cl_program_info CL_PROGRAM_BINARY_SIZES = 0x1165;
constexpr cl_program_info CL_PROGRAM_BINARIES = 0x1166;
constexpr cl_program_build_info CL_PROGRAM_BUILD_LOG = 0x1183;

constexpr cl_profiling_info CL_PROFILING_COMMAND_START = 0x1282;
constexpr cl_profiling_info CL_PROFILING_COMMAND_END = 0x1283;

// The entry points, filled by dlsym. `error` says why OpenCL cannot be used (no library, or one
// without an entry below); when it is empty every pointer is set.
struct Api {
  std::string error;
  // api-begin (a test compares these with cl.h's declarations)
  cl_int (*clGetPlatformIDs)(cl_uint, cl_platform_id*, cl_uint*) = nullptr;
  cl_int (*clGetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void*, size_t*) = nullptr;
  cl_int (*clGetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id*, cl_uint*) = nullptr;
  cl_int (*clGetDeviceInfo)(cl_device_id, cl_device_info, size_t, void*, size_t*) = nullptr;
  cl_context (*clCreateContext)(const cl_context_properties*, cl_uint, const cl_device_id*,
                                void (*)(const char*, const void*, size_t, void*), void*, cl_int*) = nullptr;
  cl_int (*clReleaseContext)(cl_context) = nullptr;
  cl_command_queue (*clCreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties,
                                           cl_int*) = nullptr;
  cl_int (*clReleaseCommandQueue)(cl_command_queue) = nullptr;
  cl_mem (*clCreateBuffer)(cl_context, cl_mem_flags, size_t, void*, cl_int*) = nullptr;
  cl_int (*clReleaseMemObject)(cl_mem) = nullptr;
  cl_program (*clCreateProgramWithSource)(cl_context, cl_uint, const char**, const size_t*,
                                          cl_int*) = nullptr;
  cl_program (*clCreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id*, const size_t*,
                                          const unsigned char**, cl_int*, cl_int*) = nullptr;
  cl_int (*clBuildProgram)(cl_program, cl_uint, const cl_device_id*, const char*, void (*)(cl_program, void*),
                           void*) = nullptr;
  cl_int (*clGetProgramInfo)(cl_program, cl_program_info, size_t, void*, size_t*) = nullptr;
  cl_int (*clGetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t, void*,
                                  size_t*) = nullptr;
  cl_int (*clReleaseProgram)(cl_program) = nullptr;
  cl_kernel (*clCreateKernel)(cl_program, const char*, cl_int*) = nullptr;
  cl_int (*clReleaseKernel)(cl_kernel) = nullptr;
  cl_int (*clSetKernelArg)(cl_kernel, cl_uint, size_t, const void*) = nullptr;
  cl_int (*clEnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*,
                                   const size_t*, cl_uint, const cl_event*, cl_event*) = nullptr;
  cl_int (*clEnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint,
                                const cl_event*, cl_event*) = nullptr;
  cl_int (*clEnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void*, cl_uint,
                                 const cl_event*, cl_event*) = nullptr;
  cl_int (*clWaitForEvents)(cl_uint, const cl_event*) = nullptr;
  cl_int (*clGetEventProfilingInfo)(cl_event, cl_profiling_info, size_t, void*, size_t*) = nullptr;
  cl_int (*clReleaseEvent)(cl_event) = nullptr;
  cl_int (*clFinish)(cl_command_queue) = nullptr;
  // api-end
};

namespace detail {

inline Api open_api() {
  Api a;
  // The ICD loader's soname first (what the runtime package installs), the development link after.
  // Never closed: drivers register atexit handlers and threads that must outlive any unload.
  void* lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::string why = dlerror();
    lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      // dlerror names the file itself ("libOpenCL.so.1: cannot open shared object file: ...").
      if (why.rfind("libOpenCL.so.1", 0) != 0) why = "libOpenCL.so.1: " + why;
      a.error = "no OpenCL library (" + why + ")";
      return a;
    }
  }
  std::string missing;
  bind_symbol(lib, a.clGetPlatformIDs, "clGetPlatformIDs", missing);
  bind_symbol(lib, a.clGetPlatformInfo, "clGetPlatformInfo", missing);
  bind_symbol(lib, a.clGetDeviceIDs, "clGetDeviceIDs", missing);
  bind_symbol(lib, a.clGetDeviceInfo, "clGetDeviceInfo", missing);
  bind_symbol(lib, a.clCreateContext, "clCreateContext", missing);
  bind_symbol(lib, a.clReleaseContext, "clReleaseContext", missing);
  bind_symbol(lib, a.clCreateCommandQueue, "clCreateCommandQueue", missing);
  bind_symbol(lib, a.clReleaseCommandQueue, "clReleaseCommandQueue", missing);
  bind_symbol(lib, a.clCreateBuffer, "clCreateBuffer", missing);
  bind_symbol(lib, a.clReleaseMemObject, "clReleaseMemObject", missing);
  bind_symbol(lib, a.clCreateProgramWithSource, "clCreateProgramWithSource", missing);
  bind_symbol(lib, a.clCreateProgramWithBinary, "clCreateProgramWithBinary", missing);
  bind_symbol(lib, a.clBuildProgram, "clBuildProgram", missing);
  bind_symbol(lib, a.clGetProgramInfo, "clGetProgramInfo", missing);
  bind_symbol(lib, a.clGetProgramBuildInfo, "clGetProgramBuildInfo", missing);
  bind_symbol(lib, a.clReleaseProgram, "clReleaseProgram", missing);
  bind_symbol(lib, a.clCreateKernel, "clCreateKernel", missing);
  bind_symbol(lib, a.clReleaseKernel, "clReleaseKernel", missing);
  bind_symbol(lib, a.clSetKernelArg, "clSetKernelArg", missing);
  bind_symbol(lib, a.clEnqueueNDRangeKernel, "clEnqueueNDRangeKernel", missing);
  bind_symbol(lib, a.clEnqueueReadBuffer, "clEnqueueReadBuffer", missing);
  bind_symbol(lib, a.clEnqueueWriteBuffer, "clEnqueueWriteBuffer", missing);
  bind_symbol(lib, a.clWaitForEvents, "clWaitForEvents", missing);
  bind_symbol(lib, a.clGetEventProfilingInfo, "clGetEventProfilingInfo", missing);
  bind_symbol(lib, a.clReleaseEvent, "clReleaseEvent", missing);
  bind_symbol(lib, a.clFinish, "clFinish", missing);
  if (!missing.empty()) a.error = "the OpenCL library lacks " + missing;
  return a;
}

}  // namespace detail

// The library, opened on first use (once, whichever thread asks first).
inline const Api& api() {
  static const Api a = detail::open_api();
  return a;
}

// "CL_OUT_OF_RESOURCES" for -5; the number itself for a code not listed.
inline std::string error_name(cl_int code) {
  static constexpr std::pair<cl_int, const char*> kNames[] = {
      {0, "CL_SUCCESS"},
      {-1, "CL_DEVICE_NOT_FOUND"},
      {-2, "CL_DEVICE_NOT_AVAILABLE"},
      {-3, "CL_COMPILER_NOT_AVAILABLE"},
      {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {-5, "CL_OUT_OF_RESOURCES"},
      {-6, "CL_OUT_OF_HOST_MEMORY"},
      {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
      {-8, "CL_MEM_COPY_OVERLAP"},
      {-9, "CL_IMAGE_FORMAT_MISMATCH"},
      {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
      {-11, "CL_BUILD_PROGRAM_FAILURE"},
      {-12, "CL_MAP_FAILURE"},
      {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
      {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
      {-15, "CL_COMPILE_PROGRAM_FAILURE"},
      {-16, "CL_LINKER_NOT_AVAILABLE"},
      {-17, "CL_LINK_PROGRAM_FAILURE"},
      {-18, "CL_DEVICE_PARTITION_FAILED"},
      {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
      {-30, "CL_INVALID_VALUE"},
      {-31, "CL_INVALID_DEVICE_TYPE"},
      {-32, "CL_INVALID_PLATFORM"},
      {-33, "CL_INVALID_DEVICE"},
      {-34, "CL_INVALID_CONTEXT"},
      {-35, "CL_INVALID_QUEUE_PROPERTIES"},
      {-36, "CL_INVALID_COMMAND_QUEUE"},
      {-37, "CL_INVALID_HOST_PTR"},
      {-38, "CL_INVALID_MEM_OBJECT"},
      {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
      {-40, "CL_INVALID_IMAGE_SIZE"},
      {-41, "CL_INVALID_SAMPLER"},
      {-42, "CL_INVALID_BINARY"},
      {-43, "CL_INVALID_BUILD_OPTIONS"},
      {-44, "CL_INVALID_PROGRAM"},
      {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
      {-46, "CL_INVALID_KERNEL_NAME"},
      {-47, "CL_INVALID_KERNEL_DEFINITION"},
      {-48, "CL_INVALID_KERNEL"},
      {-49, "CL_INVALID_ARG_INDEX"},
      {-50, "CL_INVALID_ARG_VALUE"},
      {-51, "CL_INVALID_ARG_SIZE"},
      {-52, "CL_INVALID_KERNEL_ARGS"},
      {-53, "CL_INVALID_WORK_DIMENSION"},
      {-54, "CL_INVALID_WORK_GROUP_SIZE"},
      {-55, "CL_INVALID_WORK_ITEM_SIZE"},
      {-56, "CL_INVALID_GLOBAL_OFFSET"},
      {-57, "CL_INVALID_EVENT_WAIT_LIST"},
      {-58, "CL_INVALID_EVENT"},
      {-59, "CL_INVALID_OPERATION"},
      {-60, "CL_INVALID_GL_OBJECT"},
      {-61, "CL_INVALID_BUFFER_SIZE"},
      {-62, "CL_INVALID_MIP_LEVEL"},
      {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {-64, "CL_INVALID_PROPERTY"},
      {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
      {-66, "CL_INVALID_COMPILER_OPTIONS"},
      {-67, "CL_INVALID_LINKER_OPTIONS"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
  for (const auto& [value, name] : kNames)
    if (value == code) return name;
  return "OpenCL error " + std::to_string(code);
}

}  // namespace lazygrad::cl
