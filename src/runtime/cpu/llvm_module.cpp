// liblazygrad_llvm.so: the CPU's in-process compiler, clang's front end and LLVM 19's back end as
// libraries, ORC's JIT linker for the objects. lazygrad opens it at run time (llvm_compiler.cpp;
// llvm_module.h says why it is a module of its own). Not LLVM 15, Debian 12's default: its BDCE
// miscompiled an AVX-512 lane mask (the compiler fuzzer's seed 226968: docs/testing.md), which
// LLVM 19 compiles right. Built only where CMake found LLVM 19.
#include "runtime/cpu/llvm_module.h"

#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Basic/Version.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

// Bytes the caller frees with free().
char* malloc_copy(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// The host, as LLVM sees it: what kernels are compiled for (the C path's -march=native).
struct Host {
  std::string triple, cpu;
  std::vector<std::string> features;  // "+avx512f", ... (the enabled ones)
};
const Host& host() {
  static const Host h = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    Host h;
    h.triple = llvm::sys::getDefaultTargetTriple();
    h.cpu = llvm::sys::getHostCPUName().str();
    const auto features = llvm::sys::getHostCPUFeatures();
    for (const auto& f : features)
      // LLVM 19 reports AVX10.1's 256-bit form without its 512-bit one on these Xeons, then warns
      // that the pair is invalid and promotes it; the AVX-512 features it stands for are in the list.
      if (f.second && !(f.first() == "avx10.1-256" && !features.lookup("avx10.1-512")))
        h.features.push_back("+" + f.first().str());
    return h;
  }();
  return h;
}

// <math.h> and <stdint.h> as the kernels use them (the renderers' output: libm's float and double
// functions, the fixed-width integers), from memory: parsing the system's headers was 9 of a
// kernel's 22 ms. The functions are the process's libm, found when the object is linked in.
constexpr const char* kMathH = R"(#pragma once
#define LG_MATH1(name) float name##f(float); double name(double);
LG_MATH1(sqrt) LG_MATH1(exp) LG_MATH1(exp2) LG_MATH1(log) LG_MATH1(log2) LG_MATH1(sin) LG_MATH1(cos)
LG_MATH1(tan) LG_MATH1(tanh) LG_MATH1(atan) LG_MATH1(fabs) LG_MATH1(floor) LG_MATH1(ceil) LG_MATH1(trunc)
LG_MATH1(round) LG_MATH1(rint) LG_MATH1(nearbyint) LG_MATH1(expm1) LG_MATH1(log1p) LG_MATH1(erf)
float fmaf(float, float, float); double fma(double, double, double);
float fmodf(float, float); double fmod(double, double); float powf(float, float); double pow(double, double);
#undef LG_MATH1
)";
constexpr const char* kStdintH = R"(#pragma once
typedef signed char int8_t; typedef unsigned char uint8_t; typedef short int16_t; typedef unsigned short uint16_t;
typedef int int32_t; typedef unsigned int uint32_t; typedef long int64_t; typedef unsigned long uint64_t;
typedef unsigned long uintptr_t; typedef long intptr_t;
)";
constexpr const char* kIncludeDir = "/lazygrad-in-process/include";

// ORC's JIT for the process: each object in a library of its own, which finds the process's symbols
// (libm, malloc) too. Never destroyed: programs held by lazygrad's statics (realize's cache of
// compiled kernels) unload their objects at exit, after this function's statics would have gone.
llvm::orc::LLJIT& jit() {
  static llvm::orc::LLJIT* const j = [] {
    host();
    auto made = llvm::orc::LLJITBuilder().create();
    if (!made) throw std::runtime_error("ORC's LLJIT: " + llvm::toString(made.takeError()));
    return made->release();
  }();
  return *j;
}

