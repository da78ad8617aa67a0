#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Every test: unit, API, two-process, load, ABI (layout/exports/ldd), Debian's unmodified RDMA
# programs on our libraries and the namespace tests; then all of them but the ABI checks again
# under ASan+UBSan, the API/process tests under TSan, and every wire decoder under libFuzzer
# (10 s each).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >/dev/null
cmake --build build -j"$jobs"
# A configuration that silently lost its tests must not pass.
count=$(cd build && ctest -N | sed -n 's/^Total Tests: //p')
[ "${count:-0}" -ge 50 ] || { echo "only ${count:-0} tests configured" >&2; exit 1; }
(cd build && ctest --output-on-failure -j1 --timeout 600)
if [ "${SOFTRDMA_SKIP_SANITIZERS:-0}" != 1 ]; then
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSANITIZE=address -DBUILD_TESTING=ON >/dev/null
    cmake --build build-asan -j"$jobs"
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -j1 -L 'unit|api|process|load' --timeout 600)
    # Debian's programs on the sanitized libraries: the runtime must be preloaded, as the
    # programs themselves are not instrumented (leak checking would flag every shell tool).
    # The preload reaches the harness's own tools too, so it must not run any that hang
    # under it (procps' ps does, before main(): see child_pids in tests/conformance/lib/lib.sh).
    (cd build-asan && LD_PRELOAD=$(gcc -print-file-name=libasan.so) \
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -j1 -L conformance --timeout 600)
    # The namespace tests too: the preload goes only to what runs inside the namespaces (the
    # test's own ip/nft/tc stay as they are).
    (cd build-asan && SR_NETNS_PRELOAD=$(gcc -print-file-name=libasan.so) \
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -j1 -L netns --timeout 900)
    # The progress engine and the application threads race by design: TSan checks the locking,
    # and the shared-memory ring and the engine's lock-free turns with two threads of their own.
    cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DSANITIZE=thread -DBUILD_TESTING=ON >/dev/null
    cmake --build build-tsan -j"$jobs" --target sr_api_tests sr_process_tests sr_unit_tests
    (cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j1 -L 'api|process' --timeout 600)
    (cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j1 -L unit \
        -R '^(ShmRing|ShmChunks|ProgressEngine)\.' --timeout 600)
fi
if [ "${SOFTRDMA_SKIP_FUZZ:-0}" != 1 ]; then
    scripts/fuzz.sh "${SOFTRDMA_FUZZ_SECONDS:-10}"
fi
echo "all tests passed"
