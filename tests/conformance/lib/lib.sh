# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
# Shared helpers for tests/conformance/*.sh. Not a test: ctest only globs
# tests/conformance/*.sh, and this file lives one directory below.
#
# Usage, at the top of a conformance script:
#     . "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
#     conf_init "$@"            # <libdir> <bindir>
#     ... checks ...
#     conf_finish               # exit 0 only if nothing failed
#
# Rules the helpers follow: every loop is bounded in count and in time; only
# 127.0.0.1 is used; leftovers are killed by PID only (never by name); a missing
# Debian program is a hard failure, never a skip; every failure prints the
# outputs that explain it.
#
# Tunables (environment):
#   CONF_PAIR_TIMEOUT   seconds each side of a pair may run      (default 60)
#   CONF_BUDGET         seconds the whole script may take         (default 270,
#                       under ctest's 300 s TIMEOUT)

CONF_PAIR_TIMEOUT=${CONF_PAIR_TIMEOUT:-60}
CONF_BUDGET=${CONF_BUDGET:-270}
CONF_FAILS=0
CONF_PASSES=0
CONF_PIDS=()          # background PIDs we started and have not reaped yet
CONF_WORK=""
CONF_START=$SECONDS

log()  { printf '%s\n' "$*"; }
note() { printf 'NOTE: %s\n' "$*"; }
pass() { CONF_PASSES=$((CONF_PASSES + 1)); printf 'PASS: %s\n' "$*"; }
fail() { CONF_FAILS=$((CONF_FAILS + 1)); printf 'FAIL: %s\n' "$*"; }
die()  { printf 'FATAL: %s\n' "$*" >&2; exit 1; }

# Print a file (or only its last <n> lines) with a header, indented, so failures are
# self-explanatory.
dump_file() { # <label> <file> [n]
    local what=$2 lines=(cat)
    [[ -n ${3:-} ]] && what="last $3 lines of $2" lines=(tail -n "$3")
    printf -- '----- %s (%s) -----\n' "$1" "$what"
    if [[ -s $2 ]]; then "${lines[@]}" "$2" | sed 's/^/    | /'; else printf '    | <empty>\n'; fi
    printf -- '----- end %s -----\n' "$1"
}

# Seconds left of the script's budget (may be <= 0).
budget_left() { echo $((CONF_BUDGET - (SECONDS - CONF_START))); }

# A per-command timeout: CONF_PAIR_TIMEOUT, capped by what the budget has left.
# Prints nothing and returns 1 when the budget is (nearly) gone.
step_timeout() {
    local left
    left=$(budget_left)
    if ((left < 25)); then return 1; fi
    if ((left - 15 < CONF_PAIR_TIMEOUT)); then echo $((left - 15)); else echo "$CONF_PAIR_TIMEOUT"; fi
}

# require_prog <prog>...: a missing program is a failure of the test, never a skip.
require_prog() {
    local p pkg
    for p in "$@"; do
        if ! command -v "$p" >/dev/null 2>&1; then
            case $p in
                ibv_*) pkg=ibverbs-utils ;;
                python3) pkg=python3 ;;
                timeout | setsid | env) pkg=coreutils ;;
                ldd) pkg=libc-bin ;;
                *) pkg="(unknown package)" ;;
            esac
            printf 'FATAL: required program "%s" not found in PATH (Debian package: %s). ' "$p" "$pkg" >&2
            printf 'This test does not skip: install it.\n' >&2
            exit 1
        fi
    done
}

# require_pkg_prog <prog> <debian package>: like require_prog, with the package named.
require_pkg_prog() {
    if ! command -v "$1" >/dev/null 2>&1; then
        printf 'FATAL: required program "%s" not found in PATH (Debian package: %s). ' "$1" "$2" >&2
        printf 'This test does not skip: install it (scripts/deps.sh test).\n' >&2
        exit 1
    fi
}

# free_port: ask the kernel for a currently free TCP port on 127.0.0.1, one this script has
# not been given before (the kernel readily offers a port it just offered again, and a
# self-test that aims a client at "another" free port needs it to differ from the server's).
free_port() {
    local given=${CONF_WORK:+$CONF_WORK/ports_given}
    python3 - "${given:-/dev/null}" <<'EOF'
import socket, sys
path = sys.argv[1]
try:
    avoid = {int(p) for p in open(path).read().split()}
except OSError:
    avoid = set()
held = []
for _ in range(256):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    if port not in avoid:
        break
    held.append(s)  # keep it bound so the next bind cannot return it
if path != "/dev/null":
    with open(path, "a") as f:
        f.write(f"{port}\n")
print(port)
EOF
}

