#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified mckey (rdmacm-utils) on loopback over our librdmacm.so.1 +
# libibverbs.so.1: rdma_resolve_addr to a group, rdma_join_multicast_ex (full member and
# send-only full member), MULTICAST_JOIN with param.ud, UD SEND WITH IMM to the group QPN
# 0xFFFFFF, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (-l), rdma_leave_multicast.
# Each case starts two receivers, waits until both joined, then one sender; every receiver
# must get all its messages (mckey polls until it has them) and every process exit 0.
# Groups are drawn at random per run so parallel runs never hear each other.
#   1. IPv4 group, -b 127.0.0.1            2. the sender joins send-only (-o)
#   3. IPv6 group, -b ::1                  4. two ids per process (-c 2), 1 KiB messages
#   5. the sender's QP blocks its own multicast loopback (-l)
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog mckey rdmacm-utils

G4="239.255.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))"
G6=$(printf 'ff12::5e:%x:%x' $((RANDOM)) $((RANDOM)))

# mc_case <name> <group> <bind> <MGID receivers must report> "<receiver args>" "<sender args>"
mc_case() {
    local name=$1 group=$2 bind=$3 mgid=$4 before=$CONF_FAILS t k rc i spid
    local -a rargs sargs rpids=()
    read -r -a rargs <<<"$5"
    read -r -a sargs <<<"$6"
    t=$(step_timeout) || { fail "$name: time budget exhausted"; return 1; }
    for k in 1 2; do
        LD_LIBRARY_PATH=$LIBDIR timeout -k 5 "$t" "${LINEBUF[@]}" mckey -m "$group" -b "$bind" "${rargs[@]}" \
            >"$CONF_WORK/$name.recv$k.out" 2>&1 </dev/null &
        rpids+=($!)
        CONF_PIDS+=($!)
    done
    # Both receivers are members before the sender sends (mckey itself waits 3 s after joining).
    for ((i = 0; i < 100; i++)); do
        (($(grep -l '^mckey: joined' "$CONF_WORK/$name".recv*.out 2>/dev/null | wc -l) == 2)) && break
        sleep 0.1
    done
    LD_LIBRARY_PATH=$LIBDIR timeout -k 5 "$t" "${LINEBUF[@]}" mckey -m "$group" -b "$bind" -s "${sargs[@]}" \
        >"$CONF_WORK/$name.send.out" 2>&1 </dev/null &
    spid=$!
    CONF_PIDS+=("$spid")
    wait "$spid"
    rc=$?
    forget_pid "$spid"
    if ((rc != 0)); then
        fail "$name: sender exited $rc"
        dump_file "$name sender" "$CONF_WORK/$name.send.out"
    else
        expect_grep "$name" "$CONF_WORK/$name.send.out" '^data transfers complete$' "sender did not send"
    fi
    for k in 1 2; do
        wait "${rpids[k - 1]}"
        rc=$?
        forget_pid "${rpids[k - 1]}"
        if ((rc != 0)); then
            fail "$name: receiver $k exited $rc$( ((rc == 124)) && echo ' (timed out: datagrams lost)')"
            dump_file "$name receiver $k" "$CONF_WORK/$name.recv$k.out"
        else
            expect_grep "$name" "$CONF_WORK/$name.recv$k.out" '^data transfers complete$' "receiver $k did not complete"
            expect_grep "$name" "$CONF_WORK/$name.recv$k.out" "^mckey: joined dgid: $mgid mlid 0x0 sl 0\$" "receiver $k: wrong MGID"
        fi
    done
    ((CONF_FAILS == before)) && pass "$name: group $group, receivers ${5:-(defaults)}, sender ${6:-(defaults)}"
}

mc_case mckey.ipv4 "$G4" 127.0.0.1 "::ffff:$G4" "-C 50" "-C 50"
mc_case mckey.send_only "$G4" 127.0.0.1 "::ffff:$G4" "-C 50" "-C 50 -o"
mc_case mckey.ipv6 "$G6" ::1 "$G6" "-C 50" "-C 50"
mc_case mckey.two_ids "$G4" 127.0.0.1 "::ffff:$G4" "-c 2 -C 20 -S 1024" "-c 2 -C 20 -S 1024"
mc_case mckey.block_self_loopback "$G4" 127.0.0.1 "::ffff:$G4" "-C 50" "-C 50 -l"

conf_finish
