#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# `softrdma doctor`: on this machine nothing fails; a program linked to libibverbs is found to
# load ours; one that is not is flagged; a wrong SOFTRDMA_LIBDIR fails (exit 1) with its fix;
# run as a plain user (when we are root) it warns that raw packet QPs need CAP_NET_RAW.
#   usage: doctor.sh <libdir> <bindir>
set -uo pipefail
bin=${2:?bindir}
fail() { echo "FAIL: $*"; exit 1; }
out=$("$bin/softrdma" doctor /usr/bin/ibv_devices); rc=$?
echo "$out"
((rc == 0)) || fail "doctor exits $rc on this machine"
grep -q "^ok    libraries: " <<<"$out" || fail "no libraries line"
grep -q "^ok    .*sr_lo among them" <<<"$out" || fail "no devices line"
if [[ -x /usr/bin/ibv_devices ]]; then
    grep -q "^ok    /usr/bin/ibv_devices: loads our libibverbs" <<<"$out" || fail "ibv_devices not found to load ours"
fi
out=$("$bin/softrdma" doctor /bin/true); rc=$?
((rc == 0)) && grep -q "^warn  /bin/true: links neither" <<<"$out" || fail "/bin/true not flagged as not using verbs"
out=$(SOFTRDMA_LIBDIR=/nonexistent "$bin/softrdma" doctor); rc=$?
((rc == 1)) && grep -q "^fail  no libibverbs.so.1 in /nonexistent.*fix:" <<<"$out" ||
    fail "a wrong SOFTRDMA_LIBDIR: exit $rc, $(head -1 <<<"$out")"
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$bin/softrdma" doctor); rc=$?
    ((rc == 0)) || fail "doctor as nobody exits $rc: $out"
    grep -q "^warn  no CAP_NET_RAW: raw packet QPs fail with EPERM" <<<"$out" ||
        fail "as nobody, no warning about CAP_NET_RAW"
    grep -qE "^(ok|warn)  .*user namespace" <<<"$out" || fail "as nobody, no user-namespace line"
fi
echo "PASS: softrdma doctor"
