#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified perftest over UD QPs (-c UD), buffer addresses exchanged
# over perftest's own TCP side channel, on 127.0.0.1 through our libibverbs.so.1:
#   ib_send_lat -c UD -x 0 -n 1000 (2-byte ping-pong): both sides exit 0 and the client
#   prints its result line.
#   ib_send_bw -c UD: 4 KiB x 1000, all sizes (-a), 64 B x 20000 (message rate). Its server
#   waits for every datagram, so a lost one hangs it: this passes because UD flow control
#   (docs/wire.md §8.1) holds senders back instead of overflowing the receiver's socket.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"
for p in ib_send_lat ib_send_bw; do require_pkg_prog "$p" perftest; done

S='[[:space:]]'
N='[0-9]+(\.[0-9]+)?'

# ud_case <label> <prog> <iterations> <result line regex> [extra args...]
ud_case() {
    local label=$1 prog=$2 iters=$3 re=$4 name=perftest.ud.$1 before=$CONF_FAILS line
    shift 4
    perftest_pair "$name" "$prog" -c UD -d sr_lo -x 0 -n "$iters" "$@" -p @PORT@ -- \
        "$prog" -c UD -d sr_lo -x 0 -n "$iters" "$@" -p @PORT@ 127.0.0.1 || return 1
    expect_grep "$name" "$PAIR_CLIENT_OUT" "^$S*Connection type$S*:$S*UD($S|\$)" "client does not report 'Connection type : UD'" || return 1
    expect_grep "$name" "$PAIR_CLIENT_OUT" "$re" "client did not print the result line" || return 1
    line=$(grep -E -- "$re" "$PAIR_CLIENT_OUT" | head -1 | awk '{ $1 = $1; print }')
    ((CONF_FAILS == before)) && pass "$name: '$line'"
}

ud_case ib_send_lat ib_send_lat 1000 "^$S*2$S+1000($S+$N){7}$S*\$"
ud_case ib_send_bw ib_send_bw 1000 "^$S*4096$S+1000($S+$N){3}$S*\$"
ud_case ib_send_bw_all_sizes ib_send_bw 1000 "^$S*4096$S+1000($S+$N){3}$S*\$" -a
ud_case ib_send_bw_64B ib_send_bw 20000 "^$S*64$S+20000($S+$N){3}$S*\$" -s 64

conf_finish
