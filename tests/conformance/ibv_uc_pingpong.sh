#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified ibv_uc_pingpong (UC QP) over 127.0.0.1 on our
# libibverbs.so.1: `-g 0` and `-g 0 -s 65536 -n 200`. Both sides must exit 0 and print
# the "<iters> iters in ... usec/iter" and "<bytes> bytes in ..." lines.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"
require_prog ibv_uc_pingpong

P=ibv_uc_pingpong
pingpong_pair uc.default $P 1000 4096 -g 0
pingpong_pair uc.s64k    $P 200 65536 -g 0 -s 65536 -n 200

conf_finish
