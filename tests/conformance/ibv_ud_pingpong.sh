#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified ibv_ud_pingpong (UD QP, address handles, GRH in every
# receive buffer) over 127.0.0.1 on our libibverbs.so.1: `-g 0` with the default 1 KiB and
# with 4 KiB (one MTU) messages. Both sides must exit 0 and print the iteration and byte lines.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"
require_prog ibv_ud_pingpong

P=ibv_ud_pingpong
pingpong_pair ud.default $P 1000 1024 -g 0
pingpong_pair ud.s4k     $P 500 4096 -g 0 -s 4096 -n 500
pingpong_pair ud.events  $P 500 1024 -g 0 -e -n 500

conf_finish
