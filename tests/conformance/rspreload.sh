#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: unmodified socket programs on rsockets through our librspreload.so, as the
# README tells a user (LD_PRELOAD=<libdir>/rsocket/librspreload.so), over 127.0.0.1.
#   1. iperf3 server and client, both preloaded, on the same-host path and with
#      SOFTRDMA_SHM=0, both directions (-R): both exit 0, the receiver counted bytes, and the
#      server's SOFTRDMA_DEBUG lines show its connections were RC QPs (plain TCP has none).
#   2. netcat (netcat-openbsd) carrying a 32 MiB random file: the received file's SHA-256
#      equals the original's, over QPs too.
#   3. A preloaded client whose connect finds no listener falls back to TCP and reports
#      "connection refused" promptly, as without the preload.
#   4. iperf3 launched as the README says: `softrdma run --rsockets -- iperf3 ...`.
#   6. RDMAV_FORK_SAFE=1 (rdma-core's fork support): a forking server (Python's
#      ForkingTCPServer) echoes 3 MB to each of two clients from forked children, whose
#      connections moved onto QPs at their first data call; every echo checked.
#   5. Servers built on epoll: sockperf's ping-pong server, and redis-server driven by
#      redis-benchmark (SET/GET/INCR/LPUSH) and redis-cli (a value set, then read back), all
#      preloaded, over QPs.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog iperf3 iperf3
require_pkg_prog nc netcat-openbsd
require_pkg_prog sha256sum coreutils
require_pkg_prog sockperf sockperf
require_pkg_prog redis-server redis-server
require_pkg_prog redis-benchmark redis-tools
PRELOAD=$LIBDIR/rsocket/librspreload.so
[[ -e $PRELOAD ]] || die "no $PRELOAD (build target rspreload first)"
# After whatever is preloaded already (the sanitizer run preloads its runtime, which must
# come first).
PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$PRELOAD
P=(env "LD_PRELOAD=$PRELOAD" SOFTRDMA_DEBUG=1)

# on_qps <name> <file>: the program's connections were made by our CM and verbs.
on_qps() {
    if grep -qE '^softrdma: qp [0-9]+: connected' "$2"; then return 0; fi
    fail "$1: no QP connection in the debug output: the sockets did not go over rsockets"
    dump_file "$1" "$2"
    return 1
}

for path in shm tcp; do
    if [[ $path == tcp ]]; then export SOFTRDMA_SHM=0; else unset SOFTRDMA_SHM; fi
    for dir in "" -R; do
        name=iperf3.$path${dir:+.reverse}
        # shellcheck disable=SC2086  # $dir is empty or one flag
        if run_pair "$name" "${P[@]}" iperf3 -s -1 -p @PORT@ -- "${P[@]}" iperf3 -c 127.0.0.1 -p @PORT@ -t 2 $dir; then
            line=$(grep -E 'receiver$' "$PAIR_CLIENT_OUT" | tail -1 | tr -s ' ')
            if [[ $line =~ ([0-9.]+)\ (K|M|G)Bytes ]] && [[ ${BASH_REMATCH[1]} != 0.00 ]]; then
                on_qps "$name server" "$PAIR_SERVER_OUT" && on_qps "$name client" "$PAIR_CLIENT_OUT" &&
                    pass "$name: both exit 0 over QPs; $line"
            else
                fail "$name: no receiver total in the client's report"
                dump_file "$name client" "$PAIR_CLIENT_OUT"
            fi
        fi
    done
done
unset SOFTRDMA_SHM

src=$CONF_WORK/nc.src
dst=$CONF_WORK/nc.dst
head -c $((32 << 20)) /dev/urandom >"$src"
port=$(free_port)
nout=$CONF_WORK/nc.server.err
LD_LIBRARY_PATH=$LIBDIR timeout -k 5 60 "${P[@]}" nc -l -p "$port" >"$dst" 2>"$nout" </dev/null &
npid=$!
CONF_PIDS+=("$npid")
for ((i = 0; i < 100; i++)); do port_listening "$port" && break; sleep 0.1; done
LD_LIBRARY_PATH=$LIBDIR timeout -k 5 60 "${P[@]}" nc -N 127.0.0.1 "$port" <"$src" >/dev/null 2>"$CONF_WORK/nc.client.err"
crc=$?
wait_exit "$npid" 20 >/dev/null 2>&1
if ((crc == 0)) && [[ $(sha256sum <"$src") == "$(sha256sum <"$dst")" ]]; then
    on_qps nc.server "$nout" && pass "nc: 32 MiB through preloaded netcat over QPs, SHA-256 equal"
else
    fail "nc: client exit $crc, $(stat -c %s "$dst" 2>/dev/null || echo 0) of $((32 << 20)) bytes arrived or they differ"
    dump_file "nc client" "$CONF_WORK/nc.client.err"
    dump_file "nc server" "$nout"
fi
stop_bg "$npid"
rm -f "$src" "$dst"

