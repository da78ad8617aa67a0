# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Helpers for the CM (librdmacm) conformance scripts, on top of lib.sh. Not a test: ctest
# only globs tests/conformance/*.sh. Source it after lib.sh and after conf_init:
#     . "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
#     . "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
#     conf_init "$@"
#     cm_init               # checks librdmacm.so.1 is ours and stdbuf is there
#
# Same rules as lib.sh: bounded loops and time, 127.0.0.1 only, PIDs only, never skip.

# cm_init: our librdmacm.so.1 must be in the libdir (a CM program on Debian's librdmacm
# would not be testing softrdma's CM), and stdbuf must exist: the checks below count
# output lines, which needs line-buffered stdout when stdout and stderr share a file.
cm_init() {
    [[ -e $LIBDIR/librdmacm.so.1 ]] ||
        die "no librdmacm.so.1 in libdir '$LIBDIR' (build target rdmacm first)"
    require_pkg_prog stdbuf coreutils
    ((${#LINEBUF[@]} > 0)) || die "stdbuf present but LINEBUF unset (lib.sh changed?)"
}

# check_resolves_to_ours <name> <prog> <soname>...: with LD_LIBRARY_PATH=$LIBDIR the
# program's <soname> resolves to the file in $LIBDIR. One PASS or FAIL.
check_resolves_to_ours() {
    local name=$1 prog=$2 so resolved bad=0 path
    shift 2
    path=$(command -v "$prog") || path=$prog
    for so in "$@"; do
        resolved=$(LD_LIBRARY_PATH=$LIBDIR ldd "$path" 2>&1 | awk -v s="$so" '$1 == s { print $3 }')
        if [[ -z $resolved || $(readlink -f "$resolved") != "$(readlink -f "$LIBDIR/$so")" ]]; then
            fail "$name: with LD_LIBRARY_PATH=$LIBDIR, $path resolves $so to '${resolved:-<nothing>}', not ours"
            bad=1
        fi
    done
    if ((bad)); then
        LD_LIBRARY_PATH=$LIBDIR ldd "$path" 2>&1 | sed 's/^/    | /'
        return 1
    fi
    pass "$name: $(basename "$path") resolves $* to $LIBDIR"
}

# start_bg <name> <port> <cmd...>: start a server with our library in the background
# (bounded by the step timeout), then wait, bounded, until some socket LISTENs on <port>.
# Sets BG_PID (the timeout wrapper's PID) and BG_OUT (stdout+stderr). On failure records a
# FAIL with the output, reaps the process and returns 1.
start_bg() {
    local name=$1 port=$2 t i
    shift 2
    BG_OUT=$CONF_WORK/$name.server.out
    BG_PID=""
    if ! t=$(step_timeout); then
        fail "$name: script time budget (${CONF_BUDGET}s) exhausted before the server started"
        return 1
    fi
    log "-- $name: server: $*"
    LD_LIBRARY_PATH=$LIBDIR timeout -k 5 "$t" "${LINEBUF[@]}" "$@" >"$BG_OUT" 2>&1 </dev/null &
    BG_PID=$!
    CONF_PIDS+=("$BG_PID")
    for ((i = 0; i < 200; i++)); do # 20 s at most
        if port_listening "$port"; then return 0; fi
        is_alive "$BG_PID" || break
        sleep 0.1
    done
    if is_alive "$BG_PID"; then
        fail "$name: server did not listen on port $port within 20 s"
    else
        fail "$name: server exited before listening on port $port"
    fi
    stop_bg "$BG_PID"
    log "   server $(describe_rc "$BG_RC" "$t")"
    dump_file "$name server" "$BG_OUT"
    return 1
}

# stop_bg <pid>: kill a background server (TERM, bounded grace, KILL) by PID and reap it.
# Sets BG_RC.
stop_bg() {
    kill_pid "$1"
    wait "$1" 2>/dev/null
    BG_RC=$?
    forget_pid "$1"
}

# wait_grep <file> <ERE> <seconds> <pid>: bounded wait until <file> has a matching line;
# gives up early if <pid> ends (one last look after it ended). Returns 0 if it matched.
wait_grep() {
    local file=$1 re=$2 secs=$3 pid=$4 i
    for ((i = 0; i < secs * 10; i++)); do
        grep -qE -- "$re" "$file" 2>/dev/null && return 0
        is_alive "$pid" || break
        sleep 0.1
    done
    grep -qE -- "$re" "$file" 2>/dev/null
}

# run_pair_rc <name> <server rc> <client rc> <server cmd...> -- <client cmd...>
# run_pair for a pair whose exit codes are expected to be exactly <server rc> and
# <client rc> (a reject path, say). Records a FAIL (with both outputs) on any other result;
# returns 0 when both codes match. Callers check the outputs and record the PASS.
run_pair_rc() {
    local name=$1 want_s=$2 want_c=$3 log
    shift 3
    log=$CONF_WORK/$name.pair.log
    # run_pair prints its own report and dumps when either side exits non-zero; keep that
    # in a file and show only the command lines, unless the exit codes are not the expected ones.
    CONF_EXPECT_FAIL=1 run_pair "$name" "$@" >"$log" 2>&1
    grep -E '^(-- |NOTE: |FAIL: )' "$log"
    if [[ $PAIR_SERVER_RC == "$want_s" && $PAIR_CLIENT_RC == "$want_c" ]]; then
        return 0
    fi
    fail "$name: expected server exit $want_s and client exit $want_c;" \
        "got server: $(describe_rc "$PAIR_SERVER_RC" "$CONF_PAIR_TIMEOUT") (status $PAIR_SERVER_RC), client: $(describe_rc "$PAIR_CLIENT_RC" "$CONF_PAIR_TIMEOUT") (status $PAIR_CLIENT_RC; above 128 may also be a plain exit code)"
    grep -E '^\(expected failure\): ' "$log" | sed 's/^/    harness: /'
    dump_file "$name server" "$PAIR_SERVER_OUT"
    dump_file "$name client" "$PAIR_CLIENT_OUT"
    return 1
}
