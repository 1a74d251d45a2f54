#!/usr/bin/env bash
# bench/compare works end to end: one short round prints every row of its table, each
# leaseguard row with a per-pair time and an overhead. Timings here are noise, so the one
# figure judged has room for it, and is CPU time, which a busy machine does not stretch:
# every leaseguard series' CPU overhead under 20 microseconds a pair (~40 times what it
# costs here), which a flush or a symbol lookup per allocation would break. (Elapsed time
# is not judged: one round is a few milliseconds, and one preemption on a loaded machine
# made a 32-frame series read 40 us a pair.)
#
#   compare_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1
build_dir=$2
out=$("$source_dir/bench/compare" --build "$build_dir" --no-build --pairs 2000 --repeats 1 --no-callgrind)
echo "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
number='[0-9]+(\.[0-9]+)?'
for build in "frame pointers" "no frame pointers"; do
  for stacks in "stacks off" "16 frames" "32 frames"; do
    row="leaseguard (simulated cuMemAlloc_v2; $build; $stacks)"
    grep -F "| $row |" <<<"$out" >/dev/null || fail "no row: $row"
    grep -F "| $row |" <<<"$out" | grep -Eq "^\| [^|]+ \| $number \| $number-$number \| -?$number \|" || fail "no figures in row: $row"
  done
done
for stacks in "stacks off" "16 frames"; do
  row="leaseguard (simulated cuMemAlloc_v2; frame pointers; $stacks; compact journal)"
  grep -F "| $row |" <<<"$out" | grep -Eq "^\| [^|]+ \| $number \| $number-$number \| -?$number \|" || fail "no figures in row: $row"
done
for stacks in "stacks off" "16 frames"; do
  row="leaseguard (simulated hipMalloc; frame pointers; $stacks)"
  grep -F "| $row |" <<<"$out" | grep -Eq "^\| [^|]+ \| $number \| $number-$number \| -?$number \|" || fail "no figures in row: $row"
done
for build in "frame pointers" "no frame pointers"; do
  row="leaseguard (simulated cuMemAlloc_v2; $build; 16 frames; two chains in turn)"
  grep -F "| $row |" <<<"$out" | grep -Eq "^\| [^|]+ \| $number \| $number-$number \| -?$number \|" || fail "no figures in row: $row"
done
grep -Eq "^\| LeakSanitizer \(glibc malloc; frame pointers; 30 frames\) \| $number \|" <<<"$out" ||
  fail "no LeakSanitizer row"
# The tables of one thread, up to the table of threads.
single=$(sed '/^The same from 1, 2 and 8 threads/q' <<<"$out")
# Every leaseguard row there has all nine columns, ending with its overhead from the fastest
# runs and its ratio to LeakSanitizer's from the same.
grep -F "| leaseguard (" <<<"$single" | awk -F'|' 'NF != 11 { bad = 1 } END { exit bad }' ||
  fail "a leaseguard row lacks a column"
# (Either may be negative: one short run that another process delayed makes a baseline slow.)
grep -F "| leaseguard (" <<<"$single" | grep -Evq "\| -?$number \| (-|-?$number) \|$" &&
  fail "a leaseguard row lacks its fastest-run overhead or ratio"
# The chain built as users build it: its compiler and flags named, its rows judged against
# the LeakSanitizer of the same build.
grep -Eq '^Built as users build: `[^`]+ -O1 -g -fno-omit-frame-pointer` ' <<<"$out" ||
  fail "the user-built table does not say how its chain was built"
for stacks in "stacks off" "16 frames"; do
  row="leaseguard (simulated cuMemAlloc_v2; $stacks)"
  grep -F "| $row |" <<<"$single" | grep -Eq "^\| [^|]+ \| $number \| $number-$number \| -?$number \| -?$number \| (-|-?$number) \|" ||
    fail "no figures in the user-built row: $row"
  # The same from 1, 2 and 8 threads: three times, the CPU times and both scaling ratios.
  grep -F "| $row |" <<<"${out#"$single"}" |
    grep -Eq "^\| [^|]+ \| $number \| $number \| $number \| $number / $number / $number \| $number \| $number \|$" ||
    fail "no thread figures in the row: $row"
done
# Stream-ordered pairs from threads, leaseguard's and the driver's alone.
for row in "none (simulated cuMemAllocAsync, default stream)" \
  "leaseguard (simulated cuMemAllocAsync, default stream; stacks off)"; do
  grep -F "| $row |" <<<"${out#"$single"}" |
    grep -Eq "^\| [^|]+ \| $number \| $number \| $number \| $number / $number / $number \| $number \| $number \|$" ||
    fail "no thread figures in the row: $row"
done
grep -Eq "^\| LeakSanitizer \(glibc malloc; default options\) \| $number \|" <<<"$single" ||
  fail "no user-built LeakSanitizer row"
grep -Eq "^Each timed loop ran on CPU [0-9]+ " <<<"$out" || fail "the table does not say which CPU the loops ran on"
grep -Eq "^This machine, amid other work: the coarse clock $number ns, a locked add $number ns; rdtsc $number ns, clock_gettime $number ns\.$" <<<"$out" ||
  fail "the table does not say what this machine charges for time stamps and locked adds"
# The chosen CPU is one the program moves to, or it says why not.
chain=$build_dir/bench/compare_chain_fp
first_cpu=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status | cut -d, -f1 | cut -d- -f1)
[ "$(COMPARE_CHAIN_CPU=$first_cpu "$chain" malloc 1000 | wc -w)" = 2 ] ||
  fail "compare_chain did not time its loop on CPU $first_cpu"
if COMPARE_CHAIN_CPU=zero "$chain" malloc 1000 2>/dev/null; then fail "compare_chain took COMPARE_CHAIN_CPU=zero"; fi
# In the tables of one thread, column 3 of every leaseguard row is its median elapsed ns per
# pair and column 6 its CPU overhead ns per pair (the peers are not judged: heaptrack's short
# runs cost ~1 ms a pair here).
grep -E "^\| leaseguard" <<<"$single" |
  awk -F'|' -v limit=20000 '{ gsub(/ /, "", $3); gsub(/ /, "", $6)
    if ($3 + 0 <= 0 || $6 == "" || $6 + 0 > limit) { print "FAIL: " $2 " at " $3 " ns a pair, " $6 " ns of CPU overhead"; bad = 1 } }
    END { exit bad }' ||
  fail "a leaseguard series' pair takes no time, or over 20 us of CPU overhead"
echo "PASS"
