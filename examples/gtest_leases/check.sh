#!/usr/bin/env bash
# CTest check for the per-test lease example: under leaseguard the leaking test fails and
# names itself, the clean test passes, and the report attributes the leak to the test's
# lease; without leaseguard every test passes.
set -uo pipefail
leaseguard=$1
test_binary=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

LD_LIBRARY_PATH=$(dirname "$leaseguard")/../lib/leaseguard/sim "$test_binary" > "$out/plain.log" 2>&1 \
  || { echo "without leaseguard the tests must pass"; cat "$out/plain.log"; exit 1; }

"$leaseguard" run --sim --out "$out" --format json="$out/report.json" -- "$test_binary" > "$out/run.log" 2>&1
status=$?
[ "$status" -ne 0 ] || { echo "the leaking test did not fail the binary"; cat "$out/run.log"; exit 1; }
grep -q "\[       OK \] DeviceBufferTest.FreesWhatItAllocates" "$out/run.log" || { cat "$out/run.log"; exit 1; }
grep -q "\[  FAILED  \] DeviceBufferTest.ForgetsToFree" "$out/run.log" || { cat "$out/run.log"; exit 1; }
grep -q "DeviceBufferTest.ForgetsToFree leaked 1 device allocation(s)" "$out/run.log" || { cat "$out/run.log"; exit 1; }
grep -q '"name": "DeviceBufferTest.ForgetsToFree"' "$out/report.json" || { cat "$out/report.json"; exit 1; }
grep -q 'lease [0-9]* "DeviceBufferTest.ForgetsToFree" (policy report' "$out/run.log" || { cat "$out/run.log"; exit 1; }
echo "per-test leases: the leaking test failed and was named; the clean one passed"
