#!/usr/bin/env bash
# leaseguard on a real NVIDIA GPU: builds, runs programs under the preload on the real driver
# and checks that the report lists exactly their leaks, and measures hooked against direct
# allocation pairs. Finishes in a few minutes; writes everything under $OUT (or ./gpu-check).
#
#   bench/gpu/check.sh
#
# Without an NVIDIA GPU it stops at once with exit status 3. Exit 0: every check passed;
# 1: some check failed (the summary says which).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$PWD/gpu-check}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  echo "bench/gpu/check.sh: no NVIDIA GPU here (needs nvidia-smi and /dev/nvidia*); run it on a machine with one" >&2
  exit 3
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
say "GPU: $(head -n 1 "$out/gpu.txt")"

# ---- build ------------------------------------------------------------------------------
build=$root/build/gpu-check
start=$(date +%s)
if ! { cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$build" --target leaseguard_preload leaseguard compare_chain_fp runtime_leaks \
         direct_calls_toolkit; } >"$out/build.log" 2>&1; then
  say "FAIL build (see build.log)"
  tail -n 30 "$out/build.log"
  exit 1
fi
say "built in $(($(date +%s) - start)) s"
leaseguard=$build/bin/leaseguard
failures=0
check() {  # name, condition result (0 = pass), detail
  if [ "$2" = 0 ]; then say "PASS $1"; else say "FAIL $1: $3"; failures=$((failures + 1)); fi
}

# The leaked sizes a report lists, one per line, sorted.
leaked_sizes() {  # journal directory
  "$leaseguard" report --quiet --format "json=$1.json" "$1" 2>/dev/null
  grep -o '"bytes": *[0-9]*' "$1.json" | grep -o '[0-9]*$' | sort -n
}

# ---- the runtime API program: exactly its four leaks --------------------------------------
"$leaseguard" run --fail-on-leak --out "$out/runtime" -- "$build/bench/runtime_leaks" leaks >"$out/runtime.txt" 2>&1
status=$?
expected=$(printf '%s\n' 1048577 1048578 1048579 1048580)
got=$(leaked_sizes "$out/runtime")
check "runtime API program: exit status 23 (leaks found)" $([ "$status" = 23 ]; echo $?) "exit status $status"
check "runtime API program: the report lists exactly cudaMalloc, cudaMallocAsync, cudaMallocManaged and cudaMallocHost leaks" \
  $([ "$got" = "$expected" ]; echo $?) "leaked sizes: $(echo $got)"

# ---- the driver API victim: the same leaks as on the simulator ----------------------------
victim=$build/tests/victims/direct_calls_toolkit
"$leaseguard" run --out "$out/driver-real" -- "$victim" >"$out/driver-real.txt" 2>&1
"$leaseguard" run --sim --out "$out/driver-sim" -- "$victim" >"$out/driver-sim.txt" 2>&1
real=$(leaked_sizes "$out/driver-real")
simulated=$(leaked_sizes "$out/driver-sim")
check "driver API victim: the real driver's report lists the simulator's leaks" \
  $([ -n "$real" ] && [ "$real" = "$simulated" ]; echo $?) "real: $(echo $real) / simulator: $(echo $simulated)"

# ---- overhead: hooked against direct pairs, medians of 5 ------------------------------------
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }
time_series() {  # repeats of a command that prints ns per pair last
  for _ in 1 2 3 4 5; do "$@" 2>/dev/null | grep -E '^[0-9.]+$' | tail -n 1; done | median
}
pairs=20000
{
  echo "| pair | direct ns | hooked, stacks off | hooked, 16 frames |"
  echo "|---|---|---|---|"
  for program in "cuMemAlloc_v2 + cuMemFree_v2|$build/bench/compare_chain_fp cuda $pairs" \
                 "cudaMalloc + cudaFree|$build/bench/runtime_leaks pairs $pairs"; do
    name=${program%%|*}
    command=${program#*|}
    direct=$(time_series $command)
    off=$(time_series env LEASEGUARD_STACK_DEPTH=0 "$leaseguard" run --quiet --out "$out/bench" -- $command)
    sixteen=$(time_series env LEASEGUARD_STACK_DEPTH=16 "$leaseguard" run --quiet --out "$out/bench" -- $command)
    rm -rf "$out/bench"
    echo "| $name | $direct | $off | $sixteen |"
  done
} | tee "$out/overhead.md" | tee -a "$summary"

if [ "$failures" = 0 ]; then say "all checks passed"; exit 0; fi
say "$failures check(s) failed"
exit 1
