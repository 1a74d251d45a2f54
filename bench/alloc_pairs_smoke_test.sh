#!/usr/bin/env bash
# bench/alloc_pairs works end to end: a short run of two series prints their rows, each with
# a figure for both stack depths. Timings here are noise, so the one figure judged has room
# for it: each pair under 20 microseconds (~100 times its cost), which a system call or a
# flush per allocation would break.
#
#   alloc_pairs_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
out=$("$1/bench/alloc_pairs" --build "$2" --no-build --min-time 0.01 --filter 'BM_AllocFreePair/(direct|hooked)/1000$')
echo "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }
for series in direct hooked; do
  grep -Eq "^\| BM_AllocFreePair/$series/1000 \| [0-9]+ \| [0-9]+ \|$" <<<"$out" || fail "no figures for $series"
done
for series in direct hooked; do
  grep -E "^\| BM_AllocFreePair/$series/1000 \|" <<<"$out" |
    awk -F'|' '{ for (i = 3; i <= 4; ++i) { gsub(/ /, "", $i); if ($i + 0 <= 0 || $i + 0 > 20000) bad = 1 } } END { exit bad }' ||
    fail "$series: a pair is not between 0 and 20 us"
done
grep -Eq "^Series without threads ran on CPU [0-9]+\.$" <<<"$out" || fail "the table does not say which CPU the series ran on"
if "$1/bench/alloc_pairs" --build "$2" --no-build --filter 'no such series' >/dev/null 2>&1; then fail "an empty filter was accepted"; fi
if "$1/bench/alloc_pairs" --build "$2" --no-build --cpu one >/dev/null 2>&1; then fail "--cpu one was accepted"; fi
echo "PASS"
