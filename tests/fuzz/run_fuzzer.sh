#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS over the checked-in corpus (read only: new inputs go
# to a scratch directory), with memory and per-input time bounded. Fails on any crash,
# leak, timeout or out-of-memory, and prints how many executions ran.
set -euo pipefail
fuzzer=$1
seconds=$2
corpus=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=1024 -malloc_limit_mb=512 -timeout=10 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$scratch/" "$scratch" "$corpus" 2>&1 | tee "$scratch/log" | tail -n 15
# (the final stats, executions included, are in the tail above)
