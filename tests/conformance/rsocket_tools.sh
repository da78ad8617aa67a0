#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified rsocket programs (rdmacm-utils) over 127.0.0.1 on our
# librdmacm.so.1, on the same-host path and with SOFTRDMA_SHM=0 (loopback TCP).
#   1. rstream, in each of its modes: nonblocking (default), blocking (-T b), async (rpoll
#      before every call, -T a), with data verification (-T v), and with a custom transfer
#      size and count (-S/-C/-I): both exit 0, every size row printed.
#   2. riostream (riomap + riowrite, the receiver watching its mapped buffer), custom sizes,
#      with data verification: both exit 0.
#   3. rcopy: a 64 MiB random file copied, the copy's SHA-256 equal to the original's.
#   4. udpong (datagram rsockets): echoed and streamed datagrams of three sizes, client exit 0,
#      the server still running.
# No rsocket program prints "Function not implemented", the answer of the old stubs.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog rstream rdmacm-utils
require_pkg_prog sha256sum coreutils

for p in rstream riostream rcopy udpong; do
    check_resolves_to_ours "$p.ldd" "$p" librdmacm.so.1 libibverbs.so.1
done

# rows_present <name> <file> <rows...>: every row name starts a line of the table.
rows_present() {
    local name=$1 file=$2 row missing=()
    shift 2
    for row in "$@"; do grep -qE "^$row +" "$file" || missing+=("$row"); done
    if ((${#missing[@]})); then
        fail "$name: rows missing: ${missing[*]}"
        dump_file "$name output" "$file"
        return 1
    fi
    if grep -qiE 'not implemented|verification failed' "$file"; then
        fail "$name: the output reports a failure"
        dump_file "$name output" "$file"
        return 1
    fi
    return 0
}

DEFAULT_ROWS=(64_lat 4k_lat 64k_lat 1m_lat 64_bw 4k_bw 64k_bw 1m_bw)

for path in shm tcp; do
    if [[ $path == tcp ]]; then export SOFTRDMA_SHM=0; else unset SOFTRDMA_SHM; fi
    for mode in "" "-T b" "-T a" "-T v"; do
        tag=${mode// /}
        name=rstream.$path${tag:+.$tag}
        # shellcheck disable=SC2086  # the mode is one or two words
        if run_pair "$name" rstream -b 127.0.0.1 -p @PORT@ $mode -- rstream -s 127.0.0.1 -p @PORT@ $mode; then
            rows_present "$name" "$PAIR_CLIENT_OUT" "${DEFAULT_ROWS[@]}" &&
                rows_present "$name server" "$PAIR_SERVER_OUT" "${DEFAULT_ROWS[@]}" &&
                pass "$name: both exit 0, all 8 rows; $(grep -E '^1m_bw' "$PAIR_CLIENT_OUT" | tr -s ' ')"
        fi
    done
    name=rstream.$path.custom
    if run_pair "$name" rstream -b 127.0.0.1 -p @PORT@ -S 100000 -C 300 -I 3 -T b \
        -- rstream -s 127.0.0.1 -p @PORT@ -S 100000 -C 300 -I 3 -T b; then
        rows_present "$name" "$PAIR_CLIENT_OUT" custom && pass "$name: 100000-byte transfers, exit 0"
    fi

    for args in "-S 65536 -C 100 -I 10" "-S 4096 -C 500 -I 10 -T v"; do
        tag=$(tr -d ' -' <<<"$args")
        name=riostream.$path.$tag
        # shellcheck disable=SC2086
        if run_pair "$name" riostream -b 127.0.0.1 -p @PORT@ $args -- riostream -s 127.0.0.1 -p @PORT@ $args; then
            rows_present "$name" "$PAIR_CLIENT_OUT" custom && pass "$name: riomap/riowrite, exit 0"
        fi
    done
done
unset SOFTRDMA_SHM

# rcopy: the server writes into its working directory; the client names the destination.
src=$CONF_WORK/rcopy.src
dst=$CONF_WORK/rcopy.dst
head -c $((64 << 20)) /dev/urandom >"$src"
port=$(free_port)
if start_bg rcopy "$port" rcopy -p "$port"; then
    spid=$BG_PID
    if run_cmd rcopy.client rcopy "$src" "127.0.0.1:$dst" -p "$port"; then
        if [[ -f $dst && $(sha256sum <"$src") == "$(sha256sum <"$dst")" ]]; then
            pass "rcopy: 64 MiB copied, SHA-256 equal; $(grep -E 'bytes in' "$RUN_OUT")"
        else
            fail "rcopy: the copy differs from the original ($(stat -c %s "$dst" 2>/dev/null || echo no) bytes)"
            dump_file "rcopy client" "$RUN_OUT"
            dump_file "rcopy server" "$BG_OUT"
        fi
    else
        fail "rcopy: client $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT")"
        dump_file "rcopy client" "$RUN_OUT"
        dump_file "rcopy server" "$BG_OUT"
    fi
    stop_bg "$spid"
fi
rm -f "$src" "$dst"

# udpong: the server loops until killed; it listens on UDP, so wait for its socket instead.
# Three shapes of its own: echoed 64 B and 1.5 KiB datagrams (-T e, the latency test) and a
# stream of 1 KiB ones (the bandwidth test, the server counting). Its default run (18 sizes,
# 20,000 echoes each) takes a minute under the sanitizers, and its client resends after 1 ms
# without an answer, every late answer then staying queued for the rest of the run: one
# scheduling hiccup of a loaded machine snowballs. A shape may run twice, with a NOTE; a
# second failure is a failure.
udpong_shape() { # <name> <client args...>
    local name=$1 attempt port uout upid ok i
    shift
    for attempt in 1 2; do
        port=$(free_port)
        uout=$CONF_WORK/$name.server.$attempt.out
        LD_LIBRARY_PATH=$LIBDIR timeout -k 5 120 udpong -b 127.0.0.1 -p "$port" >"$uout" 2>&1 </dev/null &
        upid=$!
        CONF_PIDS+=("$upid")
        for ((i = 0; i < 50; i++)); do
            grep -q ":$(printf '%04X' "$port") " /proc/net/udp 2>/dev/null && break
            sleep 0.1
        done
        ok=0
        if run_cmd "$name.client.$attempt" udpong -s 127.0.0.1 -p "$port" "$@" &&
            grep -qE '^custom +' "$RUN_OUT" && is_alive "$upid"; then
            ok=1
        fi
        stop_bg "$upid"
        if ((ok)); then
            pass "$name: exit 0; $(grep -E '^custom' "$RUN_OUT" | tr -s ' ')"
            return 0
        fi
        if ((attempt == 1)); then
            note "$name: run 1 failed (client $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT")); once more"
            dump_file "$name client, run 1" "$RUN_OUT"
        else
            fail "$name: client $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT"), or no result row"
            dump_file "$name client" "$RUN_OUT"
            dump_file "$name server" "$uout"
        fi
    done
    return 1
}
udpong_shape udpong.echo64 -S 64 -C 2000 -T e
udpong_shape udpong.echo1500 -S 1500 -C 1000 -T e
udpong_shape udpong.stream1k -S 1024 -C 20000

conf_finish
