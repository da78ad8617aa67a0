#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified rping (rdmacm-utils) over 127.0.0.1, both sides on our
# librdmacm.so.1 + libibverbs.so.1. Every ping is a SEND of the client's buffer address,
# an RDMA READ by the server, a SEND back, a SEND of the sink address, an RDMA WRITE of the
# data back and a SEND "go ahead": 1000 pings exercise all of them through a CM-made RC QP.
#   1. rping -s -a 127.0.0.1 -p PORT -C 1000 -v  /  rping -c -a 127.0.0.1 -p PORT -C 1000 -v
#      (x2) both exit 0; the client prints exactly 1000 "ping data: rdma-ping-N: ..." lines,
#      N = 0..999 in order, the last being rdma-ping-999:, each with exactly the bytes rping
#      put in its buffer (so the RDMA READ and RDMA WRITE moved the right data); the server
#      prints the same 1000 lines as "server ping data: ...".
#   2. the same with -q on both sides: rping creates its own QP with ibv_create_qp and moves
#      it through the states with rdma_init_qp_attr, then calls rdma_accept / rdma_establish.
#   3. a quiet run (no -v): both exit 0, no ping data printed.
#   4. a client aimed at a port where nothing listens fails promptly (non-zero, no hang).
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog rping rdmacm-utils
require_prog ldd

check_resolves_to_ours rping.ldd rping librdmacm.so.1 libibverbs.so.1

COUNT=1000

# check_ping_lines <file> <prefix>: the <prefix>ping data lines are exactly rdma-ping-0..COUNT-1,
# in order, each with rping's 64-byte pattern (63 characters + NUL): "rdma-ping-N: " followed
# by letters starting at chr(65 + N % 58), wrapping from 'z' (122) back to 'A' (65).
# Prints a reason and returns 1 on the first difference.
check_ping_lines() {
    awk -v pre="$2" -v count="$COUNT" '
        function expect(p,    s, c, n, i) {
            s = "rdma-ping-" p ": "
            c = 65 + (p % 58)
            n = 63 - length(s)
            for (i = 0; i < n; i++) { s = s sprintf("%c", c); c++; if (c > 122) c = 65 }
            return pre "ping data: " s
        }
        index($0, pre "ping data: ") == 1 {
            if ($0 != expect(seen + 0)) {
                printf "ping line %d differs:\n    got:      %s\n    expected: %s\n", seen + 1, $0, expect(seen + 0)
                bad = 1; exit
            }
            seen++
        }
        END {
            if (bad) exit 1
            if (seen != count) { printf "%d ping data lines, expected %d\n", seen, count; exit 1 }
        }' "$1"
}

# rping_case <name> <verbose 0|1> <extra args...>
rping_case() {
    local name=$1 verbose=$2 why before=$CONF_FAILS
    shift 2
    run_pair "$name" rping -s -a 127.0.0.1 -p @PORT@ -C "$COUNT" "$@" -- \
        rping -c -a 127.0.0.1 -p @PORT@ -C "$COUNT" "$@" || return 1
    if ((verbose)); then
        if ! why=$(check_ping_lines "$PAIR_CLIENT_OUT" ""); then
            fail "$name: client ping data: $why"
        elif ! why=$(check_ping_lines "$PAIR_SERVER_OUT" "server "); then
            fail "$name: server ping data: $why"
        fi
        expect_grep "$name" "$PAIR_CLIENT_OUT" "^ping data: rdma-ping-$((COUNT - 1)): " \
            "client's last ping is not rdma-ping-$((COUNT - 1)):"
        local last
        last=$(grep -E '^ping data: ' "$PAIR_CLIENT_OUT" | tail -1)
        [[ $last == "ping data: rdma-ping-$((COUNT - 1)): "* ]] ||
            fail "$name: the client's last ping data line is '$last', not rdma-ping-$((COUNT - 1)):"
    else
        if grep -qE 'ping data' "$PAIR_CLIENT_OUT" "$PAIR_SERVER_OUT"; then
            fail "$name: ping data printed without -v"
        fi
    fi
    if grep -qE 'data mismatch|error|failed' "$PAIR_CLIENT_OUT" "$PAIR_SERVER_OUT"; then
        fail "$name: an error was printed"
    fi
    if ((CONF_FAILS == before)); then
        if ((verbose)); then
            pass "$name: rping $* -C $COUNT: $COUNT verified pings ($(grep -E '^ping data: ' "$PAIR_CLIENT_OUT" | tail -1 | cut -c1-40)...)"
        else
            pass "$name: rping -C $COUNT (no -v): both sides exit 0, nothing printed"
        fi
        return 0
    fi
    dump_file "$name server" "$PAIR_SERVER_OUT"
    dump_file "$name client" "$PAIR_CLIENT_OUT"
    return 1
}

rping_case rping.verbose.1 1 -v
rping_case rping.verbose.2 1 -v
rping_case rping.self_qp.1 1 -v -q
rping_case rping.self_qp.2 1 -v -q
rping_case rping.quiet 0

# Nothing listens: the client must fail (RDMA_CM_EVENT_REJECTED, as a RoCE port with no
# listener answers) and not hang.
port=$(free_port)
if port_listening "$port"; then
    fail "rping.no_server: free port $port is already listening (race); cannot run the check"
else
    t0=$SECONDS
    run_cmd rping.no_server rping -c -a 127.0.0.1 -p "$port" -C 1
    if ((RUN_RC != 0 && RUN_RC != 124 && RUN_RC != 125 && RUN_RC != 137 && SECONDS - t0 < 20)); then
        pass "rping.no_server: client with no server fails in $((SECONDS - t0))s (exit $RUN_RC: $(grep -m1 -iE 'reject|error|fail' "$RUN_OUT"))"
    else
        fail "rping.no_server: client with nobody listening on 127.0.0.1:$port: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT") after $((SECONDS - t0))s; expected a prompt non-zero exit"
        dump_file rping.no_server "$RUN_OUT"
    fi
fi

conf_finish
