// The CPU model the optimizer's register tiles and blocking come from: CPUID signatures map to the
// table's kinds, a hidden AVX-512 falls back to AVX2, the host's description is sane, and
// LAZYGRAD_CPU's unknown names are refused with the known ones listed.
#include <gtest/gtest.h>

#include "codegen/cpu_model.h"
#include "lazygrad/error.h"

using namespace lazygrad;

TEST(CpuModel, CpuidSignaturesPickTheirRow) {
  CpuModel skx = classify_x86("GenuineIntel", 6, 0x55, {.avx512f = true, .avx2 = true},
                              "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz");
  EXPECT_EQ(skx.kind, "skylake-x");
  EXPECT_EQ(skx.vector_bytes, 64);
  EXPECT_EQ(skx.fmas_per_cycle, 2);
  EXPECT_EQ(skx.accumulators_needed(), 8);  // 4 cycles of latency on 2 pipes
  EXPECT_EQ(skx.name, "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz");
  // Skylake-SP's Silver and Bronze parts have one 512-bit FMA unit.
  EXPECT_EQ(
      classify_x86("GenuineIntel", 6, 0x55, {.avx512f = true, .avx2 = true}, "Intel(R) Xeon(R) Silver 4114")
          .fmas_per_cycle,
      1);
  EXPECT_EQ(classify_x86("GenuineIntel", 6, 0x6a, {.avx512f = true, .avx2 = true}, "").kind, "icelake-x");
  EXPECT_EQ(classify_x86("GenuineIntel", 6, 0x8f, {.avx512f = true, .avx2 = true}, "").kind,
            "sapphire-rapids");
  EXPECT_EQ(classify_x86("GenuineIntel", 6, 0x3f, {.avx2 = true}, "").kind, "haswell");
  CpuModel zen4 = classify_x86("AuthenticAMD", 0x19, 0x11, {.avx512f = true, .avx2 = true}, "AMD EPYC 9R14");
  EXPECT_EQ(zen4.kind, "zen4");
  EXPECT_EQ(zen4.fmas_per_cycle, 1);  // 512 bits as two 256-bit halves
  EXPECT_EQ(zen4.accumulators_needed(), 4);
  EXPECT_EQ(classify_x86("AuthenticAMD", 0x19, 0x01, {.avx2 = true}, "").kind, "zen3");
  EXPECT_EQ(classify_x86("AuthenticAMD", 0x1a, 0x02, {.avx512f = true, .avx2 = true}, "").kind, "zen5");
  // A Xeon with AMX that the hypervisor reports as Rocket Lake (model 0xa7) is a server core.
  CpuModel spr = classify_x86("GenuineIntel", 6, 0xa7, {.avx512f = true, .avx2 = true, .amx_tile = true},
                              "Intel(R) Xeon(R) Processor");
  EXPECT_EQ(spr.kind, "sapphire-rapids");
  EXPECT_EQ(spr.fmas_per_cycle, 2);
  EXPECT_EQ(classify_x86("GenuineIntel", 6, 0xa7, {.avx512f = true, .avx2 = true}, "").kind, "icelake");
  EXPECT_EQ(classify_x86("HygonGenuine", 0x18, 0, {.avx2 = true}, "").kind, "generic-avx2");
}

TEST(CpuModel, HiddenAvx512ComputesWithAvx2) {
  // A hypervisor that hides AVX-512 from a Xeon: 256-bit vectors, 16 registers.
  CpuModel m = classify_x86("GenuineIntel", 6, 0x55, {.avx2 = true}, "");
  EXPECT_EQ(m.vector_bytes, 32);
  EXPECT_EQ(m.vector_registers, 16);
  EXPECT_EQ(classify_x86("GenuineIntel", 6, 0x55, {}, "").vector_bytes, 16);
}

TEST(CpuModel, HostIsDescribed) {
  const CpuModel& m = host_cpu();
  EXPECT_TRUE(m.vector_bytes == 16 || m.vector_bytes == 32 || m.vector_bytes == 64) << m.describe();
  EXPECT_GE(m.vector_registers, 16);
  EXPECT_GE(m.fmas_per_cycle, 1);
  EXPECT_GT(m.l1d_bytes, 0);
  EXPECT_GT(m.l2_bytes, m.l1d_bytes);
  EXPECT_NE(m.describe().find(m.kind), std::string::npos);
}

TEST(CpuModel, KnownKindsAndUnknownNames) {
  for (const std::string& kind : known_cpu_kinds()) EXPECT_EQ(known_cpu(kind).kind, kind);
  try {
    known_cpu("pentium-pro");
    FAIL() << "an unknown kind was accepted";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("pentium-pro"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("skylake-x"), std::string::npos) << e.what();
  }
}