port=$(free_port)
start=$SECONDS
echo hi | LD_LIBRARY_PATH=$LIBDIR timeout -k 5 30 env "LD_PRELOAD=$PRELOAD" nc -v -N 127.0.0.1 "$port" >/dev/null 2>"$CONF_WORK/nc.refused.err"
rc=$?
if ((rc == 1)) && grep -q 'refused' "$CONF_WORK/nc.refused.err" && ((SECONDS - start < 10)); then
    pass "no listener: the preloaded nc falls back to TCP and reports: $(grep refused "$CONF_WORK/nc.refused.err")"
else
    fail "no listener: nc exit $rc after $((SECONDS - start)) s"
    dump_file "nc" "$CONF_WORK/nc.refused.err"
fi

# sockperf's server serves until it is stopped.
port=$(free_port)
if start_bg sockperf "$port" "${P[@]}" sockperf server --tcp -i 127.0.0.1 -p "$port"; then
    spid=$BG_PID
    sout=$BG_OUT
    if run_cmd sockperf.client "${P[@]}" sockperf ping-pong --tcp -i 127.0.0.1 -p "$port" -m 14 -t 1 &&
        grep -q 'percentile 50.000' "$RUN_OUT"; then
        on_qps "sockperf server" "$sout" && on_qps "sockperf client" "$RUN_OUT" &&
            pass "sockperf: an epoll server over QPs; $(grep -o 'percentile 50.000 = *[0-9.]*' "$RUN_OUT")"
    else
        fail "sockperf: client $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT"), or no latency reported"
        dump_file "sockperf client" "$RUN_OUT"
        dump_file "sockperf server" "$sout"
    fi
    stop_bg "$spid"
fi

port=$(free_port)
if start_bg redis "$port" "${P[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no; then
    rpid=$BG_PID
    rout=$BG_OUT
    if run_cmd redis.benchmark env "LD_PRELOAD=$PRELOAD" redis-benchmark -h 127.0.0.1 -p "$port" \
        -n 20000 -c 8 -t set,get,incr,lpush -q; then
        bench=$RUN_OUT
        run_cmd redis.set env "LD_PRELOAD=$PRELOAD" redis-cli -h 127.0.0.1 -p "$port" set softrdma:key rsockets-value
        run_cmd redis.get env "LD_PRELOAD=$PRELOAD" redis-cli -h 127.0.0.1 -p "$port" get softrdma:key
        if [[ $(cat "$RUN_OUT") == rsockets-value ]] && grep -q 'GET: [0-9.]* requests per second' "$bench"; then
            on_qps redis.server "$rout" &&
                pass "redis: redis-benchmark and redis-cli over QPs; $(grep -o 'GET: [0-9.]* requests per second' "$bench")"
        else
            fail "redis: the value did not come back, or no GET rate"
            dump_file "redis-benchmark" "$bench"
            dump_file "redis-cli get" "$RUN_OUT"
        fi
    else
        fail "redis: redis-benchmark $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT")"
        dump_file "redis-benchmark" "$RUN_OUT"
        dump_file "redis-server" "$rout"
    fi
    stop_bg "$rpid"
fi

# Fork mode: the children of a forking server serve the connections, over QPs.
FE=$(dirname "${BASH_SOURCE[0]}")/lib/fork_echo.py
port=$(free_port)
if start_bg fork_echo "$port" env RDMAV_FORK_SAFE=1 "${P[@]}" python3 "$FE" server "$port" 2; then
    fpid=$BG_PID
    fout=$BG_OUT
    ok=1
    for c in 1 2; do
        if ! run_cmd fork_echo.client$c env RDMAV_FORK_SAFE=1 "LD_PRELOAD=$PRELOAD" python3 "$FE" client "$port" 3000000 ||
            ! grep -q '^match 3000000$' "$RUN_OUT"; then
            fail "fork mode: client $c: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT")"
            dump_file "client $c" "$RUN_OUT"
            ok=0
        fi
    done
    wait_exit "$fpid" 20 >/dev/null 2>&1
    if ((ok)) && [[ $(grep -c 'echoed 3000000$' "$fout") == 2 && $(grep -cE '^softrdma: qp [0-9]+: connected' "$fout") -ge 2 ]]; then
        pass "fork mode: two forked children echoed 3 MB each over QPs, checked"
    elif ((ok)); then
        fail "fork mode: the children did not both serve over QPs"
        dump_file "fork_echo server" "$fout"
    fi
    stop_bg "$fpid"
fi

R=("$BINDIR/softrdma" run --rsockets)  # no "--": run_pair splits its commands there
name=iperf3.softrdma_run
if run_pair "$name" env SOFTRDMA_DEBUG=1 "${R[@]}" iperf3 -s -1 -p @PORT@ -- "${R[@]}" iperf3 -c 127.0.0.1 -p @PORT@ -t 1; then
    on_qps "$name server" "$PAIR_SERVER_OUT" &&
        pass "$name: $(grep -E 'receiver$' "$PAIR_CLIENT_OUT" | tail -1 | tr -s ' ')"
fi

conf_finish
