#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# libfabric 1.17 (Debian's libfabric-bin) over its verbs provider on softrdma, between two
# network namespaces joined by a veth pair this test makes (libfabric's verbs provider never
# uses a loopback interface), each side launched as `softrdma run -- fi_...`.
#   1. fi_info -p verbs lists an FI_EP_MSG domain and a verbs;ofi_rxm FI_EP_RDM domain on our
#      device sr_<veth>;
#   2. fi_pingpong -p verbs -e msg and -p "verbs;ofi_rxm" -e rdm, with its data checks (-c),
#      all sizes, pass.
#   usage: libfabric.sh <libdir> <bindir>
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../netns/lib/two_hosts.sh"
bindir=$(cd "$2" && pwd -P)
SR=$bindir/softrdma
command -v fi_pingpong >/dev/null || { echo "FAIL: fi_pingpong missing (apt-get install libfabric-bin)"; exit 1; }
TWO_HOSTS_IFNAME=srv0 two_hosts_up "$1"
dev=sr_$vetha

info=$(ip netns exec "$nsa" timeout 60 "$SR" run -- fi_info -p verbs 2>&1)
domains=$(awk '/provider:/ { p = $2 } /domain:/ { d = $2 } /type:/ { print p, d, $2 }' <<<"$info" | sort -u)
for want in "verbs $dev FI_EP_MSG" "verbs;ofi_rxm $dev FI_EP_RDM"; do
    if grep -qxF "$want" <<<"$domains"; then
        echo "PASS: fi_info lists $want"
    else
        echo "FAIL: fi_info does not list $want; it lists:"; echo "$domains" | sed 's/^/  | /'
        fails=$((fails + 1))
    fi
done

port=9228
for mode in "verbs msg" "verbs;ofi_rxm rdm"; do
    prov=${mode% *} ep=${mode#* }
    port=$((port + 1))
    pair "fi_pingpong_$ep" "$port" \
        "$SR" run fi_pingpong -p "$prov" -e "$ep" -B "$port" -I 200 -c -- \
        "$SR" run fi_pingpong -p "$prov" -e "$ep" -P "$port" -I 200 -c "$ipa"
    # Every size from 64 B to 1 MiB must have reported (the data checks run on each).
    if ! grep -qE '^1m +200 ' "$work/fi_pingpong_$ep.cli"; then
        echo "FAIL: fi_pingpong $ep: no 1 MiB result"; show cli "$work/fi_pingpong_$ep.cli"
        fails=$((fails + 1))
    fi
done

if ((fails)); then
    echo "libfabric: $fails failure(s)"
    exit 1
fi
echo "libfabric: all passed"
