#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Conformance: Debian's unmodified ibv_devinfo on our libibverbs.so.1.
#  - `ibv_devinfo`, `ibv_devinfo -v`, `ibv_devinfo -d sr_lo` and `ibv_devinfo -v -d sr_lo`
#    exit 0; sr_lo shows transport: InfiniBand (0), state: PORT_ACTIVE (4),
#    link_layer: Ethernet, active_mtu: 4096 (5) (and max_mtu 4096 (5));
#    every other sr_* device shows transport InfiniBand (0) and link_layer Ethernet;
#  - the -v outputs carry a GID line ::ffff:127.0.0.1 on sr_lo;
#  - `ibv_devinfo -l` lists sr_lo;
#  - `ibv_devinfo -d no_such_device` fails (non-zero, no hang);
#  - WITHOUT our library ibv_devinfo fails or shows no device (NOTE only, if this
#    machine has real RDMA devices).
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
conf_init "$@"
require_prog ibv_devinfo

S='[[:space:]]'
# block <file> <dev>: the lines of one device's section ("hca_id:\t<dev>" to the next hca_id).
block() { awk -v d="$2" '/^hca_id:/ { inb = ($2 == d) } inb' "$1"; }
hcas() { awk '/^hca_id:/ { print $2 }' "$1"; }

# check_dev <name> <file> <dev> <strict>: field checks on one device's section.
check_dev() {
    local name=$1 file=$2 dev=$3 strict=$4 b f before=$CONF_FAILS
    b=$CONF_WORK/$name.$dev.block
    block "$file" "$dev" >"$b"
    if [[ ! -s $b ]]; then
        fail "$name: no 'hca_id: $dev' section"
        dump_file "$name" "$file"
        return 1
    fi
    local -a want=(
        "^${S}+transport:${S}+InfiniBand \\(0\\)\$|transport: InfiniBand (0)"
        "^${S}+link_layer:${S}+Ethernet\$|link_layer: Ethernet"
        "^${S}+port:${S}+1\$|port: 1"
    )
    if ((strict)); then
        want+=(
            "^${S}+state:${S}+PORT_ACTIVE \\(4\\)\$|state: PORT_ACTIVE (4)"
            "^${S}+active_mtu:${S}+4096 \\(5\\)\$|active_mtu: 4096 (5)"
            "^${S}+max_mtu:${S}+4096 \\(5\\)\$|max_mtu: 4096 (5)"
        )
    fi
    for f in "${want[@]}"; do
        if ! grep -qE -- "${f%%|*}" "$b"; then
            fail "$name: $dev does not show '${f#*|}'"
        fi
    done
    if ((CONF_FAILS != before)); then dump_file "$name $dev section" "$b"; return 1; fi
    if ((!strict)); then
        log "   $name: $dev $(grep -E "^${S}+state:" "$b" | head -1 | tr -s '\t' ' ')"
    fi
    return 0
}

# devinfo_case <name> <want_gid> <args...>
devinfo_case() {
    local name=$1 want_gid=$2 d before=$CONF_FAILS
    shift 2
    if ! run_cmd "$name" ibv_devinfo "$@"; then
        fail "$name: ibv_devinfo $*: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT")"
        dump_file "$name" "$RUN_OUT"
        return 1
    fi
    local out=$RUN_OUT
    mapfile -t devs < <(hcas "$out")
    if ((${#devs[@]} == 0)); then
        fail "$name: ibv_devinfo $* printed no hca_id"
        dump_file "$name" "$out"
        return 1
    fi
    check_dev "$name" "$out" sr_lo 1
    for d in "${devs[@]}"; do
        [[ $d == sr_lo ]] && continue
        [[ $d == sr_* ]] || fail "$name: device '$d' is not named sr_*"
        check_dev "$name" "$out" "$d" 0
    done
    if ((want_gid)); then
        if ! block "$out" sr_lo | grep -qE "^${S}+GID\\[${S}*[0-9]+\\]:${S}+::ffff:127\\.0\\.0\\.1(,|${S}|\$)"; then
            fail "$name: no GID line '::ffff:127.0.0.1' for sr_lo"
            block "$out" sr_lo | grep -E 'GID|gid' | sed 's/^/    | /'
        fi
    fi
    if ((CONF_FAILS == before)); then
        pass "ibv_devinfo $* (devices: ${devs[*]})"
    fi
}

devinfo_case devinfo 0
devinfo_case devinfo_v 1 -v
devinfo_case devinfo_d 0 -d sr_lo
devinfo_case devinfo_v_d 1 -v -d sr_lo

# -d sr_lo must show only sr_lo.
if run_cmd devinfo_d_only ibv_devinfo -d sr_lo; then
    only=$(hcas "$RUN_OUT" | tr '\n' ' ')
    if [[ $only == "sr_lo " ]]; then pass "ibv_devinfo -d sr_lo shows only sr_lo"
    else fail "ibv_devinfo -d sr_lo shows devices: '$only'"; dump_file devinfo_d_only "$RUN_OUT"; fi
else
    fail "ibv_devinfo -d sr_lo: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT")"; dump_file devinfo_d_only "$RUN_OUT"
fi

# -l lists the devices.
if run_cmd devinfo_l ibv_devinfo -l; then
    if grep -qE "^${S}+sr_lo${S}*\$" "$RUN_OUT" && grep -qE '^[1-9][0-9]* HCAs? found' "$RUN_OUT"; then
        pass "ibv_devinfo -l: $(head -1 "$RUN_OUT")"
    else
        fail "ibv_devinfo -l does not list sr_lo"; dump_file devinfo_l "$RUN_OUT"
    fi
else
    fail "ibv_devinfo -l: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT")"; dump_file devinfo_l "$RUN_OUT"
fi

# An unknown device must fail, promptly.
run_cmd devinfo_bad ibv_devinfo -d no_such_device
if ((RUN_RC != 0 && RUN_RC != 124 && RUN_RC != 137 && RUN_RC != 125)); then
    pass "ibv_devinfo -d no_such_device fails (exit $RUN_RC: $(head -1 "$RUN_OUT"))"
else
    fail "ibv_devinfo -d no_such_device: $(describe_rc "$RUN_RC" "$CONF_PAIR_TIMEOUT"), expected a prompt failure"
    dump_file devinfo_bad "$RUN_OUT"
fi

# Without our library: no device.
out=$CONF_WORK/devinfo.system.out
without_lib timeout -k 5 "$CONF_PAIR_TIMEOUT" ibv_devinfo >"$out" 2>&1 </dev/null
rc=$?
mapfile -t sysdevs < <(hcas "$out")
if ((rc == 124 || rc == 137)); then
    fail "ibv_devinfo without our library hung ($(describe_rc "$rc" "$CONF_PAIR_TIMEOUT"))"
    dump_file "ibv_devinfo (system library)" "$out"
elif ((rc != 0 || ${#sysdevs[@]} == 0)); then
    pass "without our library ibv_devinfo finds no RDMA device (exit $rc: $(head -1 "$out"))"
else
    note "this machine has real RDMA devices (${sysdevs[*]}) visible to the system libibverbs"
fi

conf_finish
