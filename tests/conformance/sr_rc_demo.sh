#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: the project's main job, sr_rc_demo, as two processes over 127.0.0.1.
#   server: sr_rc_demo -s -p PORT        client: sr_rc_demo -c 127.0.0.1 -p PORT
# Both must exit 0 and print "OK"; the server must show the SEND it received and
# the verified RDMA WRITE; the client must show the verified RDMA READ.
# Run 3 times to catch flakiness.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"

DEMO=$BINDIR/sr_rc_demo
[[ -x $DEMO ]] || die "$DEMO not found or not executable (build target sr_rc_demo)"

for run in 1 2 3; do
    name=sr_rc_demo.$run
    before=$CONF_FAILS
    if run_pair "$name" "$DEMO" -s -p @PORT@ -- "$DEMO" -c 127.0.0.1 -p @PORT@; then
        expect_grep "$name" "$PAIR_SERVER_OUT" '^server: received "Hello from softrdma over RC!"$' \
            'server did not print the SEND it received'
        expect_grep "$name" "$PAIR_SERVER_OUT" '^server: RDMA WRITE of [1-9][0-9]* bytes verified, client said "done"$' \
            'server did not print the verified RDMA WRITE line'
        expect_grep "$name" "$PAIR_SERVER_OUT" '^server: OK$' 'server did not print OK'
        expect_grep "$name" "$PAIR_CLIENT_OUT" '^client: RDMA READ of [1-9][0-9]* bytes verified$' \
            'client did not print the verified RDMA READ line'
        expect_grep "$name" "$PAIR_CLIENT_OUT" '^client: OK$' 'client did not print OK'
        ((CONF_FAILS == before)) && pass "$name: $(grep -h 'verified' "$PAIR_SERVER_OUT" "$PAIR_CLIENT_OUT" | tr '\n' ' ')"
    fi
done

conf_finish