std::string compile(const std::string& source, const std::string& file) {
  const Host& h = host();
  auto files = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  const std::string main_file = std::string("/lazygrad-in-process/") + file;
  files->addFile(main_file, 0, llvm::MemoryBuffer::getMemBufferCopy(source));
  files->addFile(std::string(kIncludeDir) + "/math.h", 0, llvm::MemoryBuffer::getMemBuffer(kMathH));
  files->addFile(std::string(kIncludeDir) + "/stdint.h", 0, llvm::MemoryBuffer::getMemBuffer(kStdintH));

  // What `clang -O2 -march=native -fPIC -fwrapv -fno-math-errno -ffp-contract=off
  // -mprefer-vector-width=512 -c` runs (clang -###), with the headers above for the system's, no
  // SLP vectorizer (as the C path's GCC pragma: docs/devices.md) and no warnings (generated code
  // warns about what it means, as the C path's are never shown).
  std::vector<std::string> args = {"-triple",
                                   h.triple,
                                   "-emit-obj",
                                   "-mrelocation-model",
                                   "pic",
                                   "-pic-level",
                                   "2",
                                   "-mframe-pointer=none",
                                   "-ffp-contract=off",
                                   "-fno-rounding-math",
                                   "-target-cpu",
                                   h.cpu};
  for (const std::string& f : h.features) args.insert(args.end(), {"-target-feature", f});
  args.insert(args.end(), {"-O2", "-fwrapv", "-fgnuc-version=4.2.1", "-vectorize-loops",
                           "-mprefer-vector-width=512", "-w", "-ferror-limit", "19", "-nostdsysteminc",
                           "-internal-isystem", kIncludeDir, "-x", "c", main_file});
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  std::string diagnostics;
  llvm::raw_string_ostream diag_out(diagnostics);
  clang::CompilerInstance ci;
  auto diag_options = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  ci.createDiagnostics(new clang::TextDiagnosticPrinter(diag_out, diag_options.get()), true);
  ci.setVerboseOutputStream(diag_out);  // "N errors generated." there too, not on the process's stderr
  if (!clang::CompilerInvocation::CreateFromArgs(ci.getInvocation(), argv, ci.getDiagnostics()))
    throw std::runtime_error("clang (in process) refused its arguments:\n" + diagnostics);
  ci.createFileManager(files);
  llvm::SmallVector<char, 0> object;
  ci.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(object));
  llvm::LLVMContext context;
  clang::EmitObjAction action(&context);
  if (!ci.ExecuteAction(action) || object.empty())
    throw std::runtime_error("clang (in process) failed on " + file + ":\n" + diagnostics);
  return std::string(object.data(), object.size());
}

int compile_entry(const char* source, size_t source_size, const char* file, char** object,
                  size_t* object_size, char** error) {
  try {
    const std::string o = compile(std::string(source, source_size), file);
    *object = static_cast<char*>(std::malloc(o.size()));
    if (!*object) throw std::bad_alloc();
    std::memcpy(*object, o.data(), o.size());
    *object_size = o.size();
    return 0;
  } catch (const std::exception& e) {
    *error = malloc_copy(e.what());
    return 1;
  }
}

// A loaded object: its JIT library, removed again by unload.
struct Loaded {
  llvm::orc::JITDylib* library;
};

void unload_entry(void* loaded) {
  auto* l = static_cast<Loaded*>(loaded);
  if (llvm::Error e = jit().getExecutionSession().removeJITDylib(*l->library))
    llvm::consumeError(std::move(e));
  delete l;
}

void* load_entry(const char* object, size_t object_size, const char* name, char** error) {
  static std::atomic<uint64_t> count{0};
  try {
    auto& es = jit().getExecutionSession();
    auto jd = es.createJITDylib(std::string(name) + "#" + std::to_string(count++));
    if (!jd) throw std::runtime_error(llvm::toString(jd.takeError()));
    auto* loaded = new Loaded{&*jd};
    std::string why;
    auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit().getDataLayout().getGlobalPrefix());
    if (!process) {
      why = llvm::toString(process.takeError());
    } else {
      jd->addGenerator(std::move(*process));
      if (llvm::Error e = jit().addObjectFile(
              *jd, llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object, object_size), name)))
        why = llvm::toString(std::move(e));
    }
    if (why.empty()) return loaded;
    unload_entry(loaded);
    throw std::runtime_error(why);
  } catch (const std::exception& e) {
    *error = malloc_copy(e.what());
    return nullptr;
  }
}

void* find_entry(void* loaded, const char* symbol) {
  auto address = jit().lookup(*static_cast<Loaded*>(loaded)->library, symbol);
  if (!address) {
    llvm::consumeError(address.takeError());
    return nullptr;
  }
  return address->toPtr<void*>();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const LazygradLlvmModule* lazygrad_llvm_module() {
  // Part of every kernel's cache key: made once.
  static const std::string description =
      "clang " CLANG_VERSION_STRING " and LLVM " LLVM_VERSION_STRING ", in process, for " + host().cpu;
  static const LazygradLlvmModule module{kLlvmModuleVersion, description.c_str(), compile_entry,
                                         load_entry,         find_entry,          unload_entry};
  return &module;
}
