#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The Debian package: built from this build tree with CPack, checked by lintian (no errors),
# installed beside Debian's rdma-core without touching its files, and used as a user would:
# `softrdma --version`, the man page, and an unmodified rping through `softrdma run` from the
# installed files. Removed again at the end. Without root (no dpkg -i), the package is
# unpacked into a scratch root instead and run from there; the test says which it did.
#   usage: deb.sh <build dir>
set -euo pipefail
build=${1:?build dir}
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
for t in cpack lintian dpkg-deb; do command -v $t >/dev/null || fail "$t missing (scripts/deps.sh test)"; done
work=$(mktemp -d)
installed=0
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ "$installed" = 1 ] && dpkg -r softrdma >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$work"/out/softrdma_*.deb)
echo "built $(basename "$deb")"
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'
# lintian: errors fail; warnings are listed for the record.
lintian --fail-on error --tag-display-limit 0 "$deb" | tee "$work/lintian.txt" || fail "lintian reports errors"
files=$(dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|')
grep -qx "/usr/lib/softrdma/libibverbs.so.1.14.44.0" <<<"$files" || fail "no library under /usr/lib/softrdma"
grep -qx "/usr/bin/softrdma" <<<"$files" || fail "no /usr/bin/softrdma"
grep -qx "/usr/share/man/man1/softrdma.1.gz" <<<"$files" || fail "no man page"
grep -qx "/usr/share/doc/softrdma/copyright" <<<"$files" || fail "no copyright file"
grep -qx "/usr/libexec/softrdma/sr_rc_demo" <<<"$files" || fail "no demo program"
# Beside rdma-core: none of our files is one of its packages'.
for f in $(grep -v '/$' <<<"$files"); do
    owner=$(dpkg -S "$f" 2>/dev/null | cut -d: -f1 | grep -v '^softrdma$' || true)
    [ -z "$owner" ] || fail "$f belongs to $owner"
done
if [ "$(id -u)" = 0 ]; then
    dpkg -i "$deb" >/dev/null || fail "dpkg -i"
    installed=1
    prefix=/usr
    echo "installed with dpkg beside: $(dpkg-query -W -f='${Package} ${Version}\n' libibverbs1 librdmacm1 2>/dev/null | tr '\n' ' ')"
else
    dpkg-deb -x "$deb" "$work/root"
    prefix=$work/root/usr
    echo "not root: unpacked into $work/root instead of dpkg -i"
fi
"$prefix/bin/softrdma" --version | grep -q "softrdma 0\." || fail "--version"
zcat "$prefix/share/man/man1/softrdma.1.gz" | grep -q '^\.SH NAME' || fail "man page"
# Debian's rping (the system's binary, the system's rdma-core untouched) on the installed files.
port=$((20000 + RANDOM % 20000))
"$prefix/bin/softrdma" run -- rping -s -a 127.0.0.1 -p "$port" -C 20 >"$work/srv.txt" 2>&1 &
pids+=($!)
sleep 0.5
timeout 60 "$prefix/bin/softrdma" run -- rping -c -a 127.0.0.1 -p "$port" -C 20 -v -S 64 \
    >"$work/cli.txt" 2>&1 || { cat "$work/cli.txt" "$work/srv.txt"; fail "rping through softrdma run"; }
wait "${pids[0]}" || { cat "$work/srv.txt"; fail "rping server"; }
pids=()
n=$(grep -c "^ping data: rdma-ping-" "$work/cli.txt" || true)
[ "$n" = 20 ] || { cat "$work/cli.txt"; fail "rping printed $n of 20 pings"; }
# What the container runs (Dockerfile: ENTRYPOINT and CMD), from the installed files: the
# image's contents checked on this host, where no Docker daemon may run.
entry=$(sed -n 's/^ENTRYPOINT \["\(.*\)"\]$/\1/p' "$src/Dockerfile")
cmd=$(sed -n 's/^CMD \["\(.*\)"\]$/\1/p' "$src/Dockerfile")
[ -n "$entry" ] && [ -n "$cmd" ] || fail "Dockerfile has no ENTRYPOINT/CMD"
grep -qx "$entry" <<<"$files" && grep -qx "$cmd" <<<"$files" || fail "the image's $entry / $cmd are not in the package"
grep -q '^ && apt-get install .*/tmp/softrdma_\*\.deb' "$src/Dockerfile" || fail "the image does not install the package"
had_dev=0
[ -e /dev/infiniband ] && had_dev=1
if [ "$installed" = 1 ]; then
    out=$(PATH=/usr/bin:$PATH timeout 120 "$entry" "$cmd" 2>&1) || { echo "$out"; fail "entrypoint + demo"; }
    # Here the entrypoint can make a namespace: it must not have touched this host's /dev.
    if [ "$had_dev" = 0 ] && [ -e /dev/infiniband ]; then
        rm -rf /dev/infiniband
        fail "the entrypoint created /dev/infiniband on the host"
    fi
else
    out=$(PATH=$prefix/bin:$PATH SOFTRDMA_LIBDIR=$prefix/lib/softrdma timeout 120 \
        "$prefix/bin/softrdma" run -- "$work/root$cmd" 2>&1) || { echo "$out"; fail "demo"; }
fi
grep -q "demo: both processes finished OK" <<<"$out" || { echo "$out"; fail "the demo did not finish"; }
echo "container entrypoint + demo: OK"
# The system's verbs stay the system's: the dynamic linker does not know our directory.
if ldconfig -p | grep -q "/softrdma/"; then fail "the package put softrdma on the linker's path"; fi
if [ "$installed" = 1 ]; then
    dpkg -r softrdma >/dev/null || fail "dpkg -r"
    installed=0
    [ ! -e /usr/bin/softrdma ] || fail "dpkg -r left /usr/bin/softrdma"
fi
echo "PASS"
