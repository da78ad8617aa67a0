#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: the seed RDMA-CM programming manual's complete examples, §10.2 (server) and
# §10.3 (client), compiled UNCHANGED against softrdma's headers and run on our libraries.
#
# The manual is not copied into the repository: it is read at test time from
# $SOFTRDMA_SEED_MANUAL, or else <repo>/../shared/seeds/004_ec11ffda1d4a737f.txt (then
# /work/shared/seeds/, where these machines keep it). If it
# is missing the test FAILS (it never skips). The two ```c blocks that follow the headings
# "### 10.2 Complete Server Example" and "### 10.3 Complete Client Example" are extracted
# with awk, byte for byte.
#
# Checks:
#   1. with -I <repo>/include every <infiniband/...> and <rdma/...> header the examples
#      include is ours (cc -H), and they compile (cc -Wall) with no warning that Debian's
#      headers (libibverbs-dev, librdmacm-dev) do not also give for the same file (the
#      examples' own warnings, e.g. the client's implicit inet_pton, are not failures);
#   2. they link against <libdir>'s librdmacm.so.1 and libibverbs.so.1;
#   3. run, 3 times: the server (hard-coded port 20000, loops forever) in the background,
#      then `client 127.0.0.1 20000`. The client must exit 0 and print "Connected!" and
#      "Message sent"; the server must print "Server listening on port 20000",
#      "Connection request received", "Connection established", "Disconnected" and exactly
#      one "server received: Hello from RDMA client!" -- the bytes of the client's SEND as
#      they sit in the server's receive buffer. The server is then killed by PID; it must
#      still be running at that point (it did not crash tearing the connection down).
#      The server is built with `-include tests/conformance/seed/wrapper.h`, which routes
#      the example's ibv_dereg_mr(conn->mr) (called from destroy_connection after the
#      receive completed) through a function that prints the buffer, then deregisters.
#      If port 20000 is already in use the test fails and says so.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
require_pkg_prog cc gcc
require_prog ldd sha256sum

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
INC=$REPO/include
SEED_DIR=$HERE/seed
# The project's shared folder sits next to the checkout; a clone elsewhere finds it at its
# fixed place on these machines.
MANUAL=${SOFTRDMA_SEED_MANUAL:-$REPO/../shared/seeds/004_ec11ffda1d4a737f.txt}
[[ -n ${SOFTRDMA_SEED_MANUAL:-} || -r $MANUAL ]] || MANUAL=/work/shared/seeds/004_ec11ffda1d4a737f.txt
SEED_PORT=20000 # the server example's "#define PORT 20000"

if [[ ! -r $MANUAL ]]; then
    fail "seed manual not found: '$MANUAL' (set SOFTRDMA_SEED_MANUAL to the RDMA-CM programming" \
        "manual, seeds/004_ec11ffda1d4a737f.txt, or provide <repo>/../shared/seeds/). This test does not skip."
    conf_finish
fi
for h in rdma/rdma_cma.h infiniband/verbs.h; do
    if [[ ! -r /usr/include/$h ]]; then
        fail "Debian's /usr/include/$h is missing (packages librdmacm-dev, libibverbs-dev): needed to compare warnings. This test does not skip."
        conf_finish
    fi
done
[[ -r $SEED_DIR/wrapper.h && -r $SEED_DIR/wrapper.c ]] || die "missing $SEED_DIR/wrapper.{h,c}"
log "   manual: $MANUAL ($(sha256sum <"$MANUAL" | cut -c1-16))"

W=$CONF_WORK/seed
mkdir -p "$W"

# extract <heading> <out>: the first ```c ... ``` block after the line starting with <heading>,
# before any other heading. Fails if there is none, or it is not closed.
extract() {
    awk -v h="$1" '
        !found { if (index($0, h) == 1) found = 1; next }
        state == 0 { if ($0 ~ /^```c[[:space:]]*$/) { state = 1; next }
                     if ($0 ~ /^#/) exit
                     next }
        state == 1 { if ($0 ~ /^```[[:space:]]*$/) { state = 2; exit } print }
        END { exit state == 2 ? 0 : 1 }' "$MANUAL" >"$2"
}

