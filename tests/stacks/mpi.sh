#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Open MPI 4.1 (Debian's openmpi-bin) over UCX over softrdma, launched as the README says:
# `softrdma run -- mpirun ...`. sr_mpi_check (tests/stacks/mpi_check.c) checks every byte of a
# ping-pong from 8 B to 4 MiB, MPI_Allreduce and MPI_Alltoall, on 2 and 4 ranks, over
# rc_verbs (ud_verbs as UCX's wire-up transport) and over ud_verbs; UCX's log must show that
# the transport named carried the ranks' traffic (ep_cfg ... <tl>/sr_lo:1).
#   usage: mpi.sh <libdir> <bindir>
. "$(dirname "${BASH_SOURCE[0]}")/../conformance/lib/lib.sh"
conf_init "$@"
require_pkg_prog mpirun openmpi-bin
SR=$BINDIR/softrdma
CHECK=$BINDIR/sr_mpi_check
[[ -x $SR ]] || die "no softrdma tool in $BINDIR"
[[ -x $CHECK ]] || die "no sr_mpi_check in $BINDIR (libopenmpi-dev missing at configure time?)"

root_flag=()
[[ $(id -u) -eq 0 ]] && root_flag=(--allow-run-as-root)

# mpi_case <ranks> <UCX_TLS> <transport that must carry the traffic>
mpi_case() {
    local np=$1 tls=$2 want=$3 name="mpi_np$1_${3}" eps
    run_cmd "$name" "$SR" run -- mpirun "${root_flag[@]}" --oversubscribe -np "$np" \
        --mca pml ucx --mca btl self -x UCX_TLS="$tls" -x UCX_NET_DEVICES=sr_lo:1 \
        -x UCX_LOG_LEVEL=info "$CHECK"
    eps=$(grep -cE "ep_cfg\[[0-9]+\]: tag\(([^)]* )?$want/sr_lo:1" "$RUN_OUT")
    if ((RUN_RC != 0)); then
        fail "$name: mpirun $(describe_rc "$RUN_RC" 60)"
        dump_file mpirun "$RUN_OUT" 40
    elif ! grep -q '^pingpong ok' "$RUN_OUT" || ! grep -q '^allreduce ok' "$RUN_OUT" ||
        ! grep -q '^alltoall ok' "$RUN_OUT"; then
        fail "$name: a stage did not report ok"
        dump_file mpirun "$RUN_OUT" 40
    elif ((eps < np)); then
        fail "$name: UCX's log shows $eps endpoints over $want/sr_lo:1, expected at least $np"
        dump_file mpirun "$RUN_OUT" 40
    else
        pass "$name: $(grep '^pingpong ok' "$RUN_OUT" | sed 's/pingpong ok: //'); allreduce, alltoall ok; $eps endpoints over $want"
    fi
}

for np in 2 4; do
    mpi_case "$np" rc_verbs,ud_verbs:aux,self rc_verbs
    mpi_case "$np" ud_verbs,self ud_verbs
done
conf_finish
