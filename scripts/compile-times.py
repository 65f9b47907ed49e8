#!/usr/bin/env python3
"""What a CPU kernel's build costs, per compiler: kernels taken at random from a kernel cache
(LAZYGRAD_CACHE after a cold run), built one at a time and in units of 16 as the CPU device writes
them (runtime/cpu/cpu_device.cpp, build_batch), and the fixed costs of one compiler process.

  /usr/bin/python3 scripts/compile-times.py CACHE_DIR [--count 64] [--compilers gcc,clang-14]
                                                     [--linkers bfd,gold,lld]

Prints the median and p90 per kernel one at a time, the per-kernel time of each unit of 16, and an
empty file's time to assembly, with the two headers, and to a linked object; with --linkers, the
median of compiling a kernel to an object (-c) and of linking that object into a shared object with
each linker (gcc -shared -fuse-ld=NAME). docs/devices.md quotes it.
"""
import argparse, os, random, statistics, subprocess, tempfile, time

FLAGS = "-O2 -march=native -fPIC -fwrapv -fno-math-errno -ffp-contract=off".split()


def run(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1e3


def unit(files):  # as build_batch writes it: each kernel's function and entry renamed
    text = ""
    for i, f in enumerate(files):
        name = os.path.basename(f).rsplit("-", 1)[0]
        text += (f"#define {name} {name}_u{i}\n#define {name}_entry {name}_u{i}_entry\n"
                 f"#include \"{f}\"\n#undef {name}\n#undef {name}_entry\n")
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cache")
    ap.add_argument("--count", type=int, default=64)
    ap.add_argument("--compilers", default="gcc,clang-14")
    ap.add_argument("--linkers", default="")
    a = ap.parse_args()
    files = sorted(os.path.join(a.cache, f) for f in os.listdir(a.cache)
                   if f.endswith(".c") and not f.startswith("batch-"))
    random.Random(0).shuffle(files)
    files = files[:a.count]
    with tempfile.TemporaryDirectory() as tmp:
        so, c = os.path.join(tmp, "k.so"), os.path.join(tmp, "unit.c")
        empty, headers = os.path.join(tmp, "empty.c"), os.path.join(tmp, "headers.c")
        open(empty, "w").write("int f(int x) { return x + 1; }\n")
        open(headers, "w").write("#include <math.h>\n#include <stdint.h>\nint f(int x) { return x + 1; }\n")
        for cc in a.compilers.split(","):
            one = sorted(run([cc, *FLAGS, "-shared", "-o", so, f, "-lm"]) for f in files)
            units = []
            for b in range(0, len(files) - 15, 16):
                open(c, "w").write(unit(files[b:b + 16]))
                units.append(run([cc, *FLAGS, "-shared", "-o", so, c, "-lm"]) / 16)
            fixed = [statistics.median(run([cc, *FLAGS, *extra, "-o", so, f]) for _ in range(10))
                     for f, extra in ((empty, ["-S"]), (headers, ["-S"]), (headers, ["-shared"]))]
            print(f"{cc}: {len(one)} kernels one at a time: median {statistics.median(one):.1f} ms, "
                  f"p90 {one[int(0.9 * len(one))]:.1f} ms; in units of 16: "
                  f"{', '.join(f'{u:.1f}' for u in units)} ms a kernel; an empty file to assembly "
                  f"{fixed[0]:.1f} ms, with <math.h> and <stdint.h> {fixed[1]:.1f} ms, linked {fixed[2]:.1f} ms")
            if a.linkers:
                obj, compile_ms, link_ms = os.path.join(tmp, "k.o"), [], {ld: [] for ld in a.linkers.split(",")}
                for f in files:
                    compile_ms.append(run([cc, *FLAGS, "-c", "-o", obj, f]))
                    for ld in link_ms:
                        link_ms[ld].append(run([cc, "-shared", f"-fuse-ld={ld}", "-o", so, obj, "-lm"]))
                print(f"{cc}: to an object (-c) median {statistics.median(compile_ms):.1f} ms; linked by " +
                      ", ".join(f"{ld} {statistics.median(t):.1f} ms" for ld, t in link_ms.items()))


if __name__ == "__main__":
    main()