ok_extract=1
for pair in "server|### 10.2 Complete Server Example" "client|### 10.3 Complete Client Example"; do
    which=${pair%%|*}
    heading=${pair#*|}
    src=$W/$which.c
    if extract "$heading" "$src" && [[ -s $src ]] && grep -q 'int main(' "$src"; then
        pass "extract.$which: '$heading': $(wc -l <"$src") lines, sha256 $(sha256sum <"$src" | cut -c1-16)"
    else
        fail "extract.$which: no complete \`\`\`c block with a main() after '$heading' in $MANUAL"
        ok_extract=0
    fi
done
((ok_extract)) || conf_finish

# 1. Headers and warnings.
warnings() { grep -E ': warning: ' "$1" | sort -u; }
ok_build=1
for which in server client; do
    src=$W/$which.c
    name=compile.$which
    before=$CONF_FAILS
    # Where every RDMA header came from.
    if ! cc -H -fsyntax-only -I "$INC" "$src" >"$W/$which.H" 2>&1; then
        fail "$name: does not compile against $INC"
        dump_file "$name" "$W/$which.H"
        ok_build=0
        continue
    fi
    foreign=$(grep -E '^\.+ ' "$W/$which.H" | awk '{ print $2 }' | grep -E '/(infiniband|rdma)/' |
        while read -r f; do [[ $(readlink -f "$f") == "$(readlink -f "$INC")"/* ]] || echo "$f"; done | sort -u)
    if [[ -n $foreign ]]; then
        fail "$name: RDMA headers not taken from $INC: $(tr '\n' ' ' <<<"$foreign")"
    fi
    nhdr=$(grep -E '^\.+ ' "$W/$which.H" | awk '{ print $2 }' | grep -cE '/(infiniband|rdma)/')
    # Ours vs Debian's, same file, same flags.
    cc -Wall -I "$INC" -c "$src" -o "$W/$which.o" >"$W/$which.ours.log" 2>&1
    rc_ours=$?
    (cd "$W" && cc -Wall -c "$which.c" -o "$W/$which.debian.o") >"$W/$which.debian.log" 2>&1
    rc_deb=$?
    # Both logs name the file the same way ($src vs ./name): normalise to the base name.
    sed -i "s|$W/||g" "$W/$which.ours.log" "$W/$which.debian.log"
    if ((rc_ours != 0)); then
        fail "$name: cc -Wall -I $INC failed (exit $rc_ours)"
        dump_file "$name (our headers)" "$W/$which.ours.log"
        ok_build=0
        continue
    fi
    if ((rc_deb != 0)); then
        fail "$name: cc -Wall with Debian's headers failed (exit $rc_deb): cannot compare warnings"
        dump_file "$name (Debian headers)" "$W/$which.debian.log"
    fi
    extra=$(comm -23 <(warnings "$W/$which.ours.log") <(warnings "$W/$which.debian.log"))
    if [[ -n $extra ]]; then
        fail "$name: warnings with our headers that Debian's headers do not give:"
        printf '%s\n' "$extra" | sed 's/^/    | /'
        dump_file "$name (our headers)" "$W/$which.ours.log"
        dump_file "$name (Debian headers)" "$W/$which.debian.log"
    fi
    if ((CONF_FAILS == before)); then
        nw=$(warnings "$W/$which.ours.log" | wc -l)
        pass "$name: compiles unchanged against our headers ($nhdr RDMA headers, all ours); $nw warning(s), all also given with Debian's headers"
        warnings "$W/$which.ours.log" | sed 's/^/    (same with Debian headers) /'
    else
        ok_build=0
    fi
done
((ok_build)) || conf_finish

# 2. Link: the plain client and the plain server, and the server with the wrapper.
link() { # <out> <objects...>
    local out=$1
    shift
    cc -o "$out" "$@" -L "$LIBDIR" -Wl,-rpath,"$LIBDIR" -lrdmacm -libverbs >"$out.log" 2>&1
}
before=$CONF_FAILS
link "$W/client" "$W/client.o" || { fail "link.client: failed against $LIBDIR"; dump_file link.client "$W/client.log"; }
link "$W/server.plain" "$W/server.o" || { fail "link.server: failed against $LIBDIR"; dump_file link.server "$W/server.plain.log"; }
if cc -Wall -I "$INC" -c "$SEED_DIR/wrapper.c" -o "$W/wrapper.o" >"$W/wrapper.log" 2>&1 &&
    cc -Wall -I "$INC" -include "$SEED_DIR/wrapper.h" -c "$W/server.c" -o "$W/server.wrapped.o" >>"$W/wrapper.log" 2>&1; then
    link "$W/server" "$W/server.wrapped.o" "$W/wrapper.o" ||
        { fail "link.server_wrapped: failed against $LIBDIR"; dump_file link.server_wrapped "$W/server.log"; }
else
    fail "build.server_wrapped: the server with -include $SEED_DIR/wrapper.h does not compile"
    dump_file build.server_wrapped "$W/wrapper.log"
fi
((CONF_FAILS == before)) || conf_finish
pass "link: client, server and the wrapped server link against $LIBDIR"
check_resolves_to_ours ldd.client "$W/client" librdmacm.so.1 libibverbs.so.1
check_resolves_to_ours ldd.server "$W/server" librdmacm.so.1 libibverbs.so.1

# 3. Run.
for run in 1 2 3; do
    name=seed.run.$run
    before=$CONF_FAILS
    if port_listening "$SEED_PORT"; then
        fail "$name: port $SEED_PORT is already in use on this machine; the manual's server hard-codes" \
            "PORT $SEED_PORT, so it cannot run. Free the port (the listening socket is below)."
        awk -v p=":$(printf '%04X' "$SEED_PORT")" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p' \
            /proc/net/tcp /proc/net/tcp6 2>/dev/null | sed 's/^/    | /'
        break
    fi
    start_bg "$name" "$SEED_PORT" "$W/server" || break
    spid=$BG_PID
    sout=$BG_OUT
    log "-- $name: client: client 127.0.0.1 $SEED_PORT"
    run_cmd "$name.client" "$W/client" 127.0.0.1 "$SEED_PORT"
    crc=$RUN_RC
    cout=$RUN_OUT
    # The server prints what it received when it tears the connection down, after the
    # client's disconnect. Bounded wait; it never exits on its own.
    wait_grep "$sout" '^server received: ' 15 "$spid"
    sleep 0.3 # let a (wrong) second line or a crash show up
    alive=0
    is_alive "$spid" && alive=1
    stop_bg "$spid"
    if ((crc != 0)); then
        fail "$name: client: $(describe_rc "$crc" "$CONF_PAIR_TIMEOUT")"
    fi
    ((alive)) || fail "$name: the server was no longer running after the exchange (it should loop forever): $(describe_rc "$BG_RC" "$CONF_PAIR_TIMEOUT")"
    grep -qx 'Connected!' "$cout" || fail "$name: client did not print 'Connected!'"
    grep -qx 'Message sent' "$cout" || fail "$name: client did not print 'Message sent'"
    grep -q 'Send failed' "$cout" && fail "$name: client printed 'Send failed'"
    for l in "Server listening on port $SEED_PORT" 'Connection request received' 'Connection established' 'Disconnected'; do
        grep -qx "$l" "$sout" || fail "$name: server did not print '$l'"
    done
    got=$(grep -c '^server received: ' "$sout")
    if [[ $got != 1 ]] || ! grep -qx 'server received: Hello from RDMA client!' "$sout"; then
        fail "$name: expected exactly one line 'server received: Hello from RDMA client!' from the server, got $got line(s): $(grep -m3 '^server received: ' "$sout" | tr '\n' '|')"
    fi
    grep -q '^Event: ' "$sout" && fail "$name: the server got an unexpected CM event: $(grep -m1 '^Event: ' "$sout")"
    if ((CONF_FAILS == before)); then
        pass "$name: client: Connected! / Message sent (exit 0); server: $(grep -x 'server received: .*' "$sout")"
    else
        dump_file "$name server" "$sout"
        dump_file "$name client" "$cout"
    fi
done

conf_finish
