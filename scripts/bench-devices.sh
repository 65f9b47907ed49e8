#!/usr/bin/env bash
# The CPU device against OpenCL (PoCL on this CPU here) in one run: bench_elementwise, bench_sgemm
# and bench_train_epoch, each with DEVICE=CPU and then DEVICE=CL, and a table of lazygrad-CL /
# lazygrad-CPU time ratios (docs/benchmarks.md, "Devices").
#
#   scripts/bench-devices.sh [--quick]
#
# Environment (defaults in brackets):
#   BUILD [build]                the build folder whose programs run
#   BENCH_CACHE [/tmp/bench-cache]  LAZYGRAD_CACHE for every run; PoCL's cache is BENCH_CACHE/pocl
#   BENCH_LOGS [BENCH_CACHE/logs]   every program's output, one file per run
#   THREADS [2]                  lazygrad's CPU threads (PoCL runs on its own threads, one per core)
#   EW_N [4194304], EW_REPS [5]  bench_elementwise --n and --reps
#   SGEMM_SIZES [256,512]        bench_sgemm --sizes (always --threads $THREADS --no-beam)
#   TRAIN_STEPS [20]             bench_train_epoch --steps, both models
#   BENCHES [elementwise sgemm train_epoch]  which of them run
# --quick: tiny sizes, to check the script itself in a few seconds (its numbers mean nothing).
#
# Every bench makes its tensors on lazygrad's default device, which DEVICE sets; none of them prints
# where its kernels ran. So each bench is first run once, untimed, with DEBUG=2 and the same sizes:
# that run fills the kernel caches (lazygrad's and PoCL's, so no compile time reaches the measured
# run; the benches also warm up in-process before timing) and its "*** CL" / "*** CPU" launch lines
# say which device ran the kernels. A bench whose DEVICE=CL warm-up launched nothing on CL is
# reported as not honouring DEVICE and left out of the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
BENCH_CACHE=${BENCH_CACHE:-/tmp/bench-cache}
BENCH_LOGS=${BENCH_LOGS:-$BENCH_CACHE/logs}
export THREADS=${THREADS:-2}
EW_N=${EW_N:-4194304}
EW_REPS=${EW_REPS:-5}
SGEMM_SIZES=${SGEMM_SIZES:-256,512}
TRAIN_STEPS=${TRAIN_STEPS:-20}
if [[ ${1:-} == --quick ]]; then
  EW_N=65536 EW_REPS=1 SGEMM_SIZES=64 TRAIN_STEPS=1
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--quick]" >&2
  exit 2
fi

for prog in lazygrad bench_elementwise bench_sgemm bench_train_epoch; do
  [[ -x $BUILD/$prog ]] || { echo "missing $BUILD/$prog: build first (make build)" >&2; exit 1; }
done

# An isolated kernel cache, so that the numbers do not depend on what other runs left in
# ~/.cache/lazygrad; PoCL keeps its compiled work-group functions under it too (as .ci/run does).
export LAZYGRAD_CACHE=$BENCH_CACHE
export POCL_CACHE_DIR=$BENCH_CACHE/pocl
mkdir -p "$LAZYGRAD_CACHE" "$POCL_CACHE_DIR" "$BENCH_LOGS"
unset DEBUG BEAM  # set per run below; an inherited BEAM would search instead of measuring

echo "== bench-devices: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
echo "cpu: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) logical CPUs"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) before"
echo "THREADS=$THREADS LAZYGRAD_CACHE=$LAZYGRAD_CACHE POCL_CACHE_DIR=$POCL_CACHE_DIR logs in $BENCH_LOGS"
echo "lazygrad info, devices:"
# The lines between "devices:" and the blank line after them.
"$BUILD/lazygrad" info | awk '/^devices:/ {on = 1; next} on && /^$/ {exit} on'
if ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
  echo "note: /usr/bin/python3 cannot import torch (apt-get install python3-torch): bench_train_epoch will skip its PyTorch peer"
fi
echo

# Each bench's arguments: the measured run and its warm-up (same shapes, fewer repetitions).
declare -A ARGS WARM
ARGS[elementwise]="--n $EW_N --reps $EW_REPS"
WARM[elementwise]="--n $EW_N --reps 1"
ARGS[sgemm]="--sizes $SGEMM_SIZES --threads $THREADS --no-beam"
WARM[sgemm]="--sizes $SGEMM_SIZES --threads $THREADS --no-beam --reps 1"
ARGS[train_epoch]="--model both --steps $TRAIN_STEPS"
WARM[train_epoch]="--model both --steps 1 --no-torch"
read -r -a BENCHES <<<"${BENCHES:-elementwise sgemm train_epoch}"
DEVICES=(CPU CL)

