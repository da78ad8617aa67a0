#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified ibv_srq_pingpong (RC QPs sharing one SRQ) over
# 127.0.0.1 on our libibverbs.so.1: `-g 0` (16 QPs by default) and `-g 0 -q 4 -n 200`.
# Both sides must exit 0 and print the "<iters> iters in ... usec/iter" and
# "<bytes> bytes in ..." lines.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"
require_prog ibv_srq_pingpong

P=ibv_srq_pingpong
pingpong_pair srq.default $P 1000 4096 -g 0
pingpong_pair srq.q4      $P 200 4096 -g 0 -q 4 -n 200

conf_finish
