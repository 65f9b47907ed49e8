// A model of the CPU the kernels run on: what the optimizer needs to choose register tiles and
// cache blocking (docs/optimizer.md, "The machine model"). The numbers come from CPUID, a table of
// known cores and sysfs, never from a timing: a choice must not depend on the load of the moment.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lazygrad {

struct CpuModel {
  std::string kind;              // the table's row: "skylake-x", "zen4", ... ("generic" when unknown)
  std::string name;              // /proc/cpuinfo's model name (the kind's own name for a fake one)
  int64_t vector_bytes = 64;     // the widest vector the core computes with: 64 AVX-512, 32 AVX2
  int vector_registers = 32;     // architectural vector registers: 32 with AVX-512, else 16
  int fmas_per_cycle = 2;        // full-width vector FMAs issued per cycle (Zen 4: 1, 512 bits as 2 x 256)
  int fma_latency = 4;           // cycles from an FMA to the next FMA that reads its result
  int loads_per_cycle = 2;       // full-width vector loads per cycle
  int64_t l1d_bytes = 32 << 10;  // per core
  int64_t l2_bytes = 1 << 20;    // per core
  int64_t l3_bytes = 32 << 20;   // shared

  // Independent accumulators that keep every FMA pipe busy: each pipe starts one FMA a cycle, and
  // an accumulator can take its next FMA only `fma_latency` cycles after its last.
  int accumulators_needed() const { return fma_latency * fmas_per_cycle; }
  std::string describe() const;  // one line for `lazygrad info` and the benches
};

// The machine this process runs on (CPUID, the table, sysfs), or the known kind LAZYGRAD_CPU names
// (to reproduce another machine's kernels: an unknown name is an Error listing the known ones).
const CpuModel& host_cpu();

// A known kind with its table values and typical caches: tests pin each kind's tiles with these.
CpuModel known_cpu(std::string_view kind);
std::vector<std::string> known_cpu_kinds();

// What CPUID says of an x86 core's vector units: AVX-512 and AVX2 as the OS enables them (it saves
// their registers), AMX-TILE as the core has it (only Intel's server cores do, from Sapphire Rapids).
struct X86Features {
  bool avx512f = false;
  bool avx2 = false;
  bool amx_tile = false;
};

// The row of the table for an x86 core (vendor from CPUID, family and model as CPUID reports them
// with their extended fields added, and its features), without caches.
CpuModel classify_x86(std::string_view vendor, int family, int model, X86Features features,
                      std::string_view model_name);

}  // namespace lazygrad
