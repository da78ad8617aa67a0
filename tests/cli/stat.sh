#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# `softrdma stat` and `softrdma res` on Debian's ib_write_bw, started the way the README tells
# a user (our libraries first on the library path): the counters move while it runs, the
# server receives what the client sends, -w prints rates, and res lists the QP and its MR.
#   usage: stat.sh <libdir> <bindir>
set -euo pipefail
lib=${1:?libdir} bin=${2:?bindir}
fail() { echo "FAIL: $*"; exit 1; }
command -v ib_write_bw >/dev/null || { echo "ib_write_bw missing (apt-get install perftest)"; exit 1; }
port=$((20000 + RANDOM % 20000))
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
export LD_LIBRARY_PATH=$lib
ib_write_bw -d sr_lo -x 0 -F -p "$port" -D 4 -s 65536 >/dev/null 2>&1 &
srv=$!; pids+=("$srv")
sleep 0.5
ib_write_bw -d sr_lo -x 0 -F -p "$port" -D 4 -s 65536 127.0.0.1 >/dev/null 2>&1 &
cli=$!; pids+=("$cli")
unset LD_LIBRARY_PATH
# Wait until the client's QP is sending (bounded).
for _ in $(seq 1 50); do
    "$bin/softrdma" stat --json "$cli" 2>/dev/null | grep -q '"state": "RTS"' && break
    sleep 0.1
done
s1=$("$bin/softrdma" stat --json "$cli")
r1=$("$bin/softrdma" stat --json "$srv")
sleep 0.5
s2=$("$bin/softrdma" stat --json "$cli")
r2=$("$bin/softrdma" stat --json "$srv")
watch=$("$bin/softrdma" stat -w -i 0.3 -n 2 "$cli")
res=$("$bin/softrdma" res "$cli")
all=$("$bin/softrdma" stat)
echo "$watch"
echo "$res"
python3 - "$s1" "$s2" "$r1" "$r2" <<'PY' || fail "counters did not move as sent"
import json, sys
def qp(doc):
    procs = json.loads(doc)["processes"]
    assert len(procs) == 1 and procs[0]["program"] == "ib_write_bw", procs
    qps = procs[0]["qps"]
    assert len(qps) == 1, qps
    return qps[0]["counters"]
s1, s2, r1, r2 = (qp(a) for a in sys.argv[1:5])
assert s2["sent_bytes"] > s1["sent_bytes"] > 0, (s1, s2)
assert r2["rcvd_bytes"] > r1["rcvd_bytes"] > 0, (r1, r2)
# What the server received, the client had sent (its count was read before the server's).
assert r1["rcvd_bytes"] >= s1["sent_bytes"] - 64 * 65536 and r1["rcvd_bytes"] <= s2["sent_bytes"], (s1, r1, s2)
# WRITEs of 65536 bytes: sent bytes are whole messages once nothing is in flight; packets
# are at least one per 65280-byte segment.
assert s2["sent_pkts"] >= s2["sent_bytes"] // 65280, s2
print("client sent", s2["sent_bytes"], "server received", r2["rcvd_bytes"])
PY
grep -q "MB/s out" <<<"$watch" || fail "-w printed no rates"
grep -q "^  qp [0-9]* RC RTS peer ::ffff:127.0.0.1" <<<"$res" || fail "res lists no RTS QP to 127.0.0.1"
grep -q "^  mr [0-9]* pd [0-9]* addr 0x[0-9a-f]* length 131072 " <<<"$res" || fail "res lists no 128 KiB MR"
grep -q "^pid $srv ib_write_bw" <<<"$all" && grep -q "^pid $cli ib_write_bw" <<<"$all" ||
    fail "stat without a PID does not list both processes"
wait "$cli" || fail "ib_write_bw client failed"
wait "$srv" || fail "ib_write_bw server failed"
pids=()
# Gone with the processes.
"$bin/softrdma" stat "$cli" >/dev/null 2>&1 && fail "a finished process still has counters"

# The CM side: rping's ids, their state and addresses, and the connection counters.
if command -v rping >/dev/null; then
    export LD_LIBRARY_PATH=$lib
    rping -s -a 127.0.0.1 -p "$port" >/dev/null 2>&1 &
    srv=$!; pids+=("$srv")
    sleep 0.5
    rping -c -a 127.0.0.1 -p "$port" -C 100000 -S 64 >/dev/null 2>&1 &
    cli=$!; pids+=("$cli")
    unset LD_LIBRARY_PATH
    for _ in $(seq 1 50); do
        "$bin/softrdma" res "$srv" 2>/dev/null | grep -q " established " && break
        sleep 0.1
    done
    sres=$("$bin/softrdma" res "$srv")
    cres=$("$bin/softrdma" res "$cli")
    sstat=$("$bin/softrdma" stat --json "$srv")
    cstat=$("$bin/softrdma" stat --json "$cli")
    echo "$sres"
    echo "$cres"
    grep -q "^  cm_id TCP listen src 127.0.0.1:$port " <<<"$sres" || fail "no listening id on the server"
    grep -q "^  cm_id TCP connect established src 127.0.0.1:$port dst 127.0.0.1:" <<<"$sres" ||
        fail "no established id on the server"
    grep -q "^  cm_id TCP connect established src 127.0.0.1:[0-9]* dst 127.0.0.1:$port " <<<"$cres" ||
        fail "no established id on the client"
    python3 - "$sstat" "$cstat" <<'PY' || fail "CM counters"
import json, sys
s, c = (json.loads(a)["processes"][0]["counters"] for a in sys.argv[1:3])
assert s["cm_request_rcvd"] == 1 and s["cm_established"] == 1, s
assert c["cm_connect_sent"] == 1 and c["cm_established"] == 1, c
PY
fi
echo "PASS"
