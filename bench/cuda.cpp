// Matrix products on an NVIDIA GPU: lazygrad (DEVICE CUDA, default opts) against cuBLAS in the
// same process, float32 (TF32 off on both sides) and bfloat16 (float32 accumulation), and the
// GPU's memory bandwidth as lazygrad's elementwise kernels and the driver's device copy reach it.
//
//   ./build/bench_cuda [--n 4096] [--reps 5]
//
// lazygrad   a.matmul(b).realize() on CUDA, then the device's queue drained; best of R after a
//            warm-up (which compiles). bfloat16 inputs give a bfloat16 result, as in PyTorch.
// cuBLAS     libcublas (opened at run time, as lazygrad opens the driver) on copies of the same
//            inputs: cublasSgemm in its default math mode (no TF32), cublasGemmEx with bfloat16
//            operands and float32 compute; best of R after a warm-up.
// bandwidth  (x + 1) over a 1 GiB float tensor (2 GiB moved), and cuMemcpyDtoD of 1 GiB.
// lazygrad's product is checked against cuBLAS's: the largest difference relative to the largest
// |value| (exit 1 above 1e-2 for bfloat16, 1e-4 for float32). Prints `skip: why` and exits 0
// where there is no CUDA device.
#include <dlfcn.h>
#include <lazygrad/lazygrad.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/device.h"

using namespace lazygrad;

namespace {

// The slice of cuBLAS this bench calls (cublas_api.h's names and values).
struct Cublas {
  void* handle = nullptr;
  int (*create)(void**) = nullptr;
  int (*set_math_mode)(void*, int) = nullptr;
  int (*sgemm)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
               const float*, float*, int) = nullptr;
  int (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                 const void*, void*, int, int, int, int) = nullptr;
  std::string error;
};

Cublas open_cublas() {
  Cublas c;
  void* lib = nullptr;
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so"})
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib) {
    c.error = std::string("no cuBLAS (") + dlerror() + ")";
    return c;
  }
  c.create = reinterpret_cast<decltype(c.create)>(dlsym(lib, "cublasCreate_v2"));
  c.set_math_mode = reinterpret_cast<decltype(c.set_math_mode)>(dlsym(lib, "cublasSetMathMode"));
  c.sgemm = reinterpret_cast<decltype(c.sgemm)>(dlsym(lib, "cublasSgemm_v2"));
  c.gemm_ex = reinterpret_cast<decltype(c.gemm_ex)>(dlsym(lib, "cublasGemmEx"));
  if (!c.create || !c.set_math_mode || !c.sgemm || !c.gemm_ex) {
    c.error = "cuBLAS lacks an entry point";
    return c;
  }
  if (c.create(&c.handle) != 0) c.error = "cublasCreate failed";
  if (c.error.empty() && c.set_math_mode(c.handle, 0) != 0)
    c.error = "cublasSetMathMode failed";  // DEFAULT: no TF32
  return c;
}

void check(cuda::CUresult r, const char* what) {
  if (r != cuda::CUDA_SUCCESS) throw Error(std::string(what) + " failed: " + cuda::error_name(r));
}

