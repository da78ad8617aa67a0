#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Open MPI over UCX over softrdma between two "hosts" (network namespaces joined by a veth
# pair this test makes): mpirun in host A starts two ranks there and two in host B through a
# launcher that enters B's namespace, every side under `softrdma run`. sr_mpi_check checks
# every byte (ping-pong 8 B - 4 MiB, MPI_Allreduce, MPI_Alltoall) over rc_verbs and over
# ud_verbs on the veth's device, and UCX's log shows that device and transport carried it.
#   usage: mpi_two_hosts.sh <libdir> <bindir>
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../netns/lib/two_hosts.sh"
bindir=$(cd "$2" && pwd -P)
SR=$bindir/softrdma
CHECK=$bindir/sr_mpi_check
command -v mpirun >/dev/null || { echo "FAIL: mpirun missing (apt-get install openmpi-bin)"; exit 1; }
[[ -x $CHECK ]] || { echo "FAIL: no $CHECK"; exit 1; }
TWO_HOSTS_IFNAME=srv0 two_hosts_up "$1"
dev=sr_$vetha

# mpirun's remote shell: "<agent> <host> <command line>" runs the command in that host's
# namespace, under softrdma run.
agent=$work/netns_rsh
cat >"$agent" <<AGENT
#!/bin/sh
host=\$1; shift
case \$host in
    $ipa) ns=$nsa ;;
    $ipb) ns=$nsb ;;
    *) echo "netns_rsh: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" "$SR" run -- sh -c "\$*"
AGENT
chmod +x "$agent"
root_flag=()
[[ $(id -u) -eq 0 ]] && root_flag=(--allow-run-as-root)

for tl in rc_verbs ud_verbs; do
    tls=$tl,self
    [[ $tl == rc_verbs ]] && tls=rc_verbs,ud_verbs:aux,self
    out=$work/mpi_$tl.out
    ip netns exec "$nsa" timeout 180 "$SR" run -- mpirun "${root_flag[@]}" --oversubscribe -np 4 \
        --host "$ipa:2,$ipb:2" --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include "$vetha" \
        --mca pml ucx --mca btl self -x UCX_TLS="$tls" -x UCX_NET_DEVICES="$dev:1" \
        -x UCX_LOG_LEVEL=info "$CHECK" >"$out" 2>&1
    rc=$?
    remote=$(grep -cE "ep_cfg\[[0-9]+\]: tag\(([^)]* )?$tl/$dev:1" "$out")
    if ((rc == 0)) && grep -q '^pingpong ok: .* with 3 peers' "$out" && grep -q '^allreduce ok' "$out" &&
        grep -q '^alltoall ok' "$out" && ((remote >= 4)); then
        echo "PASS: 4 ranks on 2 hosts over $tl/$dev: $(grep '^pingpong ok' "$out" | sed 's/pingpong ok: //'), allreduce, alltoall"
    else
        echo "FAIL: 4 ranks on 2 hosts over $tl (mpirun exit $rc, $remote endpoints over $tl/$dev)"
        show mpirun "$out"
        fails=$((fails + 1))
    fi
done

if ((fails)); then
    echo "mpi_two_hosts: $fails failure(s)"
    exit 1
fi
echo "mpi_two_hosts: all passed"
