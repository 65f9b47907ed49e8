// The CPU model: a table of known cores (vector width, registers, FMA pipes and latency, load ports,
// typical caches), the row CPUID picks, and the caches sysfs reports.
#include "codegen/cpu_model.h"

#include <array>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "lazygrad/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace lazygrad {

namespace {

constexpr int64_t KiB = 1024, MiB = 1024 * 1024;

// Per-core figures from the vendors' optimization manuals and uops.info; caches as on the cloud
// machines these kinds are usually rented as (sysfs replaces them on a real machine).
// Zen 4 decodes a 512-bit FMA into two halves on its two 256-bit pipes (one 512-bit FMA a cycle)
// and loads two 256-bit halves a cycle; the Xeons have two full-width FMA units (ports 0+1 and 5).
// Xeon Silver and Bronze of the Skylake generation have one (classify_x86).
struct Row {
  const char* kind;
  const char* name;
  int64_t vector_bytes;
  int registers, fmas, latency, loads;
  int64_t l1d, l2, l3;
};
constexpr std::array kTable{
    Row{"skylake-x", "Intel Xeon (Skylake-SP, Cascade Lake)", 64, 32, 2, 4, 2, 32 * KiB, 1 * MiB, 32 * MiB},
    Row{"icelake-x", "Intel Xeon (Ice Lake-SP)", 64, 32, 2, 4, 2, 48 * KiB, 1280 * KiB, 48 * MiB},
    Row{"sapphire-rapids", "Intel Xeon (Sapphire, Emerald, Granite Rapids)", 64, 32, 2, 4, 2, 48 * KiB,
        2 * MiB, 96 * MiB},
    Row{"icelake", "Intel Core (Ice Lake, Tiger Lake, Rocket Lake)", 64, 32, 1, 4, 2, 48 * KiB, 512 * KiB,
        8 * MiB},
    Row{"skylake", "Intel Core (Skylake to Raptor Lake, AVX2)", 32, 16, 2, 4, 2, 32 * KiB, 256 * KiB,
        8 * MiB},
    Row{"haswell", "Intel (Haswell, Broadwell)", 32, 16, 2, 5, 2, 32 * KiB, 256 * KiB, 8 * MiB},
    Row{"zen4", "AMD EPYC (Zen 4)", 64, 32, 1, 4, 1, 32 * KiB, 1 * MiB, 32 * MiB},
    Row{"zen5", "AMD EPYC (Zen 5)", 64, 32, 2, 4, 2, 48 * KiB, 1 * MiB, 32 * MiB},
    Row{"zen3", "AMD EPYC (Zen 3)", 32, 16, 2, 4, 2, 32 * KiB, 512 * KiB, 32 * MiB},
    Row{"zen2", "AMD EPYC (Zen 2)", 32, 16, 2, 5, 2, 32 * KiB, 512 * KiB, 16 * MiB},
    Row{"generic-avx512", "an x86 core with AVX-512", 64, 32, 2, 4, 2, 32 * KiB, 1 * MiB, 16 * MiB},
    Row{"generic-avx2", "an x86 core with AVX2", 32, 16, 2, 4, 2, 32 * KiB, 256 * KiB, 8 * MiB},
    Row{"generic", "a core with 128-bit vectors", 16, 16, 2, 4, 2, 32 * KiB, 256 * KiB, 8 * MiB},
};

CpuModel from_row(const Row& r) {
  CpuModel m;
  m.kind = r.kind;
  m.name = r.name;
  m.vector_bytes = r.vector_bytes;
  m.vector_registers = r.registers;
  m.fmas_per_cycle = r.fmas;
  m.fma_latency = r.latency;
  m.loads_per_cycle = r.loads;
  m.l1d_bytes = r.l1d;
  m.l2_bytes = r.l2;
  m.l3_bytes = r.l3;
  return m;
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// "32K", "1024K", "32M" -> bytes (0 when unreadable).
int64_t parse_size(const std::string& s) {
  if (s.empty()) return 0;
  char* end = nullptr;
  const long long n = std::strtoll(s.c_str(), &end, 10);
  if (n <= 0) return 0;
  const char unit = end ? *end : '\0';
  return unit == 'K' ? n * KiB : unit == 'M' ? n * MiB : unit == 'G' ? n * 1024 * MiB : n;
}

// The data and unified caches of cpu0 from sysfs, where the kernel exposes them.
void read_caches(CpuModel& m) {
  for (int i = 0; i < 8; i++) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = read_line(dir + "level"), type = read_line(dir + "type");
    const int64_t size = parse_size(read_line(dir + "size"));
    if (level.empty() || size == 0 || type == "Instruction") continue;
    if (level == "1") m.l1d_bytes = size;
    if (level == "2") m.l2_bytes = size;
    if (level == "3") m.l3_bytes = size;
  }
}

std::string model_name() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? "" : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "";
}

