#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# softrdma benchmark: one command, everything on 127.0.0.1.
#
#   bench/run.sh [outdir]          (default outdir: bench/results)
#
# Installs the tools (Debian 12 packages), builds the project if build/lib is missing, then
# measures in rounds: Debian's perftest on our libraries (LD_LIBRARY_PATH=build/lib) next to
# plain TCP (sockperf busy-poll ping-pong, iperf3), UCX over tcp (ucx_perftest), libfabric's
# tcp provider (fi_pingpong), and CM connection setup (cmtime vs. a plain TCP
# connect+accept loop). Each round runs every tool once, back to back, so the report takes
# ratios within a round (the machine is shared and noisy). bench/report.py then writes
# results.json, results.md and plot.svg into outdir; raw tool outputs stay in outdir/raw.
#
# Knobs (environment): BENCH_REPS (rounds, default 3), BENCH_QUICK=1 (smoke test: one round,
# fewer sizes and iterations), BENCH_PIN=0 (do not pin server to CPU1 / client to CPU0),
# BENCH_ONLY=rsockets (only the rsockets section and the plain iperf3 runs it compares with).
# BENCH_ONLY=same_host (only the same-host section, and the TCP-path latency and rate rows
# its targets are taken against). BENCH_ONLY=conn (only CM connection setup against plain TCP).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$(mkdir -p "${1:-$ROOT/bench/results}" && cd "${1:-$ROOT/bench/results}" && pwd) || exit 1
REPS=${BENCH_REPS:-3}
QUICK=${BENCH_QUICK:-0}
PIN=${BENCH_PIN:-1}
LIB=$ROOT/build/lib
ADDR=127.0.0.1 # loopback only, for every tool
T_START=$(date +%s)

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }

# ---------------------------------------------------------------- install and build
PKGS=(perftest rdmacm-utils sockperf iperf3 ucx-utils libfabric-bin gnuplot-nox python3
      build-essential cmake pkg-config)
