#!/usr/bin/env bash
# bench/gpu/check.sh on a machine without an NVIDIA GPU stops at once, before building
# anything, with exit status 3 and one line that says why (its own --help text promises
# it). Skipped (77) where a GPU is present: there the script would run the real checks.
#
#   no_gpu_test.sh SOURCE_DIR
set -uo pipefail
source_dir=$1
if command -v nvidia-smi >/dev/null 2>&1 && ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
  echo "skipped: this machine has an NVIDIA GPU"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
err=$(cd "$out" && OUT="$out/results" bash "$source_dir/bench/gpu/check.sh" 2>&1 >/dev/null)
status=$?
[ "$status" = 3 ] || fail "exit status $status, not 3"
[ "$err" = "bench/gpu/check.sh: no NVIDIA GPU here (needs nvidia-smi and /dev/nvidia*); run it on a machine with one" ] ||
  fail "unexpected message: $err"
# The build's first line of the summary ("built in N s") would be there had it built.
[ ! -s "$out/results/summary.txt" ] || fail "it went on: $(cat "$out/results/summary.txt")"
bad=$(cd "$out" && OUT="$out/results" bash "$source_dir/bench/gpu/check.sh" --bogus 2>&1 >/dev/null)
status=$?
[ "$status" = 2 ] || fail "an unknown option: exit status $status, not 2"
grep -q "unknown option --bogus" <<<"$bad" || fail "an unknown option: $bad"
echo "PASS"
