// What an in-process LLVM compile of a CPU kernel costs, against the C path's `cc` process (issue
// 18): kernels taken at random from a kernel cache (LAZYGRAD_CACHE after a cold run), each timed
//   - in process, with LLVM 15 linked in (Debian's libLLVM-15): its IR parsed, optimized at O2
//     (the new pass manager's default<O2>) for the host CPU, compiled to an object in memory, and
//     the object linked into the process by ORC's LLJIT (its own JITDylib: kernels share names)
//     and its entry looked up;
//   - as the CPU device builds one kernel alone: `cc LAZYGRAD_CFLAGS -o k.so k.c -lm`, then dlopen
//     and dlsym.
// The IR stands in for an LLVM IR renderer's, which lazygrad does not have yet: clang-15's -O0 IR of
// the kernel's C (optnone off, the same -march=native, -fwrapv, -ffp-contract=off), made before the
// clock starts. Prints the median and p90 of each and their ratio.
//
//   ./build/bench_llvm_compile CACHE_DIR [--count 64] [--passes default<O2>] [--codegen 2]
//
// --passes: the optimization pipeline (default<O1>, default<O3>, ...); --codegen: the code
// generator's level, 0 to 3 (LLVMCodeGenLevelNone to Aggressive). Neither changes a value: the IR
// has no fast-math flags, and LLVM contracts no a * b + c without them.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"

#ifndef LAZYGRAD_HAVE_LLVM
int main() {
  std::printf("skip: built without LLVM 15 (apt-get install llvm-15-dev, then configure again)\n");
  return 0;
}
#else
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

namespace fs = std::filesystem;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Stats {
  double median, p90;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 9 / 10]};
}

int run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// The phases of one in-process compile, in ms.
struct Phases {
  double parse = 0, optimize = 0, codegen = 0, load = 0;
  double total() const { return parse + optimize + codegen + load; }
};

[[noreturn]] void fail(const std::string& what, char* message) {
  std::fprintf(stderr, "bench_llvm_compile: %s: %s\n", what.c_str(), message ? message : "");
  std::exit(1);
}
void check(LLVMErrorRef e, const std::string& what) {
  if (e) fail(what, LLVMGetErrorMessage(e));
}

// One LLJIT for the process, as a device would hold, and the host's target machine.
struct InProcess {
  LLVMOrcLLJITRef jit = nullptr;
  LLVMTargetMachineRef tm = nullptr;
  std::string triple;

  std::string passes;

  InProcess(std::string pipeline, int codegen_level) : passes(std::move(pipeline)) {
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    char* t = LLVMGetDefaultTargetTriple();
    triple = t;
    LLVMDisposeMessage(t);
    LLVMTargetRef target;
    char* err = nullptr;
    if (LLVMGetTargetFromTriple(triple.c_str(), &target, &err)) fail("target", err);
    char* cpu = LLVMGetHostCPUName();
    char* features = LLVMGetHostCPUFeatures();
    tm = LLVMCreateTargetMachine(target, triple.c_str(), cpu, features,
                                 static_cast<LLVMCodeGenOptLevel>(codegen_level), LLVMRelocPIC,
                                 LLVMCodeModelDefault);
    std::printf("LLVM %d.%d.%d in process, for %s (%s): passes %s, code generator level %d\n",
                LLVM_VERSION_MAJOR, LLVM_VERSION_MINOR, LLVM_VERSION_PATCH, cpu, triple.c_str(),
                passes.c_str(), codegen_level);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    check(LLVMOrcCreateLLJIT(&jit, nullptr), "LLJIT");
  }

