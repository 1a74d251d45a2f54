#!/usr/bin/env bash
# leaseguard on a real NVIDIA GPU: builds, runs programs under the preload on the real driver
# and checks that the report lists exactly their leaks, and measures hooked against direct
# allocation pairs. Finishes in a few minutes; writes everything under $OUT (or ./gpu-check).
#
#   bench/gpu/check.sh [--build-only]
#
# Without an NVIDIA GPU it stops at once with exit status 3. Exit 0: every check passed;
# 1: some check failed (the summary says which). --build-only builds what the checks run and
# stops (it needs no GPU: a machine without one checks the script's build that way).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build_only=0
case ${1:-} in
  --build-only) build_only=1 ;;
  "") ;;
  *) echo "bench/gpu/check.sh: unknown option $1 (usage: bench/gpu/check.sh [--build-only])" >&2; exit 2 ;;
esac
out=${OUT:-$PWD/gpu-check}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

if [ "$build_only" = 0 ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
    echo "bench/gpu/check.sh: no NVIDIA GPU here (needs nvidia-smi and /dev/nvidia*); run it on a machine with one" >&2
    exit 3
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
  say "GPU: $(head -n 1 "$out/gpu.txt")"
fi

# ---- build ----------------------------------------------------------------------------
# Only what the checks run, without the test suite (a GPU machine may lack GoogleTest): the
# CLI, the preload, the simulator (for the driver victim's reference run) and the programs.
build=$root/build/gpu-check
start=$(date +%s)
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if ! { cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLEASEGUARD_TESTS=OFF &&
       cmake --build "$build" -j "$(nproc)" --target leaseguard_preload leaseguard leaseguard_sim_cuda \
         compare_chain_fp runtime_leaks; } >"$out/build.log" 2>&1; then
  say "FAIL build (see build.log)"
  tail -n 30 "$out/build.log"
  exit 1
fi
# The driver API victim as an application is built: the toolkit's cuda.h, linked with -lcuda
# (the toolkit's stub at link time, the real driver at run time).
cuda_home=$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")
if ! cc -g -O1 -fno-omit-frame-pointer -fno-inline -DVICTIM_USE_TOOLKIT -I"$root/tests/victims" \
     -I"$cuda_home/include" "$root/tests/victims/direct_calls.c" -o "$build/direct_calls_toolkit" \
     -L"$cuda_home/lib64/stubs" -L"$cuda_home/lib64" -lcuda >>"$out/build.log" 2>&1; then
  say "FAIL building the driver API victim (see build.log)"
  exit 1
fi
if ! cc -g -O1 -DVICTIM_USE_TOOLKIT -I"$root/tests/victims" -I"$cuda_home/include" \
     "$root/bench/gpu/primary_identity.c" -o "$build/primary_identity" \
     -L"$cuda_home/lib64/stubs" -L"$cuda_home/lib64" -lcuda >>"$out/build.log" 2>&1; then
  say "FAIL building primary_identity (see build.log)"
  exit 1
fi
say "built in $(($(date +%s) - start)) s"
# GPU images often lack elfutils' libdw-dev: the build then names functions from symbol
# tables (no source lines), which every check here allows.
grep -q "libdw not found" "$out/build.log" && say "symbols: from ELF symbol tables (libdw-dev is not installed here)"
[ "$build_only" = 1 ] && exit 0
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

# ---- the same with a compact journal: the same four leaks ---------------------------------
"$leaseguard" run --fail-on-leak --journal compact --out "$out/runtime-compact" -- "$build/bench/runtime_leaks" leaks \
  >"$out/runtime-compact.txt" 2>&1
status=$?
got=$(leaked_sizes "$out/runtime-compact")
check "runtime API program, compact journal: exactly the same four leaks" \
  $([ "$status" = 23 ] && [ "$got" = "$expected" ]; echo $?) "exit status $status, leaked sizes: $(echo $got)"

# ---- the driver API victim: the same leaks as on the simulator ----------------------------
victim=$build/direct_calls_toolkit
"$leaseguard" run --out "$out/driver-real" -- "$victim" >"$out/driver-real.txt" 2>&1
"$leaseguard" run --sim --out "$out/driver-sim" -- "$victim" >"$out/driver-sim.txt" 2>&1
real=$(leaked_sizes "$out/driver-real")
simulated=$(leaked_sizes "$out/driver-sim")
check "driver API victim: the real driver's report lists the simulator's leaks" \
  $([ -n "$real" ] && [ "$real" = "$simulated" ]; echo $?) "real: $(echo $real) / simulator: $(echo $simulated)"

# ---- a primary context made again is told apart from the one its last release destroyed ---
"$build/primary_identity" >"$out/primary-identity.txt" 2>&1
status=$?
check "a primary context made again has a new handle or a new cuCtxGetId ($(head -n 1 "$out/primary-identity.txt"))" \
  "$status" "exit status $status"

# ---- overhead: hooked against direct pairs, medians of 5 ------------------------------------
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }'; }
time_series() {  # repeats of a command that prints ns per pair (elapsed, first) last
  for _ in 1 2 3 4 5; do "$@" 2>/dev/null | grep -E '^[0-9.]+( [0-9.]+)?$' | tail -n 1 | awk '{ print $1 }'; done | median
}
pairs=20000
{
  echo "| pair | direct ns | hooked, stacks off | hooked, 16 frames | hooked, 16 frames, compact journal |"
  echo "|---|---|---|---|---|"
  for program in "cuMemAlloc_v2 + cuMemFree_v2|$build/bench/compare_chain_fp cuda $pairs" \
                 "cudaMalloc + cudaFree|$build/bench/runtime_leaks pairs $pairs"; do
    name=${program%%|*}
    command=${program#*|}
    direct=$(time_series $command)
    off=$(time_series env LEASEGUARD_STACK_DEPTH=0 "$leaseguard" run --quiet --out "$out/bench" -- $command)
    sixteen=$(time_series env LEASEGUARD_STACK_DEPTH=16 "$leaseguard" run --quiet --out "$out/bench" -- $command)
    compact=$(time_series env LEASEGUARD_STACK_DEPTH=16 "$leaseguard" run --quiet --journal compact --out "$out/bench" -- $command)
    rm -rf "$out/bench"
    echo "| $name | $direct | $off | $sixteen | $compact |"
  done
} | tee "$out/overhead.md" | tee -a "$summary"

if [ "$failures" = 0 ]; then say "all checks passed"; exit 0; fi
say "$failures check(s) failed"
exit 1