uint16_t to_bf16(float f) {  // exact for values that came from bfloat16
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Row {
  std::string what;
  double lg_s = 0, peer_s = 0, err = 0;
  std::string peer_note;
};

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 4096, reps = 5;
  auto usage = [](const char* argv0, const std::string& why) {
    std::fprintf(why.empty() ? stdout : stderr, "%s%susage: %s [--n N] [--reps R]\n", why.c_str(),
                 why.empty() ? "" : "\n", argv0);
    std::exit(why.empty() ? 0 : 2);
  };
  for (int i = 1; i < argc; i++) {
    bench::Flag f = bench::next_flag(argc, argv, i, usage, {"--n", "--reps"});
    if (f.name == "--n")
      n = bench::int_flag(usage, argv[0], f.name, f.value);
    else if (f.name == "--reps")
      reps = bench::int_flag(usage, argv[0], f.name, f.value);
    else
      usage(argv[0], "unknown argument '" + f.text + "'");
  }
  Device* gpu = nullptr;
  try {
    gpu = &device("CUDA");
  } catch (const Error& e) {
    std::printf("skip: %s\n", e.what());
    return 0;
  }
  set_default_device("CUDA");
  std::printf("%s\n", gpu->info().detail.c_str());
  const cuda::Api& cu = cuda::api();
  Cublas blas = open_cublas();
  std::vector<Row> rows;
  bool bad = false;

  for (DType dt : {kFloat32, kBFloat16}) {
    Row row;
    row.what = "matmul " + std::string(dtype_name(dt)) + " " + std::to_string(n);
    Tensor a = Tensor::rand({n, n}, dt).realize(), b = Tensor::rand({n, n}, dt).realize();
    Tensor c;
    for (int64_t r = -1; r < reps; r++) {
      double t0 = bench::now_s();
      c = a.matmul(b).realize();
      gpu->synchronize();
      if (r >= 0) row.lg_s = r == 0 ? bench::now_s() - t0 : std::min(row.lg_s, bench::now_s() - t0);
    }
    std::vector<float> ours = c.to_vector<float>();
    if (!blas.error.empty()) {
      row.peer_note = blas.error;
      rows.push_back(row);
      continue;
    }
    // cuBLAS on copies of the inputs, in the device's primary context (lazygrad's).
    const size_t elem = dt == kFloat32 ? 4 : 2, bytes = static_cast<size_t>(n * n) * elem;
    auto upload = [&](const Tensor& t) {
      std::vector<float> v = t.to_vector<float>();
      std::vector<uint16_t> h;
      const void* src = v.data();
      if (dt == kBFloat16) {
        for (float x : v) h.push_back(to_bf16(x));
        src = h.data();
      }
      cuda::CUdeviceptr p = 0;
      check(cu.cuMemAlloc(&p, bytes), "cuMemAlloc");
      check(cu.cuMemcpyHtoDAsync(p, src, bytes, nullptr), "cuMemcpyHtoD");
      check(cu.cuCtxSynchronize(), "cuCtxSynchronize");
      return p;
    };
    cuda::CUdeviceptr da = upload(a), db = upload(b), dc = 0;
    check(cu.cuMemAlloc(&dc, bytes), "cuMemAlloc");
    const float one = 1, zero = 0;
    const int m = static_cast<int>(n);
    for (int64_t r = -1; r < reps; r++) {
      check(cu.cuCtxSynchronize(), "cuCtxSynchronize");
      double t0 = bench::now_s();
      // Row-major C = A B is column-major C^T = B^T A^T: B first.
      int status =
          dt == kFloat32
              ? blas.sgemm(blas.handle, 0, 0, m, m, m, &one, reinterpret_cast<const float*>(db), m,
                           reinterpret_cast<const float*>(da), m, &zero, reinterpret_cast<float*>(dc), m)
              : blas.gemm_ex(blas.handle, 0, 0, m, m, m, &one, reinterpret_cast<const void*>(db), 14, m,
                             reinterpret_cast<const void*>(da), 14, m, &zero, reinterpret_cast<void*>(dc), 14,
                             m, 68, -1);  // CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT
      check(cu.cuCtxSynchronize(), "cuCtxSynchronize");
      if (status != 0) throw Error("cuBLAS gemm failed: status " + std::to_string(status));
      if (r >= 0) row.peer_s = r == 0 ? bench::now_s() - t0 : std::min(row.peer_s, bench::now_s() - t0);
    }
    std::vector<float> theirs(static_cast<size_t>(n * n));
    if (dt == kFloat32) {
      check(cu.cuMemcpyDtoHAsync(theirs.data(), dc, bytes, nullptr), "cuMemcpyDtoH");
    } else {
      std::vector<uint16_t> h(static_cast<size_t>(n * n));
      check(cu.cuMemcpyDtoHAsync(h.data(), dc, bytes, nullptr), "cuMemcpyDtoH");
      check(cu.cuCtxSynchronize(), "cuCtxSynchronize");
      for (size_t i = 0; i < h.size(); i++) theirs[i] = from_bf16(h[i]);
    }
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize");
    double scale = 0, diff = 0;
    for (size_t i = 0; i < theirs.size(); i++) {
      scale = std::max(scale, std::fabs(static_cast<double>(theirs[i])));
      diff = std::max(diff, std::fabs(static_cast<double>(theirs[i]) - ours[i]));
    }
    row.err = scale > 0 ? diff / scale : diff;
    bad |= row.err > (dt == kFloat32 ? 1e-4 : 1e-2);
    for (cuda::CUdeviceptr p : {da, db, dc}) cu.cuMemFree(p);
    rows.push_back(row);
  }

  // Bandwidth: lazygrad's elementwise kernel, and the driver's device-to-device copy.
  const int64_t words = (int64_t(1) << 30) / 4;
  Tensor x = Tensor::ones({words}).realize();
  double ew = 0, copy = 0;
  for (int64_t r = -1; r < reps; r++) {
    double t0 = bench::now_s();
    Tensor y = (x + 1).realize();
    gpu->synchronize();
    if (r >= 0) ew = r == 0 ? bench::now_s() - t0 : std::min(ew, bench::now_s() - t0);
  }
  {
    cuda::CUdeviceptr s = 0, d = 0;
    check(cu.cuMemAlloc(&s, size_t(1) << 30), "cuMemAlloc");
    check(cu.cuMemAlloc(&d, size_t(1) << 30), "cuMemAlloc");
    for (int64_t r = -1; r < reps; r++) {
      check(cu.cuCtxSynchronize(), "cuCtxSynchronize");
      double t0 = bench::now_s();
      check(cu.cuMemcpyDtoDAsync(d, s, size_t(1) << 30, nullptr), "cuMemcpyDtoD");
      check(cu.cuCtxSynchronize(), "cuCtxSynchronize");
      if (r >= 0) copy = r == 0 ? bench::now_s() - t0 : std::min(copy, bench::now_s() - t0);
    }
    cu.cuMemFree(s);
    cu.cuMemFree(d);
  }

  std::printf("\n%-22s %14s %14s %8s %10s\n", "", "lazygrad", "cuBLAS", "ratio", "max err");
  for (const Row& r : rows) {
    const double flops = 2.0 * static_cast<double>(n) * n * n;
    if (r.peer_note.empty())
      std::printf("%-22s %9.1f TF/s %9.1f TF/s %8.2f %10.2e\n", r.what.c_str(), flops / r.lg_s * 1e-12,
                  flops / r.peer_s * 1e-12, r.peer_s / r.lg_s, r.err);
    else
      std::printf("%-22s %9.1f TF/s   (cuBLAS: %s)\n", r.what.c_str(), flops / r.lg_s * 1e-12,
                  r.peer_note.c_str());
  }
  std::printf("%-22s %9.0f GB/s %9.0f GB/s %8.2f   (x + 1 over 1 GiB; the driver's cuMemcpyDtoD)\n",
              "bandwidth", 2.0 * (1 << 30) / ew * 1e-9, 2.0 * (1 << 30) / copy * 1e-9, copy / ew);
  if (bad) std::printf("error: lazygrad's product differs from cuBLAS's (max err above)\n");
  return bad ? 1 : 0;
}