install_deps() {
    local p missing=() sudo=""
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    log "installing: ${missing[*]}"
    # iperf3's debconf question (start a daemon?) must not block.
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
install_deps || { log "apt-get failed"; exit 1; }

if [ ! -e "$LIB/libibverbs.so.1" ] || [ ! -e "$LIB/librdmacm.so.1" ]; then
    log "building softrdma (build/lib missing)"
    (cd "$ROOT" && cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
        cmake --build build -j2 >/dev/null) || { log "build failed"; exit 1; }
fi
# Baselines that are tiny C programs, built next to the project's build: TCP connect+accept,
# and the machine's own same-host copy limits (process_vm_writev/readv, memcpy).
TOOLS=$ROOT/build/bench_tools
CONNRATE=$TOOLS/tcp_connrate
SHMBASE=$TOOLS/shm_baseline
for t in tcp_connrate shm_baseline; do
    if [ ! -x "$TOOLS/$t" ] || [ "$ROOT/bench/$t.c" -nt "$TOOLS/$t" ]; then
        mkdir -p "$TOOLS" && cc -O2 -Wall -o "$TOOLS/$t" "$ROOT/bench/$t.c" || { log "cc failed"; exit 1; }
    fi
done

# ---------------------------------------------------------------- run bookkeeping
RAW=$OUT/raw
rm -rf "$RAW" "$OUT/plot" && mkdir -p "$RAW"
RUNS=$OUT/runs.tsv
printf 'stack\tmetric\ttest\tsize\tqps\trep\ttool\tstatus\trc\traw\tcommand\n' >"$RUNS"

SPIN=() CPIN=()
if [ "$PIN" = 1 ] && [ "$(nproc)" -ge 2 ]; then SPIN=(taskset -c 1) CPIN=(taskset -c 0); fi

# Ports: a fresh one per run from a random start below the ephemeral range (softrdma's QP
# listeners sit above it), skipping any port the kernel still knows (LISTEN, TIME_WAIT, ...).
PORT_NEXT=$((20000 + RANDOM % 8000))
port_known() {
    local hex
    hex=$(printf '%04X' "$1")
    awk -v h=":$hex" 'substr($2, length($2) - 4) == h || substr($3, length($3) - 4) == h { f = 1 }
                     END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
next_port() {
    while port_known "$PORT_NEXT"; do PORT_NEXT=$((PORT_NEXT + 1)); done
    PORT=$PORT_NEXT
    PORT_NEXT=$((PORT_NEXT + 1))
}
# wait_listen PORT PID: until something listens on 127.0.0.1:PORT (10 s), or PID died.
wait_listen() {
    local hex i
    hex=$(printf '%04X' "$1")
    for ((i = 0; i < 200; i++)); do
        awk -v h=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == h { f = 1 } END { exit !f }' \
            /proc/net/tcp /proc/net/tcp6 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
# stop_server PID: let it exit by itself (most servers do after one test), else TERM the
# timeout wrapper, which passes it on to the server and KILLs it 3 s later if needed.
stop_server() {
    local i
    for ((i = 0; i < 40; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$1" 2>/dev/null && kill -TERM "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# run_pair RAWFILE CLIENT_TIMEOUT SERVER_CMD... -- CLIENT_CMD...   (@PORT@ is replaced)
# The server runs on CPU1, the client on CPU0. A second attempt on a new port if the first
# failed quickly (a port taken between the check and the bind); none after a time-out.
SPID="" CPID=""
run_pair() {
    local raw=$1 ct=$2 a part=0 attempt
    shift 2
    local -a s=() c=() s2 c2
    for a in "$@"; do
        if [ "$a" = -- ] && [ $part = 0 ]; then part=1; continue; fi
        if [ $part = 0 ]; then s+=("$a"); else c+=("$a"); fi
    done
    : >"$raw"
    : >"$raw.server"
    for attempt in 1 2; do
        next_port
        s2=("${s[@]//@PORT@/$PORT}")
        c2=("${c[@]//@PORT@/$PORT}")
        RUN_CMD="${c2[*]}"
        echo "### server (attempt $attempt): ${s2[*]}" >>"$raw.server"
        timeout -k 3 $((ct + 15)) "${SPIN[@]}" "${s2[@]}" >>"$raw.server" 2>&1 </dev/null &
        SPID=$!
        if ! wait_listen "$PORT" "$SPID"; then
            echo "### attempt $attempt: server did not listen on port $PORT" >>"$raw"
            stop_server "$SPID"
            RUN_RC=255
            continue
        fi
        echo "### client (attempt $attempt): ${c2[*]}" >>"$raw"
        # In the background, so that a signal to this script is handled at once (on_signal).
        timeout -k 3 "$ct" "${CPIN[@]}" "${c2[@]}" >>"$raw" 2>&1 </dev/null &
        CPID=$!
        wait "$CPID"
        RUN_RC=$?
        CPID=""
        stop_server "$SPID"
        SPID=""
        [ $RUN_RC = 0 ] && return 0
        echo "### attempt $attempt: client exit $RUN_RC" >>"$raw"
        [ $RUN_RC = 124 ] || [ $RUN_RC = 137 ] && break
    done
    return 1
}
# run_one RAWFILE TIMEOUT CMD...: a single-process baseline, on CPU0.
run_one() {
    local raw=$1 t=$2
    shift 2
    RUN_CMD="$*"
    echo "### $*" >"$raw"
    timeout -k 3 "$t" "${CPIN[@]}" "$@" >>"$raw" 2>&1 </dev/null &
    CPID=$!
    wait "$CPID"
    RUN_RC=$?
    CPID=""
    return $RUN_RC
}
# Stopped by a signal: end the pair that is running (their timeout wrappers pass it on).
on_signal() {
    [ -n "$CPID" ] && kill -TERM "$CPID" 2>/dev/null
    [ -n "$SPID" ] && kill -TERM "$SPID" 2>/dev/null
    wait 2>/dev/null
    log "interrupted"
    exit 130
}
trap on_signal INT TERM

# record STACK METRIC TEST SIZE QPS REP TOOL RAWFILE: one finished run.
record() {
    local status=ok
    [ "$RUN_RC" = 0 ] || status=fail
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" \
        "$status" "$RUN_RC" "${8#"$OUT"/}" "$RUN_CMD" >>"$RUNS"
    [ $status = ok ] || log "FAILED ($RUN_RC): $RUN_CMD"
}
# missing STACK METRIC TEST SIZE QPS REASON: a shape a tool cannot run.
missing() {
    printf '%s\t%s\t%s\t%s\t%s\t0\t-\tmissing\t-\t-\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" >>"$RUNS"
}

# ---------------------------------------------------------------- shapes
LAT_SIZES=(8 64 512 4096 32768)
BW_SIZES=(1024 4096 16384 65536 262144 1048576)
Q4_SIZES=(4096 65536 1048576)
RATE_SIZE=64
SHM_LAT_SIZES=(8 4096) # the same-host section
SHM_BW_SIZES=(65536 1048576)
LAT_ITERS=10000   # round trips per latency run (3000 above 4 KiB)
BW_BYTES=1073741824
BW_MAX_ITERS=100000
RATE_ITERS=200000
# Same host: 10x, so that a run lasts about 200 ms. At 9-11 M msg/s 200,000 messages took
# 20 ms, of which the connection's one-time move to shared memory (a TCP round trip between
# sleeping engines, then the first pass over fresh ring pages) took 2-3 ms: the run measured
# that move as much as the rate. UCX's shared memory gets the same count.
SHM_RATE_ITERS=2000000
SHM_BW_BYTES=8589934592 # 8 GiB: at 100 GB/s, 1 GiB was a 10 ms run
SP_TIME=1         # seconds per sockperf run
IPERF_TIME=2      # seconds per iperf3 run
CONNS=1000
RS_LAT_ITERS=20000  # rsockets: rstream round trips of 8 B
RS_SIZES=(65536 1048576)
RS_BYTES=536870912  # per rstream bandwidth run
if [ "$QUICK" = 1 ]; then
    RS_LAT_ITERS=5000 RS_BYTES=67108864
    REPS=1 LAT_SIZES=(8 4096) BW_SIZES=(4096 65536 1048576) Q4_SIZES=(65536) SHM_LAT_SIZES=(8)
    LAT_ITERS=2000 BW_BYTES=134217728 BW_MAX_ITERS=20000 RATE_ITERS=20000 SHM_RATE_ITERS=200000 SHM_BW_BYTES=$BW_BYTES IPERF_TIME=1 CONNS=200
fi
lat_iters() { if [ "$1" -gt 4096 ]; then echo $((LAT_ITERS * 3 / 10)); else echo "$LAT_ITERS"; fi; }
bw_iters() { # per QP: about BW_BYTES in total, a round number of thousands
    local n=$((BW_BYTES / $1 / $2 / 1000 * 1000))
    ((n > BW_MAX_ITERS)) && n=$BW_MAX_ITERS
    ((n < 1000)) && n=1000
    echo $n
}

# The TCP-path section forces TCP (same-host connections otherwise move to shared memory);
# the same-host section runs softrdma as a user gets it.
SR=(env "LD_LIBRARY_PATH=$LIB" SOFTRDMA_SHM=0)
SR_SHM=(env "LD_LIBRARY_PATH=$LIB")
SR_STACK=softrdma
PT=(-d sr_lo -x 0 -F -p @PORT@) # sr_lo: softrdma's device for the loopback interface
UCX=(env UCX_TLS=tcp UCX_NET_DEVICES=lo)
UCX_SM=(env UCX_TLS=posix,cma,self) # UCX's shared-memory transports, as Debian builds them
OFI=(env FI_TCP_IFACE=lo FI_UDP_IFACE=lo FI_SOCKETS_IFACE=lo) # else libfabric picks eth0's address

# perftest on softrdma: PROG SIZE ITERS QPS [perftest options] (SR_STACK=softrdma_shm with
# SR=SR_SHM: same host)
sr_perftest() {
    local prog=$1 size=$2 n=$3 q=$4 raw=$RAW/$SR_STACK.$1.s$2.q$4.r$rep.txt metric=bw op
    shift 4
    local -a extra=("$@")
    op=$(echo "$prog" | sed -E 's/^ib_(send|write|read)_.*/\1/' | tr a-z A-Z)
    case $prog in
    *_lat) metric=lat ;;
    *) [ "$size" = "$RATE_SIZE" ] && metric=rate ;;
    esac
    local -a qa=()
    [ "$metric" = lat ] || qa=(-q "$q") # the latency tests take no -q
    run_pair "$raw" 60 "${SR[@]}" "$prog" "${PT[@]}" -s "$size" -n "$n" "${qa[@]}" "${extra[@]}" -- \
        "${SR[@]}" "$prog" "${PT[@]}" -s "$size" -n "$n" "${qa[@]}" "${extra[@]}" "$ADDR"
    record "$SR_STACK" "$metric" "$op" "$size" "$q" "$rep" "$prog" "$raw"
}
# ucx_perftest: TEST SIZE ITERS METRIC [extra client args] (UCX_STACK=ucx_sm: shared memory)
UCX_STACK=ucx
ucx_run() {
    local t=$1 size=$2 n=$3 metric=$4 raw=$RAW/$UCX_STACK.$1.s$2.$4.r$rep.txt
    local -a env=("${UCX[@]}")
    [ "$UCX_STACK" = ucx_sm ] && env=("${UCX_SM[@]}")
    shift 4
    run_pair "$raw" 60 "${env[@]}" ucx_perftest -p @PORT@ -- \
        "${env[@]}" ucx_perftest "$ADDR" -p @PORT@ -t "$t" -s "$size" -n "$n" -w $((n / 10 + 1)) "$@"
    record "$UCX_STACK" "$metric" "$t" "$size" 1 "$rep" ucx_perftest "$raw"
}
# The same-host section: softrdma's shared-memory path (as users get it), with shared regions
# (SOFTRDMA_SHM_MR=1, opt-in: WRITE and READ one memcpy at post time) and with payloads by
# reference (SOFTRDMA_SHM_CMA=1, bandwidth shapes), UCX's shared-memory transports, and this
# machine's copy limits. Shape by shape, UCX's run right after softrdma's of the same shape:
# this host switches between two speeds minutes apart (in one, a cache line takes four times as
# long between the CPUs: UCX's tag_lat 0.10 against 0.46 µs), and a ratio of two runs made at
# different speeds says nothing about either.
sh_perftest() { # STACK PROG SIZE ITERS
    local stack=$1
    local -a SR
    case $stack in
    softrdma_shm) SR=("${SR_SHM[@]}") ;;
    softrdma_shm_mr) SR=("${SR_SHM[@]}" SOFTRDMA_SHM_MR=1) ;;
    softrdma_shm_cma) SR=("${SR_SHM[@]}" SOFTRDMA_SHM_CMA=1) ;;
    esac
    SR_STACK=$stack sr_perftest "$2" "$3" "$4" 1
}
same_host_round() {
    local s p n prog ucx
    UCX_STACK=ucx_sm
    for s in "${SHM_LAT_SIZES[@]}"; do
        n=$(lat_iters "$s")
        for p in ib_send_lat:tag_lat ib_write_lat:ucp_put_lat ib_read_lat:ucp_get; do
            prog=${p%%:*} ucx=${p#*:}
            sh_perftest softrdma_shm "$prog" "$s" "$n"
            sh_perftest softrdma_shm_mr "$prog" "$s" "$n"
            if [ "$ucx" = ucp_get ]; then
                ucx_run ucp_get "$s" $((n / 20)) lat -O 1
            else
                ucx_run "$ucx" "$s" "$n" lat
            fi
        done
    done
    for s in "${SHM_BW_SIZES[@]}"; do
        n=$(BW_BYTES=$SHM_BW_BYTES bw_iters "$s" 1)
        for p in ib_send_bw:tag_bw ib_write_bw:ucp_put_bw ib_read_bw:ucp_get; do
            prog=${p%%:*} ucx=${p#*:}
            sh_perftest softrdma_shm "$prog" "$s" "$n"
            sh_perftest softrdma_shm_mr "$prog" "$s" "$n"
            sh_perftest softrdma_shm_cma "$prog" "$s" "$n"
            if [ "$ucx" = ucp_get ]; then
                ucx_run ucp_get "$s" $((n / 10 + 100)) bw -O 16
            else
                ucx_run "$ucx" "$s" "$n" bw
            fi
        done
        for p in cma_write cma_read memcpy; do
            raw=$RAW/mem.$p.s$s.r$rep.txt
            run_one "$raw" 60 "$SHMBASE" "$p" "$s"
            record mem bw "$p" "$s" 1 "$rep" shm_baseline "$raw"
        done
    done
    for p in ib_send_bw:tag_bw ib_write_bw:ucp_put_bw; do
        prog=${p%%:*} ucx=${p#*:}
        sh_perftest softrdma_shm "$prog" "$RATE_SIZE" "$SHM_RATE_ITERS"
        sh_perftest softrdma_shm_mr "$prog" "$RATE_SIZE" "$SHM_RATE_ITERS"
        ucx_run "$ucx" "$RATE_SIZE" "$SHM_RATE_ITERS" rate
    done
    UCX_STACK=ucx
}

# rsockets next to plain TCP, in the same program: rstream (its -T s is plain sockets) and
# iperf3, plain and through librspreload.so; on the same-host path and on the TCP path.
PRE=$LIB/rsocket/librspreload.so
rsocket_round() {
    local path s raw stack
    local -a env t
    for path in shm tcp plain; do
        case $path in
        shm) env=("${SR_SHM[@]}") t=() stack=rsocket_shm ;;
        tcp) env=("${SR[@]}") t=() stack=rsocket_tcp ;;
        *) env=(env) t=(-T s) stack=tcp ;;
        esac
        raw=$RAW/$stack.rstream.lat.s8.r$rep.txt
        run_pair "$raw" 60 "${env[@]}" rstream "${t[@]}" -b "$ADDR" -p @PORT@ -S 8 -C 1 -I "$RS_LAT_ITERS" -- \
            "${env[@]}" rstream "${t[@]}" -s "$ADDR" -p @PORT@ -S 8 -C 1 -I "$RS_LAT_ITERS"
        record "$stack" lat rstream 8 1 "$rep" rstream "$raw"
        for s in "${RS_SIZES[@]}"; do
            raw=$RAW/$stack.rstream.bw.s$s.r$rep.txt
            run_pair "$raw" 60 "${env[@]}" rstream "${t[@]}" -b "$ADDR" -p @PORT@ -S "$s" -C $((RS_BYTES / s)) -I 1 -- \
                "${env[@]}" rstream "${t[@]}" -s "$ADDR" -p @PORT@ -S "$s" -C $((RS_BYTES / s)) -I 1
            record "$stack" bw rstream "$s" 1 "$rep" rstream "$raw"
            [ $path = plain ] && continue # plain iperf3 runs in the bandwidth round
            raw=$RAW/$stack.iperf3.s$s.r$rep.txt
            run_pair "$raw" 60 "${env[@]}" "LD_PRELOAD=$PRE" iperf3 -s -1 -B "$ADDR" -p @PORT@ -- \
                "${env[@]}" "LD_PRELOAD=$PRE" iperf3 -c "$ADDR" -p @PORT@ -t "$IPERF_TIME" -l "$s" -J
            record "$stack" bw iperf3 "$s" 1 "$rep" iperf3 "$raw"
        done
    done
}

# Shapes a baseline cannot run, with the reason (the report shows them instead of a number).
write_missing() {
    local s q
    local nofab="fabtests (fi_msg_bw, fi_rma_bw, fi_rma_pingpong) are not packaged in Debian 12"
    for s in "${LAT_SIZES[@]}"; do
        missing ofi lat WRITE "$s" 1 "fi_pingpong has no RMA; $nofab"
        missing ofi lat READ "$s" 1 "fi_pingpong has no RMA; $nofab"
    done
    for s in "${BW_SIZES[@]}" "${Q4_SIZES[@]}"; do
        for q in 1 4; do missing ofi bw any "$s" $q "fi_pingpong only ping-pongs (one message in flight); $nofab"; done
    done
    for q in 1 4; do missing ofi rate any "$RATE_SIZE" $q "fi_pingpong only ping-pongs; $nofab"; done
    for s in "${Q4_SIZES[@]}"; do missing ucx bw any "$s" 4 "ucx_perftest drives one endpoint per process"; done
    missing ucx rate any "$RATE_SIZE" 4 "ucx_perftest drives one endpoint per process"
    missing tcp rate any "$RATE_SIZE" 4 "no multi-connection message-rate tool for plain TCP here"
    missing ucx conn any "$CONNS" 1 "ucx_perftest has no connection-rate test"
    missing ofi conn any "$CONNS" 1 "libfabric-bin has no connection-rate test"
}

# CM connection setup (cmtime, all steps) against plain TCP connect+accept, one round.
conn_round() {
    log "round $rep/$REPS: connection setup ($CONNS connections)"
    # cmtime's server never exits by itself; stop_server ends it.
    raw=$RAW/softrdma.cmtime.r$rep.txt
    run_pair "$raw" 120 "${SR[@]}" cmtime -b "$ADDR" -p @PORT@ -- \
        "${SR[@]}" cmtime -s "$ADDR" -p @PORT@ -c "$CONNS"
    record softrdma conn CONNECT "$CONNS" 1 "$rep" cmtime "$raw"
    raw=$RAW/tcp.connrate.r$rep.txt
    run_pair "$raw" 60 "$CONNRATE" server @PORT@ "$CONNS" -- "$CONNRATE" client "$ADDR" @PORT@ "$CONNS"
    record tcp conn tcp_connrate "$CONNS" 1 "$rep" tcp_connrate "$raw"
}

# ---------------------------------------------------------------- the measurements
log "outdir $OUT, $REPS round(s), pin=${PIN}, load: $(cut -d' ' -f1-3 /proc/loadavg)"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
write_missing
for ((rep = 1; rep <= REPS; rep++)); do
    if [ "${BENCH_ONLY:-}" = rsockets ]; then
        for s in "${RS_SIZES[@]}"; do
            raw=$RAW/tcp.iperf3.s$s.q1.r$rep.txt
            run_pair "$raw" 60 iperf3 -s -1 -B "$ADDR" -p @PORT@ -- \
                iperf3 -c "$ADDR" -p @PORT@ -t "$IPERF_TIME" -l "$s" -J
            record tcp bw iperf3 "$s" 1 "$rep" iperf3 "$raw"
        done
        log "round $rep/$REPS: rsockets"
        rsocket_round
        continue
    fi
    if [ "${BENCH_ONLY:-}" = conn ]; then
        conn_round
        continue
    fi
    if [ "${BENCH_ONLY:-}" = same_host ]; then
        # The TCP-path rows the same-host targets are taken against, then the section itself.
        log "round $rep/$REPS: TCP path 8 B latency, $RATE_SIZE B rate"
        for p in ib_send_lat ib_write_lat; do sr_perftest $p 8 "$(lat_iters 8)" 1; done
        for p in ib_send_bw ib_write_bw; do sr_perftest $p "$RATE_SIZE" "$RATE_ITERS" 1; done
        raw=$RAW/tcp.sockperf_pp.s8.r$rep.txt
        run_pair "$raw" 60 sockperf server -i "$ADDR" -p @PORT@ --tcp --nonblocked -- \
            sockperf ping-pong -i "$ADDR" -p @PORT@ --tcp --nonblocked -m 14 -t "$SP_TIME"
        record tcp lat sockperf_pp 8 1 "$rep" sockperf "$raw"
        log "round $rep/$REPS: same host (shared memory)"
        same_host_round
        continue
    fi
    log "round $rep/$REPS: latency"
    # Shape by shape, each baseline right after softrdma's run of that shape (the host's two
    # speeds, see the same-host section).
    for s in "${LAT_SIZES[@]}"; do
        n=$(lat_iters "$s")
        # sockperf refuses messages under 14 bytes; --nonblocked makes both ends spin on recv.
        m=$((s < 14 ? 14 : s))
        sr_perftest ib_send_lat "$s" "$n" 1
        ucx_run tag_lat "$s" "$n" lat
        raw=$RAW/ofi.fi_pingpong.s$s.r$rep.txt
        run_pair "$raw" 60 "${OFI[@]}" fi_pingpong -p tcp -e msg -B @PORT@ -I "$n" -S "$s" -- \
            "${OFI[@]}" fi_pingpong -p tcp -e msg -P @PORT@ -I "$n" -S "$s" "$ADDR"
        record ofi lat fi_pingpong "$s" 1 "$rep" fi_pingpong "$raw"
        raw=$RAW/tcp.sockperf_pp.s$s.r$rep.txt
        run_pair "$raw" 60 sockperf server -i "$ADDR" -p @PORT@ --tcp --nonblocked -- \
            sockperf ping-pong -i "$ADDR" -p @PORT@ --tcp --nonblocked -m "$m" -t "$SP_TIME"
        record tcp lat sockperf_pp "$s" 1 "$rep" sockperf "$raw"
        sr_perftest ib_write_lat "$s" "$n" 1
        ucx_run ucp_put_lat "$s" "$n" lat
        sr_perftest ib_read_lat "$s" "$n" 1
        # ucp_get streams; with one get outstanding each one is a full round trip, like
        # ib_read_lat. Over tcp each takes about 1 ms, hence the few iterations.
        ucx_run ucp_get "$s" $((n / 20)) lat -O 1
        if [ "$s" = 8 ]; then
            # Event-driven: both ends sleep on a completion channel (perftest -e), next to a TCP
            # ping-pong whose ends sleep in recv().
            SR_STACK=softrdma_event sr_perftest ib_send_lat "$s" "$n" 1 -e
            raw=$RAW/tcp.sockperf_pp_blocking.s$s.r$rep.txt
            run_pair "$raw" 60 sockperf server -i "$ADDR" -p @PORT@ --tcp -- \
                sockperf ping-pong -i "$ADDR" -p @PORT@ --tcp -m "$m" -t "$SP_TIME"
            record tcp lat sockperf_pp_blocking "$s" 1 "$rep" sockperf "$raw"
        fi
    done

    log "round $rep/$REPS: bandwidth"
    for s in "${BW_SIZES[@]}"; do
        for p in ib_send_bw ib_write_bw ib_read_bw; do sr_perftest $p "$s" "$(bw_iters "$s" 1)" 1; done
        raw=$RAW/tcp.iperf3.s$s.q1.r$rep.txt
        run_pair "$raw" 60 iperf3 -s -1 -B "$ADDR" -p @PORT@ -- \
            iperf3 -c "$ADDR" -p @PORT@ -t "$IPERF_TIME" -l "$s" -J
        record tcp bw iperf3 "$s" 1 "$rep" iperf3 "$raw"
        n=$(bw_iters "$s" 1)
        ucx_run tag_bw "$s" "$n" bw
        ucx_run ucp_put_bw "$s" "$n" bw
        # 16 gets in flight, as ib_read_bw's default (softrdma's max_qp_rd_atom is 16).
        ucx_run ucp_get "$s" $((n / 10 + 100)) bw -O 16
    done
    for s in "${Q4_SIZES[@]}"; do
        for p in ib_send_bw ib_write_bw ib_read_bw; do sr_perftest $p "$s" "$(bw_iters "$s" 4)" 4; done
        raw=$RAW/tcp.iperf3.s$s.q4.r$rep.txt
        run_pair "$raw" 60 iperf3 -s -1 -B "$ADDR" -p @PORT@ -- \
            iperf3 -c "$ADDR" -p @PORT@ -t "$IPERF_TIME" -l "$s" -P 4 -J
        record tcp bw iperf3 "$s" 4 "$rep" iperf3 "$raw"
    done

    log "round $rep/$REPS: message rate ($RATE_SIZE B)"
    for q in 1 4; do
        for p in ib_send_bw ib_write_bw; do sr_perftest $p "$RATE_SIZE" $((RATE_ITERS / q)) "$q"; done
    done
    ucx_run tag_bw "$RATE_SIZE" "$RATE_ITERS" rate
    ucx_run ucp_put_bw "$RATE_SIZE" "$RATE_ITERS" rate
    raw=$RAW/tcp.sockperf_tp.s$RATE_SIZE.r$rep.txt
    run_pair "$raw" 60 sockperf server -i "$ADDR" -p @PORT@ --tcp -- \
        sockperf throughput -i "$ADDR" -p @PORT@ --tcp -m "$RATE_SIZE" -t "$SP_TIME"
    record tcp rate sockperf_tp "$RATE_SIZE" 1 "$rep" sockperf "$raw"

    conn_round

    log "round $rep/$REPS: same host (shared memory)"
    same_host_round

    log "round $rep/$REPS: rsockets"
    rsocket_round
done

# ---------------------------------------------------------------- environment and report
{
    echo "started $(date -u -d @"$T_START" +%FT%TZ) finished $(date -u +%FT%TZ)"
    echo "runtime_s $(($(date +%s) - T_START))"
    echo "rounds $REPS quick $QUICK pinned $([ ${#SPIN[@]} -gt 0 ] && echo yes || echo no)"
    echo "loadavg_before $LOAD_BEFORE"
    echo "loadavg_after $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "kernel $(uname -r) cpus $(nproc)"
    echo "softrdma $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD -- src include 2>/dev/null || echo ' (modified)')"
    for p in perftest rdmacm-utils sockperf iperf3 ucx-utils libfabric-bin; do
        echo "pkg $p $(dpkg-query -W -f='${Version}' "$p" 2>/dev/null)"
    done
} >"$OUT/env.txt"
log "measurements done in $(($(date +%s) - T_START)) s; writing the report"
python3 "$ROOT/bench/report.py" "$OUT" || { log "report failed"; exit 1; }
log "done: $OUT/results.md $OUT/results.json $OUT/plot.svg"
