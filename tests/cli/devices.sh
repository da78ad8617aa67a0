#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# `softrdma devices` lists what programs see: the same device names as Debian's ibv_devices on
# our libraries, with the same node GUIDs; sr_lo on netdev lo with 127.0.0.1 as GID 0; the
# --json form says the same.
#   usage: devices.sh <libdir> <bindir>
set -euo pipefail
lib=${1:?libdir} bin=${2:?bindir}
fail() { echo "FAIL: $*"; exit 1; }
text=$("$bin/softrdma" devices)
json=$("$bin/softrdma" devices --json)
echo "$text"
grep -q "^sr_lo: netdev lo (ifindex [0-9]*), loopback, state ACTIVE" <<<"$text" || fail "no sr_lo on lo"
grep -A1 "^sr_lo:" <<<"$text" | grep -q "gid 0: ::ffff:127.0.0.1" || fail "sr_lo's GID 0 is not 127.0.0.1"
if command -v ibv_devices >/dev/null; then
    want=$(LD_LIBRARY_PATH=$lib ibv_devices | awk 'NR > 2 {print $1, $2}' | sort)
    # ibv_devices prints the GUID without colons; drop them from ours (names have none).
    got=$(sed -n 's/^\(sr_[^:]*\):.* node_guid \([0-9a-f:]*\)$/\1 \2/p' <<<"$text" | tr -d ':' | sort)
    [[ $want == "$got" ]] || fail "ibv_devices says:
$want
softrdma devices says:
$got"
fi
python3 - "$json" <<'PY' || fail "--json disagrees with the text form"
import json, sys
devs = json.loads(sys.argv[1])
lo = [d for d in devs if d["name"] == "sr_lo"]
assert lo and lo[0]["netdev"] == "lo" and lo[0]["loopback"] and lo[0]["gids"][0] == "::ffff:127.0.0.1"
assert all(d["state"] == "ACTIVE" and d["gids"] for d in devs)
PY
echo "PASS: softrdma devices (${#text} bytes), ibv_devices agrees"
