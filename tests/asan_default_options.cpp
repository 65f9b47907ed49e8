// The sanitizer build's ASan settings, compiled into each of its programs (CMakeLists.txt). ASan
// aborts on an allocation larger than it supports, where malloc returns NULL for one larger than
// the machine has: the tests that memory the machine will not give is an Error need malloc's answer.
// ASAN_OPTIONS in the environment still adds to these or overrides them.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