  Phases compile(const std::string& ll_file, int index) {
    Phases p;
    auto t0 = std::chrono::steady_clock::now();
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMMemoryBufferRef ir;
    LLVMModuleRef mod;
    char* err = nullptr;
    if (LLVMCreateMemoryBufferWithContentsOfFile(ll_file.c_str(), &ir, &err)) fail(ll_file, err);
    if (LLVMParseIRInContext(ctx, ir, &mod, &err)) fail(ll_file, err);  // takes the buffer
    LLVMSetTarget(mod, triple.c_str());
    p.parse = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    LLVMPassBuilderOptionsRef options = LLVMCreatePassBuilderOptions();
    check(LLVMRunPasses(mod, passes.c_str(), tm, options), passes);
    LLVMDisposePassBuilderOptions(options);
    p.optimize = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    LLVMMemoryBufferRef object;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &object)) fail("codegen", err);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    p.codegen = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    // Its own JITDylib (kernels of one name, r_768, are different kernels), which finds libm's
    // functions in the process.
    LLVMOrcExecutionSessionRef es = LLVMOrcLLJITGetExecutionSession(jit);
    LLVMOrcJITDylibRef jd =
        LLVMOrcExecutionSessionCreateBareJITDylib(es, ("k" + std::to_string(index)).c_str());
    LLVMOrcDefinitionGeneratorRef process;
    check(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&process, LLVMOrcLLJITGetGlobalPrefix(jit),
                                                               nullptr, nullptr),
          "process symbols");
    LLVMOrcJITDylibAddGenerator(jd, process);
    check(LLVMOrcLLJITAddObjectFile(jit, jd, object), "add object");  // takes the buffer
    p.load = ms_since(t0) + lookup(es, jd, entry_name(ll_file));
    return p;
  }

  // The entry's address, looked up (and so linked) in jd; returns the ms it took.
  double lookup(LLVMOrcExecutionSessionRef es, LLVMOrcJITDylibRef jd, const std::string& name) {
    auto t0 = std::chrono::steady_clock::now();
    LLVMOrcCJITDylibSearchOrderElement order{jd, LLVMOrcJITDylibLookupFlagsMatchAllSymbols};
    LLVMOrcCLookupSetElement symbol{LLVMOrcLLJITMangleAndIntern(jit, name.c_str()),
                                    LLVMOrcSymbolLookupFlagsRequiredSymbol};
    struct Result {
      bool done = false;
      LLVMOrcJITTargetAddress address = 0;
      std::string error;
    } result;
    LLVMOrcExecutionSessionLookup(
        es, LLVMOrcLookupKindStatic, &order, 1, &symbol, 1,
        [](LLVMErrorRef e, LLVMOrcCSymbolMapPairs found, size_t n, void* ctx) {
          auto* r = static_cast<Result*>(ctx);
          if (e) {
            char* m = LLVMGetErrorMessage(e);
            r->error = m;
            LLVMDisposeErrorMessage(m);
          } else if (n == 1) {
            r->address = found[0].Sym.Address;
          }
          r->done = true;
        },
        &result);
    // LLJIT without compile threads materializes on this thread: the answer is in on return.
    if (!result.done || !result.address) fail("lookup " + name, result.error.data());
    return ms_since(t0);
  }

  // The kernel's C names `<name>_entry`; the file is `<name>-<key>.ll`.
  static std::string entry_name(const std::string& ll_file) {
    std::string stem = fs::path(ll_file).stem().string();
    return stem.substr(0, stem.rfind('-')) + "_entry";
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string cache;
  int count = 64, codegen = 2;
  std::string passes = "default<O2>";
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--count" && i + 1 < argc)
      count = std::atoi(argv[++i]);
    else if (a == "--passes" && i + 1 < argc)
      passes = argv[++i];
    else if (a == "--codegen" && i + 1 < argc)
      codegen = std::clamp(std::atoi(argv[++i]), 0, 3);
    else if (a.rfind("--", 0) != 0)
      cache = a;
  }
  if (cache.empty() || !fs::is_directory(cache)) {
    std::fprintf(
        stderr,
        "usage: bench_llvm_compile CACHE_DIR [--count N] [--passes PIPELINE] [--codegen 0-3] (a kernel cache "
        "after a cold run)\n");
    return 2;
  }
  std::vector<std::string> kernels;
  for (const auto& e : fs::directory_iterator(cache)) {
    const std::string f = e.path().string();
    if (e.path().extension() == ".c" && e.path().filename().string().rfind("batch-", 0) != 0)
      kernels.push_back(f);
  }
  std::sort(kernels.begin(), kernels.end());
  std::shuffle(kernels.begin(), kernels.end(), std::mt19937(0));
  if (static_cast<int>(kernels.size()) > count) kernels.resize(count);
  if (kernels.empty()) {
    std::fprintf(stderr, "bench_llvm_compile: no kernel sources (*.c) in %s\n", cache.c_str());
    return 2;
  }
  const std::string cc = std::getenv("CC") ? std::getenv("CC") : "cc";
  const std::string cflags = "-O2 -march=native -fPIC -shared -fwrapv -fno-math-errno -ffp-contract=off";
  const fs::path tmp = fs::temp_directory_path() / ("bench_llvm_compile." + std::to_string(getpid()));
  fs::create_directories(tmp);
  std::printf("%s\n", bench::cpu_model().c_str());

  InProcess llvm(passes, codegen);
  std::vector<Phases> in_process;
  std::vector<double> c_path;
  for (size_t i = 0; i < kernels.size(); i++) {
    const std::string& c = kernels[i];
    const std::string ll = (tmp / (fs::path(c).stem().string() + ".ll")).string();
    if (run("clang-15 -O0 -Xclang -disable-O0-optnone -S -emit-llvm -march=native -fPIC -fwrapv "
            "-fno-math-errno -ffp-contract=off -o " +
            bench::shell_quote(ll) + " " + bench::shell_quote(c)) != 0) {
      std::fprintf(stderr, "bench_llvm_compile: clang-15 could not compile %s\n", c.c_str());
      return 1;
    }
    in_process.push_back(llvm.compile(ll, static_cast<int>(i)));
    // The C path, one kernel alone: the compiler process (with its link), then dlopen.
    const std::string so = (tmp / ("k" + std::to_string(i) + ".so")).string();
    auto t0 = std::chrono::steady_clock::now();
    if (run(cc + " " + cflags + " -o " + bench::shell_quote(so) + " " + bench::shell_quote(c) + " -lm") !=
        0) {
      std::fprintf(stderr, "bench_llvm_compile: %s could not compile %s\n", cc.c_str(), c.c_str());
      return 1;
    }
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h || !dlsym(h, InProcess::entry_name(ll).c_str())) {
      std::fprintf(stderr, "bench_llvm_compile: %s did not load\n", so.c_str());
      return 1;
    }
    c_path.push_back(ms_since(t0));
    dlclose(h);
  }
  fs::remove_all(tmp);

  auto column = [&](double Phases::*phase) {
    std::vector<double> v;
    for (const Phases& p : in_process) v.push_back(p.*phase);
    return stats(v).median;
  };
  std::vector<double> totals;
  for (const Phases& p : in_process) totals.push_back(p.total());
  const Stats llvm_ms = stats(totals), c_ms = stats(c_path);
  std::printf("%zu kernels from %s, one at a time\n", kernels.size(), cache.c_str());
  std::printf(
      "in-process LLVM   median %6.2f ms  p90 %6.2f ms  (median parse %.2f, passes %.2f, codegen %.2f, load "
      "%.2f)\n",
      llvm_ms.median, llvm_ms.p90, column(&Phases::parse), column(&Phases::optimize),
      column(&Phases::codegen), column(&Phases::load));
  std::printf("%-17s median %6.2f ms  p90 %6.2f ms  (%s, then dlopen)\n", cc.c_str(), c_ms.median, c_ms.p90,
              cflags.c_str());
  std::printf("ratio (C path over in-process LLVM, medians): %.1fx\n", c_ms.median / llvm_ms.median);
  return 0;
}
#endif
