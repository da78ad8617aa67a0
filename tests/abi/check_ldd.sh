#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# check_ldd.sh <libdir>
#
# Loads each of Debian 12's 33 prebuilt RDMA ELF programs (ibverbs-utils,
# rdmacm-utils, perftest) against the libraries in <libdir> with
#     LD_LIBRARY_PATH=<libdir> ldd -r <program>
# and fails (exit 1) if, for any program,
#   - ldd reports an "undefined symbol", a library "not found", or a
#     "version ... not found" (all programs are BIND_NOW, so each of these is
#     a fatal start-up error), or ldd itself fails;
#   - libibverbs.so.1 / librdmacm.so.1 / libmlx5.so.1 / libefa.so.1 (whichever
#     the program loads, directly or indirectly) do not resolve into <libdir>,
#     or a library the program NEEDs directly is missing from ldd's output;
#   - the program is not installed (never skipped: install the package).
# The two perftest shell scripts (run_perftest_loopback,
# run_perftest_multi_devices) are not ELF programs and are not checked.
#
# Environment: SOFTRDMA_PROGRAM_DIR (default /usr/bin) - where the programs are.
#              SOFTRDMA_LDD_ALLOW_SYSTEM - space-separated SONAMEs allowed to resolve to the
#              system copy (set by the build only while it does not produce that library).
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 <libdir>" >&2
    exit 2
fi
if [ ! -d "$1" ]; then
    echo "FAIL: libdir '$1' is not a directory" >&2
    exit 1
fi
libdir=$(cd "$1" && pwd -P)
bindir=${SOFTRDMA_PROGRAM_DIR:-/usr/bin}
allowed_note=0

# program:package (33 ELF programs, see abi-surface.md section 1 / 2.1)
programs="
ibv_asyncwatch:ibverbs-utils
ibv_devices:ibverbs-utils
ibv_devinfo:ibverbs-utils
ibv_rc_pingpong:ibverbs-utils
ibv_srq_pingpong:ibverbs-utils
ibv_uc_pingpong:ibverbs-utils
ibv_ud_pingpong:ibverbs-utils
ibv_xsrq_pingpong:ibverbs-utils
cmtime:rdmacm-utils
mckey:rdmacm-utils
rcopy:rdmacm-utils
rdma_client:rdmacm-utils
rdma_server:rdmacm-utils
rdma_xclient:rdmacm-utils
rdma_xserver:rdmacm-utils
riostream:rdmacm-utils
rping:rdmacm-utils
rstream:rdmacm-utils
ucmatose:rdmacm-utils
udaddy:rdmacm-utils
udpong:rdmacm-utils
ib_atomic_bw:perftest
ib_atomic_lat:perftest
ib_read_bw:perftest
ib_read_lat:perftest
ib_send_bw:perftest
ib_send_lat:perftest
ib_write_bw:perftest
ib_write_lat:perftest
raw_ethernet_burst_lat:perftest
raw_ethernet_bw:perftest
raw_ethernet_fs_rate:perftest
raw_ethernet_lat:perftest
"
our_libs="libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libefa.so.1"

for tool in ldd readelf; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "FAIL: required tool '$tool' not found" >&2
        exit 1
    fi
done

nprog=0
nfail=0
failed=""

for entry in $programs; do
    prog=${entry%%:*}
    pkg=${entry#*:}
    path="$bindir/$prog"
    nprog=$((nprog + 1))
    problems=""

    if [ ! -e "$path" ]; then
        echo "FAIL: $prog: $path does not exist - package '$pkg' is not installed (apt-get install $pkg)"
        nfail=$((nfail + 1))
        failed="$failed $prog"
        continue
    fi
    if ! head -c 4 "$path" | grep -q 'ELF'; then
        echo "FAIL: $prog: $path is not an ELF file"
        nfail=$((nfail + 1))
        failed="$failed $prog"
        continue
    fi

    out=$(LD_LIBRARY_PATH="$libdir" ldd -r "$path" 2>&1)
    rc=$?

    bad=$(printf '%s\n' "$out" | grep -E 'undefined symbol|not found|symbol lookup error|error while loading')
    if [ -n "$bad" ]; then
        problems="$problems$bad"$'\n'
    fi
    if [ $rc -ne 0 ]; then
        problems="${problems}ldd -r exited with status $rc"$'\n'
    fi

    # Which of our libraries does the program NEED directly?
    needed=$(readelf -d -W "$path" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')

    for lib in $our_libs; do
        # ldd line: "\tlibibverbs.so.1 => /some/dir/libibverbs.so.1 (0x...)"
        line=$(printf '%s\n' "$out" | grep -E "^[[:space:]]*${lib//./\\.} => " | head -n 1)
        is_needed=0
        if printf '%s\n' "$needed" | grep -qxF "$lib"; then
            is_needed=1
        fi
        if [ -z "$line" ]; then
            if [ $is_needed -eq 1 ]; then
                problems="${problems}$lib is NEEDED but missing from ldd output"$'\n'
            fi
            continue
        fi
        target=$(printf '%s\n' "$line" | sed -E 's/^[[:space:]]*[^ ]+ => ([^ ]+).*/\1/')
        if [ "$target" = "not" ] || [ ! -e "$target" ]; then
            problems="${problems}$lib does not resolve: $line"$'\n'
            continue
        fi
        tdir=$(cd "$(dirname "$target")" && pwd -P)
        if [ "$tdir" != "$libdir" ] && [[ " ${SOFTRDMA_LDD_ALLOW_SYSTEM:-} " == *" $lib "* ]]; then
            allowed_note=1
        elif [ "$tdir" != "$libdir" ]; then
            problems="${problems}$lib resolves outside $libdir: $line"$'\n'
        fi
    done

    if [ -n "$problems" ]; then
        echo "FAIL: $prog ($path):"
        printf '%s' "$problems" | sed 's/^/    /'
        nfail=$((nfail + 1))
        failed="$failed $prog"
    else
        echo "ok:   $prog"
    fi
done

if [ $nprog -ne 33 ]; then
    echo "FAIL: internal error: expected 33 programs, checked $nprog" >&2
    exit 1
fi
if [ $nfail -ne 0 ]; then
    echo "check_ldd: $nfail of $nprog programs FAILED:$failed"
    exit 1
fi
[ $allowed_note -eq 1 ] && echo "NOTE: ${SOFTRDMA_LDD_ALLOW_SYSTEM} resolved to the system copy (not built yet)"
echo "check_ldd: all $nprog programs load cleanly against $libdir"
exit 0
