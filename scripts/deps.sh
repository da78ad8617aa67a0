#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs what softrdma needs on Debian 12: `deps.sh build` for building the libraries,
# `deps.sh test` for the whole test suite (Debian's RDMA programs are the conformance oracle).
set -euo pipefail
BUILD_PKGS=(build-essential cmake pkg-config)
TEST_PKGS=(googletest libgtest-dev libbenchmark-dev python3 iproute2 procps
           libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils perftest
           clang libclang-rt-14-dev nftables ibverbs-providers
           ucx-utils openmpi-bin libopenmpi-dev libfabric-bin python3-pyverbs
           lintian man-db iperf3 netcat-openbsd sockperf redis-server redis-tools)
want=("${BUILD_PKGS[@]}")
[ "${1:-build}" = test ] && want+=("${TEST_PKGS[@]}")
missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
