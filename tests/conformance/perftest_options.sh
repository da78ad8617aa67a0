#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified perftest with its options, over RC on 127.0.0.1 through our
# libraries: bidirectional (-b), 4 QPs (-q 4), all sizes 2 B to 8 MiB (-a), inline (-I),
# --report_gbits, every WR signalled and one completion per 100 (-Q), CQ events (-e); some
# with -R. Each case checks the result line and a sample of the data (lib/perftest.sh).
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"
. "$(dirname "${BASH_SOURCE[0]}")/lib/perftest.sh"

# Bidirectional: both sides send and receive.
pt bidir.send_bw $K64 $K64 0 "$(bw $K64)" ib_send_bw -b -n 1000
pt bidir.write_bw $K64 $K64 0 "$(bw $K64)" ib_write_bw -b -n 1000
pt bidir.read_bw $K64 $K64 0 "$(bw $K64)" ib_read_bw -b -n 1000 -R
pt bidir.atomic_bw - - 0 "$(bw 8)" ib_atomic_bw -b -n 1000

# Four QPs: one message's worth per QP must arrive.
pt q4.send_bw $((4 * K64)) 0 0 "$(bw $K64)" ib_send_bw -q 4 -n 1000
pt q4.write_bw $((4 * K64)) 0 0 "$(bw $K64)" ib_write_bw -q 4 -n 1000 -R
pt q4.read_bw 0 $((4 * K64)) 0 "$(bw $K64)" ib_read_bw -q 4 -n 1000
pt q4.atomic_bw - - 0 "$(bw 8)" ib_atomic_bw -q 4 -n 1000 -A FETCH_AND_ADD

# All sizes, 2 B to 8 MiB: the largest message lands whole.
pt all.send_bw $M8 0 0 "$(bw 2) $(bw $M8)" ib_send_bw -a -n 100
pt all.write_bw $M8 0 0 "$(bw 2) $(bw $M8)" ib_write_bw -a -n 100
pt all.read_bw 0 $M8 0 "$(bw 2) $(bw $M8)" ib_read_bw -a -n 100 -R
pt all.send_lat $M8 $M8 0 "$(lat 2) $(lat $M8)" ib_send_lat -a -n 100
# write_lat leaves a marker word per size on both sides.
pt all.write_lat $((M8 - 512)) $((M8 - 512)) 512 "$(lat 2) $(lat $M8)" ib_write_lat -a -n 100
pt all.read_lat 0 $M8 0 "$(lat 2) $(lat $M8)" ib_read_lat -a -n 100

# Inline sends and writes (the payload travels inside the work request).
pt inline.send_lat 64 64 0 "$(lat 64)" ib_send_lat -I 64 -s 64 -n 1000
pt inline.write_lat 56 56 16 "$(lat 64)" ib_write_lat -I 64 -s 64 -n 1000
pt inline.send_bw 64 0 0 "$(bw 64)" ib_send_bw -I 64 -s 64 -n 1000
pt inline.write_bw 64 0 0 "$(bw 64)" ib_write_bw -I 64 -s 64 -n 1000

# Report in Gbit/s: the header says so.
if pt gbits.write_bw $K64 0 0 "$(bw $K64)" ib_write_bw --report_gbits -n 1000; then
    expect_grep perftest.gbits.write_bw "$PAIR_CLIENT_OUT" 'BW average\[Gb/sec\]' "no Gb/sec header"
fi
pt gbits.read_bw 0 $K64 0 "$(bw $K64)" ib_read_bw --report_gbits -n 1000 -R

# Completion moderation: every WR signalled, and one completion per 100 WRs.
pt cqmod1.write_bw $K64 0 0 "$(bw $K64)" ib_write_bw -Q 1 -n 1000
pt cqmod100.send_bw 4096 0 0 "$(bw 4096)" ib_send_bw -Q 100 -n 1000 -s 4096

# Completion events instead of polling.
pt events.send_bw $K64 0 0 "$(bw $K64)" ib_send_bw -e -n 1000
pt events.read_bw 0 $K64 0 "$(bw $K64)" ib_read_bw -e -n 1000
pt events.send_lat 4096 4096 0 "$(lat 4096)" ib_send_lat -e -n 1000 -s 4096
pt events.atomic_lat - - 0 "$(lat 8)" ib_atomic_lat -e -n 1000 -R

conf_finish
