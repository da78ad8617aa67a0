#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# What `cmake --install` gives a user, used the three ways a project would use it:
#   1. the files, under <prefix>/<libdir>/softrdma and <prefix>/include/softrdma only (nothing
#      that could shadow the system's rdma-core);
#   2. a program built with `pkg-config softrdma`, and one built with `find_package(softrdma)`
#      and softrdma::ibverbs, each linked to the installed libraries (checked with ldd) and run:
#      two processes exchange data over an RC queue pair (SEND, WRITE, READ, checked);
#   3. rdma-core's own pkg-config name (libibverbs) from softrdma's directory, and
#      `<prefix>/bin/softrdma run` finding the installed libraries.
#   usage: install_prefix.sh <build dir> <source dir>
set -euo pipefail
build=${1:?build dir} src=${2:?source dir}
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || fail "cmake --install failed"

# 1. The files.
lib=$(find "$prefix" -type d -path '*/softrdma' -name softrdma -exec test -e {}/libibverbs.so.1 \; -print | head -1)
[[ -n $lib ]] || fail "no <libdir>/softrdma/libibverbs.so.1 under $prefix"
for f in libibverbs.so.1 librdmacm.so.1 libmlx5.so.1 libefa.so.1 libibverbs.so librdmacm.so \
    pkgconfig/libibverbs.pc pkgconfig/librdmacm.pc; do
    [[ -e $lib/$f ]] || fail "missing $lib/$f"
done
for h in infiniband/verbs.h rdma/rdma_cma.h rdma/rdma_verbs.h; do
    [[ -f $prefix/include/softrdma/$h ]] || fail "missing include/softrdma/$h"
done
[[ -x $prefix/bin/softrdma ]] || fail "missing bin/softrdma"
stray=$(find "$prefix" \( -name 'lib*verbs*' -o -name 'librdmacm*' -o -name 'libmlx5*' -o -name 'libefa*' \) \
    -not -path "$lib/*" -not -name '*.pc' -not -path '*/doc/*')
[[ -z $stray ]] || fail "libraries outside $lib: $stray"
[[ -f $prefix/share/softrdma/softrdma.conf ]] && grep -qx "$prefix/${lib#"$prefix"/}" "$prefix/share/softrdma/softrdma.conf" ||
    fail "share/softrdma/softrdma.conf does not name $lib"
echo "files: libraries, headers, pkg-config, CMake package and tool installed under $prefix"

# Runs the demo pair with binary $1; checks it loads our installed libraries.
exchange() {
    local bin=$1 how=$2 port
    local loaded
    loaded=$(ldd "$bin" | sed -n 's/^[[:space:]]*libibverbs\.so\.1 => \([^ ]*\) .*/\1/p')
    [[ -n $loaded && $(realpath "$loaded") == $(realpath "$lib/libibverbs.so.1") ]] ||
        fail "$how: $bin does not load $lib/libibverbs.so.1: $(ldd "$bin" | grep ibverbs)"
    port=$((20000 + RANDOM % 20000))
    "$bin" -s -p "$port" >"$tmp/$how.server" 2>&1 &
    pids+=($!)
    local server=$!
    sleep 0.3
    timeout 60 "$bin" -c 127.0.0.1 -p "$port" >"$tmp/$how.client" 2>&1 || { cat "$tmp/$how.client"; fail "$how: client failed"; }
    wait "$server" || { cat "$tmp/$how.server"; fail "$how: server failed"; }
    echo "$how: built against the install, two processes exchanged data: $(tail -1 "$tmp/$how.client")"
}

# 2a. pkg-config.
pcdir=$(dirname "$(find "$prefix" -name softrdma.pc | head -1)")
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs softrdma) || fail "pkg-config softrdma"
cc -O2 -o "$tmp/demo_pc" "$src/tools/sr_rc_demo.c" $flags || fail "build with pkg-config ($flags)"
exchange "$tmp/demo_pc" pkg-config
# The rdmacm example too, as examples/README.md says to build it.
cc -O2 -o "$tmp/echo_pc" "$src/examples/rdmacm_echo.c" $flags || fail "build examples/rdmacm_echo.c with pkg-config"
port=$((20000 + RANDOM % 20000))
"$tmp/echo_pc" -s -p "$port" >"$tmp/echo.server" 2>&1 &
pids+=($!)
sleep 0.3
timeout 60 "$tmp/echo_pc" -c 127.0.0.1 -p "$port" -n 50 | grep -q "50 messages echoed" || fail "rdmacm_echo built against the install"
echo "pkg-config: examples/rdmacm_echo.c built against the install and run"

# 2b. find_package.
mkdir -p "$tmp/proj"
cp "$src/tools/sr_rc_demo.c" "$tmp/proj/"
cat >"$tmp/proj/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(uses_softrdma C)
find_package(softrdma 0.1 REQUIRED)
add_executable(demo sr_rc_demo.c)
target_link_libraries(demo PRIVATE softrdma::rdmacm)
CMAKE
cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/proj.log" 2>&1 ||
    { cat "$tmp/proj.log"; fail "find_package(softrdma)"; }
cmake --build "$tmp/proj/build" >>"$tmp/proj.log" 2>&1 || { cat "$tmp/proj.log"; fail "build with softrdma::rdmacm"; }
exchange "$tmp/proj/build/demo" find_package

# 3. rdma-core's names, and the tool.
libs_flag=$(PKG_CONFIG_PATH=$lib/pkgconfig pkg-config --libs-only-L librdmacm | tr ' ' '\n' | sed -n 's/^-L//p' | head -1)
[[ -n $libs_flag && $(realpath "$libs_flag") == $(realpath "$lib") ]] ||
    fail "librdmacm.pc in $lib/pkgconfig does not point at $lib (-L$libs_flag)"
# One version: the tool, the device's fw_ver, the project.
want=$(sed -n 's/^project(softrdma VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ $("$prefix/bin/softrdma" --version) == "softrdma $want" ]] || fail "softrdma --version is not $want"
(eval "$("$prefix/bin/softrdma" env)"; [[ ${LD_LIBRARY_PATH%%:*} == "$lib" ]]) ||
    fail "eval \$(softrdma env) does not put $lib first on LD_LIBRARY_PATH"
if command -v ibv_devinfo >/dev/null; then
    "$prefix/bin/softrdma" run -- ibv_devinfo -d sr_lo | grep -q "fw_ver:.*softrdma $want" ||
        fail "sr_lo's fw_ver is not softrdma $want"
fi
echo "version: softrdma $want (tool, fw_ver); softrdma env puts $lib first"
if command -v ibv_devices >/dev/null; then
    "$prefix/bin/softrdma" run -- ibv_devices | grep -q sr_lo || fail "softrdma run -- ibv_devices shows no sr_lo"
    echo "tool: $prefix/bin/softrdma run found the installed libraries (ibv_devices lists sr_lo)"
fi
echo "PASS"
