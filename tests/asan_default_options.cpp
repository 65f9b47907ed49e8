// The sanitizer build's ASan and LSan settings, compiled into each of its programs (CMakeLists.txt). ASan
// aborts on an allocation larger than it supports, where malloc returns NULL for one larger than
// the machine has: the tests that memory the machine will not give is an Error need malloc's answer.
// ASAN_OPTIONS in the environment still adds to these or overrides them.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

// LeakSanitizer's suppressions: what the OpenCL runtime (the ICD loader, PoCL and the LLVM it
// compiles with) and NVRTC (test_tensor_cores compiles with it) allocate for the process and never
// free is not lazygrad's leak; the `cl` suites run in this build too, on PoCL. LSan drops a leak when any frame of its allocation's stack matches,
// so these name only the runtime's own libraries: memory our code allocates is still checked.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libpocl.so\nleak:libOpenCL.so\nleak:libLLVM\nleak:libnvrtc\n";
}
