// The CPU's in-process compiler: clang's front end and LLVM's back end as libraries, ORC's JIT
// linker for the objects. Built where CMake found LLVM 15 (LAZYGRAD_HAVE_LLVM); elsewhere the same
// functions say it is absent.
#include "runtime/cpu/llvm_compiler.h"

#include "lazygrad/error.h"

#ifdef LAZYGRAD_HAVE_LLVM
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
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/VirtualFileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <vector>
#endif

namespace lazygrad {

#ifndef LAZYGRAD_HAVE_LLVM

bool llvm_compiler_built() { return false; }
std::string llvm_compiler_description() {
  return "not built: LLVM 15 was not found when lazygrad was configured (apt-get install llvm-15-dev "
         "libclang-cpp15-dev, then configure again)";
}
std::string compile_c_in_process(const std::string&, const std::string&) {
  throw Error("compile: LAZYGRAD_CPU_COMPILER=llvm: " + llvm_compiler_description());
}
std::unique_ptr<JitObject> load_object(const std::string&, const std::string&, std::string* why) {
  if (why) *why = llvm_compiler_description();
  return nullptr;
}
int64_t jit_objects_loaded() { return 0; }

#else

namespace {

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
    llvm::StringMap<bool> features;
    if (llvm::sys::getHostCPUFeatures(features))
      for (const auto& f : features)
        if (f.second) h.features.push_back("+" + f.first().str());
    return h;
  }();
  return h;
}

// <math.h> and <stdint.h> as the kernels use them (the renderers' output: libm's float and double
// functions, the fixed-width integers), from memory: parsing the system's headers was 9 of a
// kernel's 22 ms. The functions are the process's libm, found when the object is linked in.
constexpr const char* kMathH = R"(#pragma once
#define LG_MATH1(f) float f##f(float); double f(double);
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
// (libm, malloc) too. Never destroyed: programs held by other statics (realize's cache of compiled
// kernels) unload their objects at exit, after this function's statics would have gone.
llvm::orc::LLJIT& jit() {
  static llvm::orc::LLJIT* const j = [] {
    host();
    auto made = llvm::orc::LLJITBuilder().create();
    if (!made) throw Error("compile: ORC's LLJIT: " + llvm::toString(made.takeError()));
    return made->release();
  }();
  return *j;
}

std::atomic<int64_t> loaded_count{0};

class LoadedObject : public JitObject {
 public:
  explicit LoadedObject(llvm::orc::JITDylib& jd) : jd_(jd) { loaded_count++; }
  ~LoadedObject() override {
    if (llvm::Error e = jit().getExecutionSession().removeJITDylib(jd_)) llvm::consumeError(std::move(e));
    loaded_count--;
  }
  void* find(const std::string& symbol) override {
    auto address = jit().lookup(jd_, symbol);
    if (!address) {
      llvm::consumeError(address.takeError());
      return nullptr;
    }
    return address->toPtr<void*>();
  }

 private:
  llvm::orc::JITDylib& jd_;
};

}  // namespace

bool llvm_compiler_built() { return true; }
int64_t jit_objects_loaded() { return loaded_count; }

std::string llvm_compiler_description() {
  // Part of every kernel's cache key: made once.
  static const std::string d =
      "clang " CLANG_VERSION_STRING " and LLVM " LLVM_VERSION_STRING ", in process, for " + host().cpu;
  return d;
}

std::string compile_c_in_process(const std::string& source, const std::string& file) {
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
    throw Error("compile: clang (in process) refused its arguments:\n" + diagnostics);
  ci.createFileManager(files);
  llvm::SmallVector<char, 0> object;
  ci.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(object));
  llvm::LLVMContext context;
  clang::EmitObjAction action(&context);
  if (!ci.ExecuteAction(action) || object.empty())
    throw Error("compile: clang (in process) failed on " + file + ":\n" + diagnostics + "\n--- source ---\n" +
                source);
  return std::string(object.data(), object.size());
}

std::unique_ptr<JitObject> load_object(const std::string& object, const std::string& name, std::string* why) {
  static std::atomic<uint64_t> count{0};
  auto& es = jit().getExecutionSession();
  auto jd = es.createJITDylib(name + "#" + std::to_string(count++));
  if (!jd) {
    if (why) *why = llvm::toString(jd.takeError());
    return nullptr;
  }
  auto loaded = std::make_unique<LoadedObject>(*jd);  // removes the library again on any failure below
  auto process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit().getDataLayout().getGlobalPrefix());
  if (!process) {
    if (why) *why = llvm::toString(process.takeError());
    return nullptr;
  }
  jd->addGenerator(std::move(*process));
  if (llvm::Error e = jit().addObjectFile(*jd, llvm::MemoryBuffer::getMemBufferCopy(object, name))) {
    if (why) *why = llvm::toString(std::move(e));
    return nullptr;
  }
  return loaded;
}

#endif

}  // namespace lazygrad
