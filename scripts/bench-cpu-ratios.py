#!/usr/bin/python3
"""Issue 17's table: lazygrad against its peers on this machine, each ratio the median of 5 runs
with the spread, the runs alternating between the benchmarks (docs/benchmarks.md, "CPU kernels per
machine kind"):

    /usr/bin/python3 scripts/bench-cpu-ratios.py [BUILD] [--runs N] [--gpt2-folder DIR]

  bench_sgemm --sizes 1024,2048 --threads 2 --no-beam   lazygrad GFLOP/s over OpenBLAS's
  bench_train_epoch --steps 50 --threads 2               lazygrad ms/step over PyTorch's (MLP, CNN)
  bench_gpt2 --threads 2 --decode 16 --reps 3            prompt and prefill tok/s over PyTorch's,
                                                         decode time over the bandwidth bound's
  lazygrad generate --model DIR (with --gpt2-folder: a   the CLI's prompt tok/s for a 130-token
  folder from scripts/make_gpt2_random_folder.py)        prompt (its last position's logits), over
                                                         bench_gpt2's PyTorch prefill (the same work)

Prints the CPU model (/proc/cpuinfo) first, then one line per figure: median, min and max.
"""
import os
import re
import statistics
import subprocess
import sys


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ)).stdout


def main():
    args = sys.argv[1:]
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    folder = args[args.index("--gpt2-folder") + 1] if "--gpt2-folder" in args else None
    build = next((a for a in args if not a.startswith("--") and a not in (str(runs), folder)), "build")
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "unknown")
    print(f"cpu: {model}")
    figures = {}

    def add(name, value):
        figures.setdefault(name, []).append(value)

    prompt = " ".join(["The quick brown fox jumps over the lazy dog."] * 13)
    for _ in range(runs):
        out = run([f"{build}/bench_sgemm", "--sizes", "1024,2048", "--threads", "2", "--no-beam"])
        for m in re.finditer(r"^\s+(\d+)\s+2\s+([\d.]+)\s+-\s+([\d.]+)\s+\S+\s+\S+\s+\S+\s+\S+\s+([\d.]+)", out, re.M):
            add(f"sgemm {m.group(1)}: lazygrad / OpenBLAS GFLOP/s", float(m.group(4)))
        out = run([f"{build}/bench_train_epoch", "--steps", "50", "--threads", "2"])
        for m in re.finditer(r"^(mlp|cnn)\s+\d+\s+([\d.]+)\s+([\d.]+)", out, re.M):
            add(f"{m.group(1)} step: lazygrad / PyTorch ms", float(m.group(2)) / float(m.group(3)))
        out = run([f"{build}/bench_gpt2", "--threads", "2", "--decode", "16", "--reps", "3"])
        lg = re.search(r"^lazygrad\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
        pt = re.search(r"^PyTorch\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
        bound = re.search(r"([\d.]+) times the bound's time", out)
        first = re.search(r"first prefill .*?: ([\d.]+) tok/s", out)
        if lg and pt:
            add("gpt2 prompt (128): lazygrad / PyTorch tok/s", float(lg.group(1)) / float(pt.group(1)))
            add("gpt2 prefill (128): lazygrad / PyTorch tok/s", float(lg.group(2)) / float(pt.group(2)))
            if first:
                add("gpt2 first prefill (128, as the CLI runs it) / PyTorch prefill", float(first.group(1)) / float(pt.group(2)))
        if bound:
            add("gpt2 decode: time / bandwidth bound's", float(bound.group(1)))
        if folder and pt:
            err = subprocess.run([f"{build}/lazygrad", "generate", "--model", folder, "--prompt", prompt,
                                  "--max-tokens", "4", "--temperature", "0"], capture_output=True, text=True).stderr
            cli = re.search(r"prompt: (\d+) tokens in [\d.]+ s, ([\d.]+) tokens/s", err)
            if cli:
                add(f"lazygrad generate prompt ({cli.group(1)} tokens) / PyTorch prefill (128)",
                    float(cli.group(2)) / float(pt.group(2)))
    for name, values in figures.items():
        print(f"{name}: median {statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f}, "
              f"{len(values)} runs)")


if __name__ == "__main__":
    main()