declare -A STATUS  # "<bench> <dev>": ok, or why there are no numbers
for dev in "${DEVICES[@]}"; do
  for b in "${BENCHES[@]}"; do
    out=$BENCH_LOGS/$b-$dev
    # Warm-up, untimed; DEBUG=2 names the device of every kernel launch on stderr.
    echo "-- $b, DEVICE=$dev: warm-up (DEBUG=2) $BUILD/bench_$b ${WARM[$b]}"
    # A failed warm-up is shown but does not stop the measured run, which then says for itself
    # whether the failure was the warm-up's (a loss check over 1 step) or the program's.
    rc=0
    # shellcheck disable=SC2086  # the arguments are split into words on purpose
    DEVICE=$dev DEBUG=2 "$BUILD/bench_$b" ${WARM[$b]} >"$out.warm.out" 2>"$out.warm.err" || rc=$?
    if [[ $rc -ne 0 ]]; then
      echo "   warm-up exit status $rc; its last lines of stderr ($out.warm.err):"
      grep -v '^\*\*\* ' "$out.warm.err" | tail -n 5 | sed 's/^/   /'
    fi
    on_cl=$(grep -c '^\*\*\* CL ' "$out.warm.err" || true)
    on_cpu=$(grep -c '^\*\*\* CPU ' "$out.warm.err" || true)
    echo "   kernel launches in the warm-up: $on_cl on CL, $on_cpu on CPU"
    if [[ $on_cl -eq 0 && $on_cpu -eq 0 ]]; then
      STATUS[$b $dev]="no DEBUG=2 launch lines in the warm-up: cannot tell where it ran"
      echo "   ${STATUS[$b $dev]}"
      continue
    fi
    if [[ $dev == CL && $on_cl -eq 0 ]]; then
      STATUS[$b $dev]="does not honour DEVICE=CL (every kernel ran on the CPU)"
      echo "   ${STATUS[$b $dev]}: no CL numbers"
      continue
    fi
    # Measured run, shown as it goes.
    echo "-- $b, DEVICE=$dev: $BUILD/bench_$b ${ARGS[$b]}"
    rc=0
    # shellcheck disable=SC2086  # as above
    DEVICE=$dev "$BUILD/bench_$b" ${ARGS[$b]} 2>&1 | tee "$out.out" || rc=${PIPESTATUS[0]}
    if [[ $rc -eq 0 ]]; then STATUS[$b $dev]=ok; else STATUS[$b $dev]="failed (exit status $rc; $out.out)"; fi
    echo
  done
done

# The figures each program prints, as "figure<TAB>value" lines (times in ms: lower is faster).
figures() {  # figures BENCH FILE
  case $1 in
    elementwise)  # the "lazygrad vs peer" table: wall ms is the 6th field from the end
      awk '/^lazygrad vs peer/ {t = 1; next}
           t && /^(add|chain|softmax) / {printf "elementwise %s wall ms\t%s\n", $1, $(NF - 5)}
           /^  triad a = b/ {printf "elementwise peer triad ms (plain C++, not lazygrad)\t%s\n", $(NF - 3)}' "$2" ;;
    sgemm)  # "N=256 T=2: lazygrad 1.23 ms (...)"
      sed -nE 's/^N=([0-9]+) T=([0-9]+): lazygrad ([0-9.]+) ms.*/sgemm N=\1 T=\2 ms\t\3/p' "$2" ;;
    train_epoch)  # the summary table: model steps lg-ms/step pt-ms/step ...
      awk '/^summary/ {t = 1; next}
           t && /^(mlp|cnn) / {printf "train %s lazygrad ms/step\t%s\n", $1, $3
                              if ($4 != "-") printf "train %s PyTorch ms/step (peer, not lazygrad)\t%s\n", $1, $4}' "$2"
      grep -E '^  PyTorch +skipped:' "$2" | sed 's/^ */note: /' >&2 || true ;;
  esac
}

echo "== lazygrad on CL against lazygrad on CPU (ratio = CL time / CPU time: above 1, CL is slower)"
echo "   DEVICE=CL's 'kern ms' in bench_elementwise counts only the enqueue (CL launches are"
echo "   asynchronous, timed by events only under DEBUG=2), so the wall times are compared."
printf '%-58s %12s %12s %9s\n' figure CPU CL CL/CPU
for b in "${BENCHES[@]}"; do
  for dev in "${DEVICES[@]}"; do
    if [[ ${STATUS[$b $dev]:-not run} != ok ]]; then
      printf '%-58s %s\n' "bench_$b, DEVICE=$dev" "no numbers: ${STATUS[$b $dev]:-not run}"
    fi
  done
  [[ ${STATUS[$b CPU]:-} == ok && ${STATUS[$b CL]:-} == ok ]] || continue
  # Figures in the CPU run's order, joined with the CL run's by name.
  figures "$b" "$BENCH_LOGS/$b-CPU.out" >"$BENCH_LOGS/$b-CPU.fig"
  figures "$b" "$BENCH_LOGS/$b-CL.out" >"$BENCH_LOGS/$b-CL.fig"
  if [[ ! -s $BENCH_LOGS/$b-CPU.fig ]]; then
    printf '%-58s %s\n' "bench_$b" "no figures found in its output (format changed?)"
    continue
  fi
  awk -F'\t' 'NR == FNR {cl[$1] = $2; next}
              {c = ($1 in cl) ? cl[$1] : "-"
               r = (c != "-" && $2 > 0) ? sprintf("%.2f", c / $2) : "-"
               printf "%-58s %12s %12s %9s\n", $1, $2, c, r}' \
    "$BENCH_LOGS/$b-CL.fig" "$BENCH_LOGS/$b-CPU.fig"
done
echo
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) after"

failed=0
for key in "${!STATUS[@]}"; do [[ ${STATUS[$key]} == ok ]] || failed=1; done
exit $failed