# port_listening <port>: true if some TCP socket (IPv4 or IPv6) is in LISTEN on it.
# Reads /proc/net/tcp{,6}: probing with connect() would eat the single accept()
# of servers like ibv_rc_pingpong.
port_listening() {
    local hex
    hex=$(printf '%04X' "$1")
    awk -v p=":$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { found = 1 }
                      END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# is_alive <pid>
is_alive() { kill -0 "$1" 2>/dev/null; }

# Children of a PID (by parent PID, never by name), read from /proc/*/stat ("pid (comm)
# state ppid ..."; comm may hold spaces or parentheses, hence the last ") "). Not `ps`:
# under the preloaded ASan runtime procps hangs before main() (libgpg-error's constructor
# calls bindtextdomain(), whose malloc() starts ASan, whose dlerror() unlocks glibc's
# gettext lock once too often; textdomain() then waits forever; llvm-project#49223).
child_pids() {
    local f line rest
    for f in /proc/[0-9]*/stat; do
        { read -r line <"$f"; } 2>/dev/null || continue
        read -ra rest <<<"${line##*) }"
        [[ ${rest[1]-} == "$1" ]] && echo "${line%% *}"
    done
    return 0
}

# wait_exit <pid> <seconds>: bounded wait for a background PID to end.
# Returns 0 if it ended within the time.
wait_exit() {
    local pid=$1 secs=$2 i max
    max=$((secs * 10))
    for ((i = 0; i < max; i++)); do
        is_alive "$pid" || return 0
        sleep 0.1
    done
    is_alive "$pid" && return 1
    return 0
}

# kill_pid <pid>: TERM, bounded grace, then KILL it and its direct children, by PID.
# The PIDs we start are `timeout` wrappers; TERM to one is forwarded to its command.
kill_pid() {
    local pid=$1 kids
    is_alive "$pid" || return 0
    kids=$(child_pids "$pid")
    kill -TERM "$pid" 2>/dev/null
    if ! wait_exit "$pid" 5; then
        kill -KILL "$pid" 2>/dev/null
    fi
    local k
    for k in $kids; do
        is_alive "$k" && kill -KILL "$k" 2>/dev/null
    done
    return 0
}

forget_pid() {
    local p keep=()
    for p in "${CONF_PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
    CONF_PIDS=("${keep[@]}")
}

conf_cleanup() {
    local p
    for p in "${CONF_PIDS[@]}"; do kill_pid "$p"; done
    CONF_PIDS=()
    if [[ -n $CONF_WORK && -d $CONF_WORK ]]; then rm -rf -- "$CONF_WORK"; fi
}

# conf_init <libdir> <bindir>
conf_init() {
    [[ $# -ge 2 ]] || die "usage: bash $0 <libdir> <bindir>"
    LIBDIR=$(cd "$1" 2>/dev/null && pwd) || die "libdir '$1' does not exist"
    BINDIR=$(cd "$2" 2>/dev/null && pwd) || die "bindir '$2' does not exist"
    [[ -e $LIBDIR/libibverbs.so.1 ]] || die "no libibverbs.so.1 in libdir '$LIBDIR' (build target ibverbs first)"
    export LIBDIR BINDIR
    require_prog python3 timeout awk
    # Line-buffered stdout (coreutils stdbuf), so a program we have to kill still
    # leaves the lines it printed in its output file.
    LINEBUF=()
    if command -v stdbuf >/dev/null 2>&1; then LINEBUF=(stdbuf -oL); fi
    CONF_WORK=$(mktemp -d "${TMPDIR:-/tmp}/softrdma-conf.XXXXXX") || die "mktemp failed"
    trap conf_cleanup EXIT
    trap 'echo "interrupted" >&2; exit 130' INT TERM
    log "== $(basename "$0"): libdir=$LIBDIR bindir=$BINDIR pair-timeout=${CONF_PAIR_TIMEOUT}s budget=${CONF_BUDGET}s"
}

conf_finish() {
    log "== $(basename "$0"): $CONF_PASSES passed, $CONF_FAILS failed, $((SECONDS - CONF_START))s"
    if ((CONF_FAILS > 0)); then exit 1; fi
    if ((CONF_PASSES == 0)); then
        echo "FAIL: no check ran" >&2
        exit 1
    fi
    exit 0
}

# with_lib <cmd...>: run with our library (and nothing else) on LD_LIBRARY_PATH.
with_lib() { LD_LIBRARY_PATH=$LIBDIR "$@"; }
# without_lib <cmd...>: run with the system's libibverbs.
without_lib() { env -u LD_LIBRARY_PATH "$@"; }

# run_cmd <name> <cmd...>: one program with our library, bounded by timeout.
# Sets RUN_RC and RUN_OUT (file, stdout+stderr). Returns the command's status.
run_cmd() {
    local name=$1 t
    shift
    RUN_OUT=$CONF_WORK/$name.out
    if ! t=$(step_timeout); then
        RUN_RC=125
        echo "not run: script time budget exhausted" >"$RUN_OUT"
        return "$RUN_RC"
    fi
    LD_LIBRARY_PATH=$LIBDIR timeout -k 5 "$t" "${LINEBUF[@]}" "$@" >"$RUN_OUT" 2>&1 </dev/null
    RUN_RC=$?
    return "$RUN_RC"
}

# describe_rc <rc> <timeout>: human text for an exit status from `timeout`.
describe_rc() {
    case $1 in
        -1) echo "not run" ;;
        0) echo "exit 0" ;;
        124) echo "TIMED OUT (limit ${2}s; hang?)" ;;
        125) echo "not run (timeout(1) failed or budget exhausted)" ;;
        126 | 127) echo "exit $1 (could not execute)" ;;
        137) echo "KILLED (SIGKILL after timeout)" ;;
        *) if (($1 > 128)); then echo "killed by signal $(($1 - 128)) ($(kill -l $(($1 - 128)) 2>/dev/null))"; else echo "exit $1"; fi ;;
    esac
}

