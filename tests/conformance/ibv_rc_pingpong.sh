#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified ibv_rc_pingpong (RC QP, SEND/RECV) over 127.0.0.1,
# server and client both on our libibverbs.so.1. Each variant must exit 0 on both
# sides and print the "<iters> iters in ... usec/iter" and "<bytes> bytes in ..."
# lines on both sides:
#   -g 0 (default device, x3 for flakiness), -g 0 -e (CQ events), -g 0 -N (new post-send
#   API), -s 1, -s 4096, -s 65536 -n 200, -s 1048576 -n 50, -g 0 -d sr_lo (explicit
#   device; both sides must then show GID ::ffff:127.0.0.1).
# Negative checks (the harness must be able to see a failure):
#   - a client pointed at a port where nothing listens fails (non-zero) before the timeout;
#   - run_pair reports failure when the client talks to the wrong port, and when the
#     server cannot start (unknown device).
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"
require_prog ibv_rc_pingpong

P=ibv_rc_pingpong

for run in 1 2 3; do
    pingpong_pair "rc.default.$run" $P 1000 4096 -g 0
done
pingpong_pair rc.events   $P 1000 4096 -g 0 -e
pingpong_pair rc.new_send $P 1000 4096 -g 0 -N
pingpong_pair rc.s1       $P 1000 1 -g 0 -s 1
pingpong_pair rc.s4096    $P 1000 4096 -g 0 -s 4096
pingpong_pair rc.s64k     $P 200 65536 -g 0 -s 65536 -n 200
pingpong_pair rc.s1m      $P 50 1048576 -g 0 -s 1048576 -n 50
if pingpong_pair rc.dev_sr_lo $P 1000 4096 -g 0 -d sr_lo; then
    for f in "$PAIR_SERVER_OUT" "$PAIR_CLIENT_OUT"; do
        expect_grep rc.dev_sr_lo "$f" '^ +local address: .*GID ::ffff:127\.0\.0\.1$' \
            "-d sr_lo did not use sr_lo's GID ::ffff:127.0.0.1"
    done
fi

# Negative 1: nothing listens on the port -> the client must fail, not hang.
port=$(free_port)
if port_listening "$port"; then
    fail "rc.no_server: free port $port is already listening (race); cannot run the check"
else
    run_cmd rc.no_server $P -g 0 -p "$port" 127.0.0.1
    if ((RUN_RC != 0 && RUN_RC != 124 && RUN_RC != 125 && RUN_RC != 137)); then
        pass "rc.no_server: client with no server fails (exit $RUN_RC: $(grep -m1 -i "couldn't" "$RUN_OUT"))"
    else
        fail "rc.no_server: client with nobody listening on 127.0.0.1:$port: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT"); expected a prompt non-zero exit"
        dump_file rc.no_server "$RUN_OUT"
    fi
fi

# Negative 2: harness self-test. The client connects to a port where nothing listens,
# so the client fails and the server never gets its peer: run_pair must say "failed".
other=$(free_port)
CONF_EXPECT_FAIL=1
if run_pair rc.selftest.wrong_port $P -g 0 -p @PORT@ -- $P -g 0 -p "$other" 127.0.0.1; then
    CONF_EXPECT_FAIL=0
    fail "rc.selftest.wrong_port: run_pair reported success for a client aimed at the wrong port"
else
    CONF_EXPECT_FAIL=0
    if ((PAIR_CLIENT_RC != 0 && PAIR_SERVER_RC != 0)); then
        pass "rc.selftest.wrong_port: run_pair detects the failure (server: $(describe_rc "$PAIR_SERVER_RC" 0), client: $(describe_rc "$PAIR_CLIENT_RC" 0))"
    else
        fail "rc.selftest.wrong_port: expected both sides to fail, got server $PAIR_SERVER_RC, client $PAIR_CLIENT_RC"
    fi
fi

# Negative 3: harness self-test. The server cannot open its device: run_pair must
# notice it never listens, promptly, and not run the client.
CONF_EXPECT_FAIL=1
t0=$SECONDS
if run_pair rc.selftest.bad_device $P -g 0 -d no_such_device -p @PORT@ -- $P -g 0 -d no_such_device -p @PORT@ 127.0.0.1; then
    CONF_EXPECT_FAIL=0
    fail "rc.selftest.bad_device: run_pair reported success for a server on a nonexistent device"
else
    CONF_EXPECT_FAIL=0
    if ((PAIR_SERVER_RC != 0 && SECONDS - t0 < 30)); then
        pass "rc.selftest.bad_device: run_pair detects a server that exits before listening (server exit $PAIR_SERVER_RC)"
    else
        fail "rc.selftest.bad_device: server exit $PAIR_SERVER_RC after $((SECONDS - t0))s; expected a prompt non-zero exit"
    fi
fi

conf_finish
