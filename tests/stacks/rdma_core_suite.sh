#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# rdma-core's own test suite (v44.0, as Debian's python3-pyverbs ships it in
# /usr/share/doc/rdma-core/tests), unmodified, on our libraries through `softrdma run`:
#   1. every module but test_rdmacm on sr_lo;
#   2. test_rdmacm in a network namespace of its own, on a veth device: its tests bind to the
#      device's IP address, and a loopback address binds to no device (as in the kernel's
#      rdma_cm, where 127.0.0.1 counts as "any"), so they need a device with a real netdev.
# Each run has a hard time limit (a hang fails). The test fails on any error or failure, on
# fewer tests than expected, and on any skip whose reason is not on the list below — the
# list docs/compatibility.md gives, with why each is expected.
#   usage: rdma_core_suite.sh <libdir> <bindir>
: "${CONF_BUDGET:=660}"
. "$(dirname "${BASH_SOURCE[0]}")/../conformance/lib/lib.sh"
conf_init "$@"
[[ -x /usr/bin/python3 ]] || die "no /usr/bin/python3 (apt-get install python3-pyverbs)"
SOFTRDMA=$BINDIR/softrdma
[[ -x $SOFTRDMA ]] || die "no $SOFTRDMA"

# Skip reasons that are expected here, as extended regexes (the whole reason must match).
EXPECTED_SKIPS=(
    "Can not run the test over non MLX5 device"                 # mlx5 vendor tests
    "Could not open mlx5 context \(This is not an MLX5 device\)"
    "Can not run the test over non EFA device"                  # EFA vendor tests
    "PCI device must be passed by the user"                     # mlx5 VFIO tests
    "Converting timestamp to nanoseconds is not supported"      # mlx5dv clock conversion
    "Tag matching is not supported"                             # mlx5 only (not in rxe)
    "Allocating dmabuf is not supported by .*"                  # needs a GPU render node
    "cuda-python 12\.0\+ must be installed to run CUDA tests"   # needs CUDA
    "There are no huge pages of size 2M allocated"              # the machine has none
    "All gid indices populated, cannot check bad flow"          # our GID table has no holes
)
MIN_TESTS_LO=250
MIN_TESTS_NS=10
LIMIT_LO=420 # seconds; the whole run takes about 2 minutes
LIMIT_NS=120

SUITE=${SOFTRDMA_RDMA_CORE_TESTS:-/usr/share/doc/rdma-core/tests}
[[ -r $SUITE/run_tests.py ]] || die "no rdma-core test suite at $SUITE (apt-get install python3-pyverbs)"
copy=$CONF_WORK/suite
mkdir -p "$copy"
cp -r "$SUITE" "$copy/tests"
find "$copy/tests" -name '*.gz' -exec gunzip -f {} +
modules=()
for f in "$copy"/tests/test_*.py; do
    m=$(basename "$f" .py)
    [[ $m == test_rdmacm ]] || modules+=("$m")
done

# check_run <name> <output> <rc> <min tests>: records PASS or FAIL for one run.
check_run() {
    local name=$1 out=$2 rc=$3 min=$4 ran bad reason ok=1 r
    ran=$(sed -n 's/^Ran \([0-9]*\) tests\? in .*/\1/p' "$out" | tail -1)
    if ((rc == 124 || rc == 137)); then
        fail "$name: the suite did not finish in time (hang?)"; dump_file "$name" "$out" 40; return
    fi
    if [[ -z $ran ]] || ((ran < min)); then
        fail "$name: ran ${ran:-no} tests, expected at least $min"; dump_file "$name" "$out" 40; return
    fi
    bad=$(grep -E '\.\.\. (ERROR|FAIL)$|^(ERROR|FAIL): ' "$out" | sort -u)
    if [[ -n $bad ]] || ! grep -qE '^OK( \(|$)' "$out"; then
        fail "$name: errors or failures (exit $rc):"; printf '%s\n' "$bad" | head -30
        grep -A12 -E '^(ERROR|FAIL): ' "$out" | head -80
        ok=0
    fi
    while IFS= read -r reason; do
        local known=0
        for r in "${EXPECTED_SKIPS[@]}"; do
            [[ $reason =~ ^($r)$ ]] && { known=1; break; }
        done
        ((known)) || { fail "$name: unexpected skip: '$reason'"; ok=0; }
    done < <(grep -oE "\.\.\. skipped '.*'$" "$out" | sed -E "s/^\.\.\. skipped '(.*)'$/\1/" | sort -u)
    log "   $name: $(grep -E '^(OK|FAILED)' "$out" | tail -1), $ran tests; skips by reason:"
    grep -oE "\.\.\. skipped '.*'$" "$out" | sed -E "s/^\.\.\. skipped //" | sort | uniq -c | sort -rn |
        sed 's/^/      /'
    ((ok)) && pass "$name: $ran tests, $(grep -cE '\.\.\. ok$' "$out") ok, every skip expected"
}

# 1. sr_lo, every module but test_rdmacm.
out=$CONF_WORK/suite_lo.out
log "-- suite on sr_lo: ${#modules[@]} modules"
(cd "$copy" && timeout -k 5 "$LIMIT_LO" "$SOFTRDMA" run -- /usr/bin/python3 tests/run_tests.py \
    --dev sr_lo -v "${modules[@]}" >"$out" 2>&1 </dev/null)
check_run suite.sr_lo "$out" $? "$MIN_TESTS_LO"

# 2. test_rdmacm on a veth device in a namespace made (and removed) here.
ns=sr_suite$$
trap 'ip netns del "$ns" 2>/dev/null; conf_cleanup' EXIT
if ! ip netns add "$ns" 2>/dev/null; then
    fail "suite.rdmacm: cannot create a network namespace (needs CAP_NET_ADMIN)"
else
    ip -n "$ns" link add srs0 type veth peer name srs1 &&
        ip -n "$ns" addr add 10.78.0.1/24 dev srs0 &&
        ip -n "$ns" link set srs0 up && ip -n "$ns" link set srs1 up && ip -n "$ns" link set lo up
    out=$CONF_WORK/suite_ns.out
    log "-- suite test_rdmacm on sr_srs0 in namespace $ns"
    (cd "$copy" && timeout -k 5 "$LIMIT_NS" ip netns exec "$ns" "$SOFTRDMA" run -- /usr/bin/python3 \
        tests/run_tests.py --dev sr_srs0 -v test_rdmacm >"$out" 2>&1 </dev/null)
    check_run suite.rdmacm "$out" $? "$MIN_TESTS_NS"
    ip netns del "$ns"
fi
conf_finish
