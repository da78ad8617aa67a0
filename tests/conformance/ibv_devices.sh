#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified ibv_devices on our libibverbs.so.1.
#  - with LD_LIBRARY_PATH=<libdir>, the dynamic linker resolves libibverbs.so.1 to ours;
#  - ibv_devices exits 0 and lists at least one device, all named sr_*, including sr_lo,
#    each with a 16-hex-digit node GUID;
#  - WITHOUT our library the machine has no RDMA device (ibv_devices fails or lists
#    none), which proves the checks above exercised our library. On a machine with
#    real RDMA devices that sub-check only prints a NOTE.
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"
require_prog ibv_devices ldd

# Device names from ibv_devices output: the first column of the lines after the "----" rule.
device_names() { awk 'seen && NF { print $1 } /^[ \t]*-+[ \t]+-+/ { seen = 1 }' "$1"; }

# 1. The loader picks our library.
prog=$(command -v ibv_devices)
resolved=$(LD_LIBRARY_PATH=$LIBDIR ldd "$prog" 2>&1 | awk '$1 == "libibverbs.so.1" { print $3 }')
if [[ -n $resolved && $(readlink -f "$resolved") == "$(readlink -f "$LIBDIR/libibverbs.so.1")" ]]; then
    pass "ldd: $prog resolves libibverbs.so.1 to $resolved"
else
    fail "ldd: with LD_LIBRARY_PATH=$LIBDIR, $prog resolves libibverbs.so.1 to '${resolved:-<nothing>}', not ours"
    LD_LIBRARY_PATH=$LIBDIR ldd "$prog" 2>&1 | sed 's/^/    | /'
fi

# 2. ibv_devices with our library.
if run_cmd ibv_devices ibv_devices; then
    mapfile -t names < <(device_names "$RUN_OUT")
    before=$CONF_FAILS
    if ((${#names[@]} == 0)); then
        fail "ibv_devices: exit 0 but no device listed"
    fi
    for n in "${names[@]}"; do
        [[ $n == sr_* ]] || fail "ibv_devices: device '$n' is not named sr_*"
    done
    if [[ " ${names[*]} " != *" sr_lo "* ]]; then
        fail "ibv_devices: sr_lo not listed (got: ${names[*]:-none})"
    fi
    while read -r n guid; do
        [[ $guid =~ ^[0-9a-f]{16}$ ]] || fail "ibv_devices: device '$n' has node GUID '$guid', not 16 hex digits"
    done < <(awk 'seen && NF { print $1, $2 } /^[ \t]*-+[ \t]+-+/ { seen = 1 }' "$RUN_OUT")
    if ((CONF_FAILS == before)); then
        pass "ibv_devices lists ${#names[@]} device(s): ${names[*]}"
    else
        dump_file ibv_devices "$RUN_OUT"
    fi
else
    fail "ibv_devices with our library: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT")"
    dump_file ibv_devices "$RUN_OUT"
fi

# 3. Without our library: no RDMA device on this machine.
out=$CONF_WORK/ibv_devices.system.out
without_lib timeout -k 5 "$CONF_PAIR_TIMEOUT" ibv_devices >"$out" 2>&1 </dev/null
rc=$?
mapfile -t sysnames < <(device_names "$out")
if ((rc == 124 || rc == 137)); then
    fail "ibv_devices without our library hung ($(describe_rc "$rc" "$CONF_PAIR_TIMEOUT"))"
    dump_file "ibv_devices (system library)" "$out"
elif ((rc != 0 || ${#sysnames[@]} == 0)); then
    pass "without our library ibv_devices finds no RDMA device (exit $rc: $(head -1 "$out"))"
else
    note "this machine has real RDMA devices (${sysnames[*]}) visible to the system libibverbs;" \
        "cannot prove by absence that the checks above used our library (the ldd check still does)"
    dump_file "ibv_devices (system library)" "$out"
fi

conf_finish
