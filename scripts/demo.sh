#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The main job: install, build, then two processes exchange data over one RC queue pair on
# 127.0.0.1 through our libibverbs (SEND, 512 KiB RDMA WRITE, 512 KiB RDMA READ, all checked).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target ibverbs sr_rc_demo
port=$(( 20000 + RANDOM % 20000 ))
build/bin/sr_rc_demo -s -p "$port" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
sleep 0.2
timeout 60 build/bin/sr_rc_demo -c 127.0.0.1 -p "$port"
wait "$server"
trap - EXIT
echo "demo: both processes finished OK"
