#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified udaddy (rdmacm-utils) over 127.0.0.1 on our librdmacm.so.1
# + libibverbs.so.1: RDMA_PS_UDP ids, SIDR-style rdma_connect/rdma_accept, ESTABLISHED with
# param.ud (address handle, QPN, Q_Key), UD SENDs to the server and replies built with
# ibv_create_ah_from_wc. udaddy always uses UDP port 7174 (it has no port option).
#   1. udaddy  /  udaddy -s 127.0.0.1
#   2. udaddy -c 10 -C 50 on both sides (ten ids, fifty messages each way per id)
#   3. one server (-c 3) and three clients started together
# Every process exits 0 and prints "return status 0".
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog udaddy rdmacm-utils

UDADDY_PORT=7174

udp_bound() {
    local hex
    hex=$(printf '%04X' "$1")
    awk -v p=":$hex" 'FNR > 1 && substr($2, length($2) - 4) == p { found = 1 }
                      END { exit !found }' /proc/net/udp /proc/net/udp6 2>/dev/null
}

# uda_case <name> <clients> <server args> -- <client args>
uda_case() {
    local name=$1 clients=$2 before=$CONF_FAILS t spid i k rc
    shift 2
    local -a sargs=() cargs=() cpids=()
    while (($#)) && [[ $1 != -- ]]; do sargs+=("$1"); shift; done
    shift
    cargs=("$@")
    t=$(step_timeout) || { fail "$name: time budget exhausted"; return 1; }
    if udp_bound "$UDADDY_PORT"; then fail "$name: UDP port $UDADDY_PORT is taken"; return 1; fi
    LD_LIBRARY_PATH=$LIBDIR timeout -k 5 "$t" "${LINEBUF[@]}" udaddy "${sargs[@]}" \
        >"$CONF_WORK/$name.server.out" 2>&1 </dev/null &
    spid=$!
    CONF_PIDS+=("$spid")
    for ((i = 0; i < 100; i++)); do
        udp_bound "$UDADDY_PORT" && break
        is_alive "$spid" || break
        sleep 0.1
    done
    for ((k = 1; k <= clients; k++)); do
        LD_LIBRARY_PATH=$LIBDIR timeout -k 5 "$t" "${LINEBUF[@]}" udaddy -s 127.0.0.1 "${cargs[@]}" \
            >"$CONF_WORK/$name.client$k.out" 2>&1 </dev/null &
        cpids+=($!)
        CONF_PIDS+=($!)
    done
    for ((k = 1; k <= clients; k++)); do
        wait "${cpids[k - 1]}"
        rc=$?
        forget_pid "${cpids[k - 1]}"
        if ((rc != 0)); then
            fail "$name: client $k exited $rc"
            dump_file "$name client $k" "$CONF_WORK/$name.client$k.out"
        else
            expect_grep "$name" "$CONF_WORK/$name.client$k.out" '^return status 0$' "client $k did not print 'return status 0'"
        fi
    done
    wait "$spid"
    rc=$?
    forget_pid "$spid"
    if ((rc != 0)); then
        fail "$name: server exited $rc"
        dump_file "$name server" "$CONF_WORK/$name.server.out"
    else
        expect_grep "$name" "$CONF_WORK/$name.server.out" '^return status 0$' "server did not print 'return status 0'"
        expect_grep "$name" "$CONF_WORK/$name.server.out" '^data transfers complete$' "server did not complete its transfers"
    fi
    ((CONF_FAILS == before)) && pass "$name: server ${sargs[*]:-(defaults)}, $clients client(s) ${cargs[*]}"
}

uda_case udaddy.single 1 --
uda_case udaddy.c10 1 -c 10 -C 50 -- -c 10 -C 50
uda_case udaddy.three_clients 3 -c 3 --

conf_finish