# run_pair <name> <server cmd...> -- <client cmd...>
#
# The literal token @PORT@ in either command is replaced by a port from
# free_port (it is required: it is how we know where the server listens).
# The server starts in the background with LD_LIBRARY_PATH=$LIBDIR; we poll
# /proc/net/tcp until it listens (bounded), run the client with `timeout`,
# then wait for the server (bounded), kill leftovers by PID, check both exit
# codes, and print both outputs on failure.
#
# On return: PAIR_SERVER_OUT / PAIR_CLIENT_OUT name the output files (stdout and
# stderr merged), PAIR_SERVER_RC / PAIR_CLIENT_RC hold the exit codes,
# PAIR_PORT the port used. Returns 0 if both exited 0; otherwise records a
# FAIL (unless CONF_EXPECT_FAIL=1, used by harness self-tests) and returns 1.
#
# If the server dies before listening and says its port was taken (another
# process grabbed the free port between free_port and bind), the pair is retried
# with a new port, at most 3 attempts; that is an environment race, not a
# library failure, and it is reported as a NOTE.
run_pair() {
    local name=$1
    shift
    local -a srv=() cli=()
    while (($#)) && [[ $1 != -- ]]; do srv+=("$1"); shift; done
    if [[ ${1-} != -- ]] || ((${#srv[@]} == 0)); then
        fail "$name: run_pair usage: <name> <server cmd...> -- <client cmd...>"
        return 1
    fi
    shift
    cli=("$@")
    if ((${#cli[@]} == 0)); then fail "$name: run_pair: empty client command"; return 1; fi
    local joined=" ${srv[*]} "
    if [[ $joined != *@PORT@* ]]; then
        fail "$name: run_pair: server command has no @PORT@ token"
        return 1
    fi

    PAIR_SERVER_OUT=$CONF_WORK/$name.server.out
    PAIR_CLIENT_OUT=$CONF_WORK/$name.client.out
    PAIR_SERVER_RC=""
    PAIR_CLIENT_RC=""
    PAIR_PORT=""

    local attempt t port spid i listening why deadline sstart
    local -a s_cmd c_cmd
    for attempt in 1 2 3; do
        if ! t=$(step_timeout); then
            PAIR_SERVER_RC=-1 PAIR_CLIENT_RC=-1
            echo "not run: script time budget exhausted" >"$PAIR_SERVER_OUT"
            echo "not run: script time budget exhausted" >"$PAIR_CLIENT_OUT"
            _pair_report "$name" "script time budget (${CONF_BUDGET}s) exhausted before this pair" "${t:-0}"
            return 1
        fi
        port=$(free_port) || { fail "$name: free_port failed"; return 1; }
        [[ $port =~ ^[0-9]+$ ]] || { fail "$name: free_port returned '$port'"; return 1; }
        # shellcheck disable=SC2034  # PAIR_PORT is for callers
        PAIR_PORT=$port
        s_cmd=("${srv[@]//@PORT@/$port}")
        c_cmd=("${cli[@]//@PORT@/$port}")

        log "-- $name: server: ${s_cmd[*]}"
        log "-- $name: client: ${c_cmd[*]}"
        sstart=$SECONDS
        LD_LIBRARY_PATH=$LIBDIR timeout -k 5 "$t" "${LINEBUF[@]}" "${s_cmd[@]}" >"$PAIR_SERVER_OUT" 2>&1 </dev/null &
        spid=$!
        CONF_PIDS+=("$spid")

        # Wait (bounded in count and time) until the server listens or dies.
        listening=0
        deadline=$((SECONDS + t))
        for ((i = 0; i < t * 10 && SECONDS < deadline; i++)); do
            if port_listening "$port"; then listening=1; break; fi
            is_alive "$spid" || break
            sleep 0.1
        done
        if ((listening)); then break; fi

        # Not listening: the server died, or it never got there in time.
        if is_alive "$spid"; then
            kill_pid "$spid"
            wait "$spid" 2>/dev/null
            PAIR_SERVER_RC=$?
            forget_pid "$spid"
            PAIR_CLIENT_RC=-1
            echo "not run: server never listened on $port" >"$PAIR_CLIENT_OUT"
            _pair_report "$name" "server did not listen on 127.0.0.1:$port within ${t}s" "$t"
            return 1
        fi
        wait "$spid" 2>/dev/null
        PAIR_SERVER_RC=$?
        forget_pid "$spid"
        if ((attempt < 3)) && grep -qiE "couldn't listen to port|address already in use" "$PAIR_SERVER_OUT"; then
            note "$name: server could not bind port $port (taken by another process after free_port); retrying with a new port"
            dump_file "$name server (attempt $attempt)" "$PAIR_SERVER_OUT"
            continue
        fi
        PAIR_CLIENT_RC=-1
        echo "not run: server exited before listening on $port" >"$PAIR_CLIENT_OUT"
        _pair_report "$name" "server exited ($(describe_rc "$PAIR_SERVER_RC" "$t")) before listening on port $port" "$t"
        return 1
    done

    # Client, bounded: it cannot usefully outlive the server's own timeout (the
    # server needs it to finish), so the whole pair stays within about t + 10 s.
    local ct=$((t - (SECONDS - sstart) + 5))
    ((ct < 5)) && ct=5
    LD_LIBRARY_PATH=$LIBDIR timeout -k 5 "$ct" "${LINEBUF[@]}" "${c_cmd[@]}" >"$PAIR_CLIENT_OUT" 2>&1 </dev/null
    PAIR_CLIENT_RC=$?

    # Server: bounded wait, until a little after its own timeout would have fired.
    # If the client failed, the server may wait forever for a peer that is gone;
    # give it a short grace only.
    local grace=$((sstart + t + 7 - SECONDS))
    ((grace < 1)) && grace=1
    ((PAIR_CLIENT_RC != 0 && grace > 10)) && grace=10
    why=""
    if ! wait_exit "$spid" "$grace"; then
        why="server still running ${grace}s after the client ended; killed"
        kill_pid "$spid"
    fi
    wait "$spid" 2>/dev/null
    PAIR_SERVER_RC=$?
    forget_pid "$spid"

    if [[ -z $why && $PAIR_SERVER_RC -eq 0 && $PAIR_CLIENT_RC -eq 0 ]]; then
        return 0
    fi
    [[ -n $why ]] || why="bad exit status"
    _pair_report "$name" "$why" "$t"
    return 1
}

# perftest_pair <name> <run_pair args...>: run_pair for Debian's perftest, which times with the
# CPU's cycle counter and refuses to report ("Correlation coefficient r^2: ... < 0.9") when its
# calibration of that counter is disturbed by other load: an environment failure, rerun (at most
# 3 attempts, as a NOTE). Any other failure is reported at once.
perftest_pair() {
    local name=$1 attempt
    for attempt in 1 2 3; do
        CONF_EXPECT_FAIL=1
        if run_pair "$@"; then
            CONF_EXPECT_FAIL=0
            return 0
        fi
        CONF_EXPECT_FAIL=0
        if ((attempt < 3)) && grep -qs 'Correlation coefficient r^2' "$PAIR_SERVER_OUT" "$PAIR_CLIENT_OUT"; then
            note "$name: perftest could not calibrate its cycle counter on this busy machine; running it again"
            continue
        fi
        # The outputs were printed above as an expected failure; their last lines follow the
        # FAIL line too, so that an excerpt starting at the FAIL still says why.
        fail "$name: server $(describe_rc "$PAIR_SERVER_RC" 0), client $(describe_rc "$PAIR_CLIENT_RC" 0)"
        dump_file "$name server" "$PAIR_SERVER_OUT" 12
        dump_file "$name client" "$PAIR_CLIENT_OUT" 12
        return 1
    done
}

_pair_report() { # <name> <why> <timeout>
    local label=FAIL
    [[ ${CONF_EXPECT_FAIL:-0} == 1 ]] && label="(expected failure)"
    printf '%s: %s: %s; server: %s, client: %s\n' "$label" "$1" "$2" \
        "$(describe_rc "${PAIR_SERVER_RC:-?}" "$3")" "$(describe_rc "${PAIR_CLIENT_RC:-?}" "$3")"
    [[ ${CONF_EXPECT_FAIL:-0} == 1 ]] || CONF_FAILS=$((CONF_FAILS + 1))
    dump_file "$1 server" "$PAIR_SERVER_OUT"
    dump_file "$1 client" "$PAIR_CLIENT_OUT"
}

# expect_grep <name> <file> <ERE> <what>: true if the file has a matching line.
# On a miss: FAIL and dump both pair outputs (or just <file> outside a pair).
expect_grep() {
    local name=$1 file=$2 re=$3 what=$4
    if grep -qE -- "$re" "$file"; then return 0; fi
    fail "$name: $what (no line matching /$re/ in $(basename "$file"))"
    if [[ $file == "${PAIR_SERVER_OUT:-}" || $file == "${PAIR_CLIENT_OUT:-}" ]]; then
        dump_file "$name server" "$PAIR_SERVER_OUT"
        dump_file "$name client" "$PAIR_CLIENT_OUT"
    else
        dump_file "$name" "$file"
    fi
    return 1
}

# expect_count <name> <file> <ERE> <n> <what>: exactly n matching lines.
expect_count() {
    local name=$1 file=$2 re=$3 n=$4 what=$5 got
    got=$(grep -cE -- "$re" "$file")
    if [[ $got == "$n" ]]; then return 0; fi
    fail "$name: $what (expected $n line(s) matching /$re/ in $(basename "$file"), got $got)"
    dump_file "$name" "$file"
    return 1
}

# pingpong_pair <name> <prog> <iters> <size> [args...]
#
# One Debian *_pingpong server/client pair over 127.0.0.1 with our library:
#   server: <prog> [args...] -p PORT          client: <prog> [args...] -p PORT 127.0.0.1
# <iters>/<size> are what the args ask for (the program's defaults are 1000/4096);
# both sides must exit 0 and print
#   "<size*iters*2> bytes in S seconds = R Mbit/sec" and "<iters> iters in S seconds = U usec/iter".
# Records exactly one PASS or FAIL for the pair.
pingpong_pair() {
    local name=$1 prog=$2 iters=$3 size=$4
    shift 4
    local bytes=$((size * iters * 2)) ok=1 side f
    local iters_re="^${iters} iters in [0-9]+\.[0-9]+ seconds = [0-9]+\.[0-9]+ usec/iter\$"
    local bytes_re="^${bytes} bytes in [0-9]+\.[0-9]+ seconds = [0-9]+\.[0-9]+ Mbit/sec\$"
    local fails_before=$CONF_FAILS
    run_pair "$name" "$prog" "$@" -p @PORT@ -- "$prog" "$@" -p @PORT@ 127.0.0.1 || return 1
    for side in server client; do
        if [[ $side == server ]]; then f=$PAIR_SERVER_OUT; else f=$PAIR_CLIENT_OUT; fi
        expect_grep "$name" "$f" "$iters_re" "$side did not print the '$iters iters in ... usec/iter' line" || { ok=0; break; }
        expect_grep "$name" "$f" "$bytes_re" "$side did not print the '$bytes bytes in ... Mbit/sec' line" || { ok=0; break; }
        expect_grep "$name" "$f" '^ +local address: +LID 0x[0-9a-f]+, QPN 0x[0-9a-f]+, PSN 0x[0-9a-f]+[,:] GID [0-9a-f:.]*[1-9a-f][0-9a-f:.]*$' \
            "$side did not print its local address with a non-zero GID (-g 0)" || { ok=0; break; }
    done
    if ((ok)) && ((CONF_FAILS == fails_before)); then
        pass "$name ($(grep -hE 'usec/iter' "$PAIR_CLIENT_OUT" | head -1))"
        return 0
    fi
    return 1
}
