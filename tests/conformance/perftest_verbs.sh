#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: all of Debian's unmodified perftest over RC on 127.0.0.1, through our
# libibverbs.so.1 / librdmacm.so.1: ib_send_bw/lat, ib_write_bw/lat, ib_read_bw/lat and
# ib_atomic_bw/lat (compare-and-swap and fetch-and-add), each in the default raw-verbs mode
# (QP numbers exchanged over perftest's own TCP socket) and with -R (RDMA CM: the client must
# report "rdma_cm QPs : ON" and "Data ex. method : rdma_cm"). The options are in
# perftest_options.sh.
#
# Each case: both sides exit 0 and the client prints perftest's result line for the size it
# asked for with a non-zero figure, and a sample of the data is checked (lib/perftest.sh).
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"
. "$(dirname "${BASH_SOURCE[0]}")/lib/perftest.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
cm_init
require_prog ldd
check_resolves_to_ours perftest.ldd ib_send_bw librdmacm.so.1 libibverbs.so.1

for mode in raw cm; do
    R=()
    [[ $mode == cm ]] && R=(-R)
    pt "$mode.send_bw" $K64 0 0 "$(bw $K64)" ib_send_bw "${R[@]}" -n 1000
    pt "$mode.write_bw" $K64 0 0 "$(bw $K64)" ib_write_bw "${R[@]}" -n 1000
    pt "$mode.read_bw" 0 $K64 0 "$(bw $K64)" ib_read_bw "${R[@]}" -n 1000
    pt "$mode.send_lat" - - 0 "$(lat 2)" ib_send_lat "${R[@]}" -n 1000
    pt "$mode.send_lat_4k" 4096 4096 0 "$(lat 4096)" ib_send_lat "${R[@]}" -n 1000 -s 4096
    pt "$mode.write_lat" - - 0 "$(lat 2)" ib_write_lat "${R[@]}" -n 1000
    pt "$mode.read_lat" - - 0 "$(lat 2)" ib_read_lat "${R[@]}" -n 1000
    pt "$mode.read_lat_4k" 0 4096 0 "$(lat 4096)" ib_read_lat "${R[@]}" -n 1000 -s 4096
    pt "$mode.atomic_bw_cas" - - 0 "$(bw 8)" ib_atomic_bw "${R[@]}" -n 1000
    pt "$mode.atomic_bw_faa" - - 0 "$(bw 8)" ib_atomic_bw "${R[@]}" -n 1000 -A FETCH_AND_ADD
    pt "$mode.atomic_lat_cas" - - 0 "$(lat 8)" ib_atomic_lat "${R[@]}" -n 1000
    pt "$mode.atomic_lat_faa" - - 0 "$(lat 8)" ib_atomic_lat "${R[@]}" -n 1000 -A FETCH_AND_ADD
done
# write_lat fills its buffer with zeros after the CM connects, where the shim cannot mark it:
# its data is checked in raw mode, where each side's ping-pong marker takes one word.
pt raw.write_lat_4k 4088 4088 16 "$(lat 4096)" ib_write_lat -n 1000 -s 4096

conf_finish