CpuModel detect() {
  const std::string name = model_name();
  CpuModel m = known_cpu("generic");
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  std::array<char, 13> vendor{};
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    __builtin_memcpy(vendor.data(), &b, 4);
    __builtin_memcpy(vendor.data() + 4, &d, 4);
    __builtin_memcpy(vendor.data() + 8, &c, 4);
  }
  int family = 0, model = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    family = static_cast<int>((a >> 8) & 0xf);
    model = static_cast<int>((a >> 4) & 0xf);
    if (family == 0xf) family += static_cast<int>((a >> 20) & 0xff);
    if (family == 0x6 || family >= 0xf) model += static_cast<int>(((a >> 16) & 0xf) << 4);
  }
  // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
  __builtin_cpu_init();
  X86Features features{.avx512f = __builtin_cpu_supports("avx512f") != 0,
                       .avx2 = __builtin_cpu_supports("avx2") != 0};
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) features.amx_tile = (d >> 24) & 1;  // CPUID.7.0:EDX[24]
  m = classify_x86(vendor.data(), family, model, features, name);
#endif
  if (!name.empty()) m.name = name;
  read_caches(m);
  return m;
}

}  // namespace

CpuModel classify_x86(std::string_view vendor, int family, int model, X86Features features,
                      std::string_view model_name) {
  const bool avx512f = features.avx512f, avx2 = features.avx2;
  std::string kind = avx512f ? "generic-avx512" : avx2 ? "generic-avx2" : "generic";
  auto is_one_of = [&](std::initializer_list<int> models) {
    for (int x : models)
      if (x == model) return true;
    return false;
  };
  if (vendor == "GenuineIntel" && family == 6) {
    if (model == 0x55)
      kind = "skylake-x";
    else if (is_one_of({0x6a, 0x6c}))
      kind = "icelake-x";
    else if (is_one_of({0x8f, 0xcf, 0xad, 0xae}))
      kind = "sapphire-rapids";
    else if (is_one_of({0x7d, 0x7e, 0x8c, 0x8d, 0xa7}))
      kind = "icelake";
    else if (is_one_of({0x3c, 0x3f, 0x45, 0x46, 0x3d, 0x47, 0x4f, 0x56}))
      kind = "haswell";
    else if (avx2)
      kind = "skylake";
    // A hypervisor may report a server core under a client's model number (a Xeon with AMX and a
    // 480 MiB L3 seen here as model 0xa7, Rocket Lake's: one FMA unit, where the Xeon has two).
    // AMX is on Intel's server cores alone, from Sapphire Rapids on.
    if (features.amx_tile && avx512f) kind = "sapphire-rapids";
  } else if (vendor == "AuthenticAMD") {
    if (family == 0x17)
      kind = "zen2";
    else if (family == 0x19)
      kind = avx512f ? "zen4" : "zen3";
    else if (family == 0x1a)
      kind = "zen5";
  }
  CpuModel m = known_cpu(kind);
  m.name = std::string(model_name);
  // Skylake-SP's Silver and Bronze parts have one 512-bit FMA unit, not two.
  if (kind == "skylake-x" && (model_name.find("Silver") != std::string_view::npos ||
                              model_name.find("Bronze") != std::string_view::npos))
    m.fmas_per_cycle = 1;
  // A core whose AVX-512 the OS (or the hypervisor) hides computes with AVX2: two 256-bit pipes.
  if (m.vector_bytes == 64 && !avx512f) {
    m.vector_bytes = avx2 ? 32 : 16;
    m.vector_registers = 16;
    m.fmas_per_cycle = 2;
    m.loads_per_cycle = 2;
  }
  if (m.vector_bytes == 32 && !avx2) m.vector_bytes = 16;
  return m;
}

CpuModel known_cpu(std::string_view kind) {
  for (const Row& r : kTable)
    if (kind == r.kind) return from_row(r);
  std::string known;
  for (const Row& r : kTable) known += std::string(known.empty() ? "" : ", ") + r.kind;
  throw ValueError("unknown CPU kind '" + std::string(kind) + "' (LAZYGRAD_CPU): known kinds are " + known);
}

std::vector<std::string> known_cpu_kinds() {
  std::vector<std::string> out;
  for (const Row& r : kTable) out.emplace_back(r.kind);
  return out;
}

const CpuModel& host_cpu() {
  static const CpuModel m = [] {
    const char* forced = std::getenv("LAZYGRAD_CPU");
    return forced && *forced ? known_cpu(forced) : detect();
  }();
  return m;
}

std::string CpuModel::describe() const {
  auto bytes = [](int64_t n) {
    return n % MiB == 0 ? std::to_string(n / MiB) + " MiB" : std::to_string(n / KiB) + " KiB";
  };
  std::ostringstream s;
  s << name << " [" << kind << "]: " << vector_bytes * 8 << "-bit vectors, " << vector_registers
    << " registers, " << fmas_per_cycle << " FMA/cycle (latency " << fma_latency << "), " << loads_per_cycle
    << " loads/cycle, L1d " << bytes(l1d_bytes) << ", L2 " << bytes(l2_bytes) << ", L3 " << bytes(l3_bytes);
  return s.str();
}

}  // namespace lazygrad
