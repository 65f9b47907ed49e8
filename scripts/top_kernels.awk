# The kernels of a steady-state step, slowest first, from lazygrad's DEBUG=2 lines (stderr):
#   DEBUG=2 ./build/bench_train_epoch --model mlp --steps 5 --no-torch 2>&1 >/dev/null |
#     awk -v K=34 -v S=5 -f scripts/top_kernels.awk
# K is the kernels per step (the benchmark prints it), S the last steps to average over. A kernel is
# identified by its position in the step, since two kernels can share a name.
# The name runs from field 4 to "global" (it may end with the kernel's optimizations, "[V1:16 U0:4]").
/^\*\*\* CPU/ {
  n++; name[n] = $4
  for (f = 5; f <= NF && $f != "global"; f++) name[n] = name[n] " " $f
  for (f = 5; f <= NF; f++) { if ($f == "us") us[n] = $(f - 1); if ($f == "GFLOP/s") gflops[n] = $(f - 1) }
}
END {
  if (n < K * S) { print "top_kernels.awk: fewer than K * S kernel lines" > "/dev/stderr"; exit 1 }
  start = n - K * S
  for (i = 1; i <= K; i++) {
    t = 0; g = 0
    for (s = 0; s < S; s++) { t += us[start + s * K + i]; g += gflops[start + s * K + i] }
    kernel[i] = name[start + i]; ms[i] = t / S / 1000; gf[i] = g / S; total += ms[i]
  }
  # slowest first (K is small: a selection sort)
  for (i = 1; i <= K; i++) order[i] = i
  for (i = 1; i <= K; i++) for (j = i + 1; j <= K; j++) if (ms[order[j]] > ms[order[i]]) { x = order[i]; order[i] = order[j]; order[j] = x }
  printf "%-46s %10s %6s %9s\n", "kernel", "ms/step", "share", "GFLOP/s"
  for (r = 1; r <= K; r++) { i = order[r]; printf "%-46s %10.2f %5.1f%% %9.1f\n", kernel[i], ms[i], 100 * ms[i] / total, gf[i] }
  printf "%-46s %10.2f\n", "all " K " kernels", total
}
