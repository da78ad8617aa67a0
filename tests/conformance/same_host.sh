#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified rping on one host moves its connection to shared memory
# (docs/wire.md §6.10), and stays on TCP whenever an end cannot or will not take part:
#   1. both ends as they are: each end's SOFTRDMA_DEBUG line says "shared memory with qpn",
#      and 500 pings verified by rping -V (RDMA READ, WRITE and SENDs) pass;
#   2. the server with SOFTRDMA_SHM=0: both say why they stay on TCP, the pings pass;
#   3. (as root) the client as user nobody: the server (the end that accepted the connection)
#      offers, and nobody may not open a root process's segment, so the connection stays on
#      TCP with the reason in one line, and the pings pass.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog rping rdmacm-utils

COUNT=500

# shm_case <name> <server prefix...> -- <client prefix...>: rping -V with debug lines on.
shm_case() {
    local name=$1
    shift
    local -a sp=() cp=()
    while (($#)) && [[ $1 != -- ]]; do sp+=("$1"); shift; done
    shift
    cp=("$@")
    run_pair "$name" "${sp[@]}" env SOFTRDMA_DEBUG=1 rping -s -a 127.0.0.1 -p @PORT@ -C "$COUNT" -V -- \
        "${cp[@]}" env SOFTRDMA_DEBUG=1 rping -c -a 127.0.0.1 -p @PORT@ -C "$COUNT" -V
}

if shm_case same_host.shm --; then
    if grep -q "shared memory with qpn" "$PAIR_SERVER_OUT" && grep -q "shared memory with qpn" "$PAIR_CLIENT_OUT"; then
        pass "same_host.shm: both ends moved to shared memory; $COUNT pings verified (-V)"
    else
        fail "same_host.shm: an end did not say it moved to shared memory"
        dump_file "same_host.shm server" "$PAIR_SERVER_OUT"
        dump_file "same_host.shm client" "$PAIR_CLIENT_OUT"
    fi
fi

if shm_case same_host.off env SOFTRDMA_SHM=0 --; then
    if grep -q "stays on TCP: SOFTRDMA_SHM=0" "$PAIR_SERVER_OUT" &&
        grep -q "stays on TCP: the peer does not offer shared memory" "$PAIR_CLIENT_OUT" &&
        ! grep -q "shared memory with qpn" "$PAIR_SERVER_OUT" "$PAIR_CLIENT_OUT"; then
        pass "same_host.off: SOFTRDMA_SHM=0 on the server keeps both ends on TCP, each says why; $COUNT pings verified"
    else
        fail "same_host.off: expected both ends on TCP with their reasons"
        dump_file "same_host.off server" "$PAIR_SERVER_OUT"
        dump_file "same_host.off client" "$PAIR_CLIENT_OUT"
    fi
fi

if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    if shm_case same_host.other_user -- setpriv --reuid=65534 --regid=65534 --clear-groups; then
        if grep -qE "stays on TCP: (declined the offer|the peer declined): the segment cannot be opened" \
            "$PAIR_SERVER_OUT" "$PAIR_CLIENT_OUT" &&
            ! grep -q "shared memory with qpn" "$PAIR_SERVER_OUT" "$PAIR_CLIENT_OUT"; then
            pass "same_host.other_user: a client of another user stays on TCP (the segment cannot be opened); $COUNT pings verified"
        else
            fail "same_host.other_user: expected TCP with the reason 'the segment cannot be opened'"
            dump_file "same_host.other_user server" "$PAIR_SERVER_OUT"
            dump_file "same_host.other_user client" "$PAIR_CLIENT_OUT"
        fi
    fi
else
    note "same_host.other_user: not root (or no setpriv): the other-user case needs both users"
fi

conf_finish
