#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# UCX 1.13 (Debian's ucx-utils) on softrdma, launched the way the README tells a user to:
# `softrdma run -- <program>`.
#   1. ucx_info -d lists rc_verbs and ud_verbs on sr_lo:1 and the rdmacm connection manager,
#      as root (a private mount namespace), as an unprivileged user (user + mount namespace),
#      and as root with --host-paths in a stand-in for a container's own /dev;
#   2. ucx_perftest tag_lat, tag_bw, ucp_put_bw and ucp_get pass between two processes over
#      rc_verbs (ud_verbs only as UCX's wire-up transport: rc_verbs alone cannot connect, on
#      hardware either) and over ud_verbs, and UCX's own log names the transport that carried
#      the data (ep_cfg ... rc_verbs/sr_lo:1).
#   usage: ucx.sh <libdir> <bindir>
. "$(dirname "${BASH_SOURCE[0]}")/../conformance/lib/lib.sh"
conf_init "$@"
require_pkg_prog ucx_info ucx-utils
require_pkg_prog ucx_perftest ucx-utils
SR=$BINDIR/softrdma
[[ -x $SR ]] || die "no softrdma tool in $BINDIR"

# check_ucx_info <label> <output file>
check_ucx_info() {
    local t missing=()
    for t in rc_verbs ud_verbs; do
        awk -v t="$t" '/Transport:/ { tr = $3 } /Device:/ && tr == t && $3 == "sr_lo:1" { f = 1 }
                       END { exit !f }' "$2" || missing+=("$t on sr_lo:1")
    done
    grep -q 'Connection manager: rdmacm' "$2" || missing+=("the rdmacm connection manager")
    if ((${#missing[@]})); then
        fail "$1: ucx_info -d does not list ${missing[*]}"
        dump_file "ucx_info -d" "$2" 60
    else
        pass "$1: ucx_info -d lists rc_verbs and ud_verbs on sr_lo:1 and rdmacm"
    fi
}

run_cmd ucx_info "$SR" run -- ucx_info -d
check_ucx_info "as root" "$RUN_OUT"

# Unprivileged: a copy of the tool and the libraries that user `nobody` can read, run through
# setpriv (util-linux). The tool makes a user namespace for the private view.
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null; then
    priv=$CONF_WORK/unprivileged
    mkdir -p "$priv/bin" "$priv/lib"
    cp "$SR" "$priv/bin/"
    cp -P "$LIBDIR"/lib*.so* "$priv/lib/"
    chmod -R a+rX "$CONF_WORK"
    run_cmd ucx_info_user setpriv --reuid=65534 --regid=65534 --clear-groups \
        env -u LD_LIBRARY_PATH "$priv/bin/softrdma" run -- ucx_info -d
    check_ucx_info "as user nobody" "$RUN_OUT"
else
    note "not root: the unprivileged run above was the only one"
fi

# (run_pair splits its commands at "--", so these say `softrdma run CMD` without one.)
# A container where root may not make namespaces: `softrdma run --host-paths` creates the
# device files on the container's own /dev. Played here in a mount namespace whose /dev is a
# fresh tmpfs (with null, zero, urandom, random and shm bound from the host's), so the host's
# /dev is never touched; there is no sysfs view, so UCX takes the GIDs for RoCE v1.
if [[ $(id -u) -eq 0 ]] && command -v unshare >/dev/null; then
    cat >"$CONF_WORK/container_dev.sh" <<'SCRIPT'
set -e
stash=$(mktemp -d)
mount --bind /dev "$stash"
mount -t tmpfs -o mode=0755 tmpfs /dev
for n in null zero urandom random; do touch "/dev/$n"; mount --bind "$stash/$n" "/dev/$n"; done
mkdir /dev/shm && mount --bind "$stash/shm" /dev/shm
umount -l "$stash" && rmdir "$stash"
"$1" run --host-paths -- ucx_info -d
test -c /dev/infiniband/uverbs_sr_lo && echo "device file made"
SCRIPT
    run_cmd ucx_info_host_paths unshare --mount --propagation private \
        bash "$CONF_WORK/container_dev.sh" "$SR"
    check_ucx_info "root with --host-paths" "$RUN_OUT"
    if [[ -e /dev/infiniband/uverbs_sr_lo ]]; then
        fail "--host-paths changed the host's /dev (it ran in a namespace of its own)"
    fi
fi

# perftest_case <transports> <test> <expected transport in UCX's ep_cfg line>
perftest_case() {
    local tls=$1 test=$2 want=$3 name="perftest_${2}_${1%%,*}"
    run_pair "$name" env UCX_TLS="$tls" UCX_NET_DEVICES=sr_lo:1 \
        "$SR" run ucx_perftest -p @PORT@ -- \
        env UCX_TLS="$tls" UCX_NET_DEVICES=sr_lo:1 UCX_LOG_LEVEL=info \
        "$SR" run ucx_perftest 127.0.0.1 -p @PORT@ -t "$test" -s 65536 -n 2000 || return
    if ! grep -q '^Final:' "$PAIR_CLIENT_OUT"; then
        fail "$name: no final result"
        dump_file client "$PAIR_CLIENT_OUT" 30
    elif ! grep -qE "ep_cfg\[[0-9]+\]: [a-z_]+\($want/sr_lo:1" "$PAIR_CLIENT_OUT"; then
        fail "$name: UCX did not use $want/sr_lo:1"
        dump_file client "$PAIR_CLIENT_OUT" 30
    else
        pass "$name: $(grep '^Final:' "$PAIR_CLIENT_OUT" | awk '{print $2 " iterations, " $4 " us avg, " $6 " MB/s"}') over $want"
    fi
}

for test in tag_lat tag_bw ucp_put_bw ucp_get; do
    perftest_case rc_verbs,ud_verbs:aux,self "$test" rc_verbs
    perftest_case ud_verbs,self "$test" ud_verbs
done
conf_finish
