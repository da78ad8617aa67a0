#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for a bounded time from the
# seed corpus in tests/fuzz/corpus/<target>/. New inputs go to a scratch directory, so the
# repository stays as it is; a crash fails the run and leaves the input under build-fuzz/.
#   scripts/fuzz.sh [seconds per target, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
targets=(mpa handshake segment ud_header sidr eth_frame fpdu_stream rsocket)
command -v clang++ >/dev/null || { echo "clang++ missing (scripts/deps.sh test installs it)" >&2; exit 1; }
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DSOFTRDMA_FUZZ=ON -DBUILD_TESTING=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
total=0
for t in "${targets[@]}"; do
    mkdir -p "$work/$t" build-fuzz/crashes
    log="$work/$t.log"
    if ! (cd build-fuzz/crashes && UBSAN_OPTIONS=halt_on_error=1 \
        "../bin/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 "$work/$t" "$PWD/../../tests/fuzz/corpus/$t") >"$log" 2>&1; then
        echo "fuzz_$t FAILED:"
        grep -E "ERROR|SUMMARY|Test unit written" "$log" || tail -20 "$log"
        exit 1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    total=$((total + ${runs:-0}))
    echo "fuzz_$t: ${runs:-?} inputs in ${secs}s, no crash"
done
echo "fuzzing: $total inputs over ${#targets[@]} targets, no crash"
