#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# check_exports.sh <libdir>
#
# Verifies that every symbol@VERSION listed in required_imports.txt (next to
# this script: what Debian 12's 33 RDMA programs import from libibverbs.so.1,
# librdmacm.so.1, libmlx5.so.1 and libefa.so.1) is exported by the library of
# that name in <libdir>, defined (not UND), as a function (FUNC/IFUNC: every
# import is a GLOBAL FUNC), GLOBAL or WEAK, with exactly that version
# (sym@@VERSION or sym@VERSION in readelf --dyn-syms).  Also checks that each
# library exists and has the right SONAME.  Exits 1 with a list of what is
# missing.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 <libdir>" >&2
    exit 2
fi
if [ ! -d "$1" ]; then
    echo "FAIL: libdir '$1' is not a directory" >&2
    exit 1
fi
libdir=$(cd "$1" && pwd -P)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
req="$here/required_imports.txt"

if [ ! -r "$req" ]; then
    echo "FAIL: $req not found" >&2
    exit 1
fi
if ! command -v readelf >/dev/null 2>&1; then
    echo "FAIL: readelf not found (binutils)" >&2
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nfail=0
missing=""
libs=$(grep -v '^[[:space:]]*#' "$req" | awk 'NF { print $2 }' | sort -u)

for lib in $libs; do
    f="$libdir/$lib"
    if [ ! -e "$f" ] && [[ " ${SOFTRDMA_LDD_ALLOW_SYSTEM:-} " == *" $lib "* ]]; then
        echo "NOTE: $lib is not built yet; its exports are not checked (SOFTRDMA_LDD_ALLOW_SYSTEM)"
        continue
    fi
    if [ ! -e "$f" ]; then
        echo "FAIL: $f does not exist"
        n=$(grep -v '^[[:space:]]*#' "$req" | awk -v l="$lib" '$2 == l' | wc -l)
        nfail=$((nfail + n))
        missing="$missing$(grep -v '^[[:space:]]*#' "$req" | awk -v l="$lib" '$2 == l { print "    " $0 }')"$'\n'
        continue
    fi
    soname=$(readelf -d -W "$f" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
    if [ "$soname" != "$lib" ]; then
        echo "FAIL: $f has SONAME '${soname:-<none>}', expected '$lib'"
        nfail=$((nfail + 1))
    fi
    # Defined, versioned function symbols as "name@VERSION" (@@ folded to @).
    # readelf --dyn-syms -W columns: Num Value Size Type Bind Vis Ndx Name
    readelf --dyn-syms -W "$f" 2>/dev/null |
        awk '$7 != "UND" && ($4 == "FUNC" || $4 == "IFUNC") &&
             ($5 == "GLOBAL" || $5 == "WEAK") && $8 ~ /@/ {
                 n = $8; sub(/@@/, "@", n); print n }' |
        sort -u > "$tmp/$lib.defs"
done

while read -r symver lib rest; do
    case "$symver" in ''|\#*) continue ;; esac
    [ -e "$libdir/$lib" ] || continue   # already reported above
    if ! grep -qxF "$symver" "$tmp/$lib.defs"; then
        # Say what we do have under that name, if anything.
        sym=${symver%@*}
        have=$(readelf --dyn-syms -W "$libdir/$lib" 2>/dev/null |
               awk -v s="$sym" '{ n = $8; sub(/@.*/, "", n) } n == s && $7 != "UND" { printf "%s%s (%s %s)", sep, $8, $4, $5; sep = ", " }')
        missing="$missing    $symver $lib${have:+   [have: $have]}"$'\n'
        nfail=$((nfail + 1))
    fi
done < "$req"

total=$(grep -v '^[[:space:]]*#' "$req" | awk 'NF' | wc -l)
if [ $nfail -ne 0 ]; then
    echo "check_exports: FAILED - missing or wrong exports in $libdir:"
    printf '%s' "$missing"
    exit 1
fi
echo "check_exports: all $total required imports are exported by the libraries in $libdir"
exit 0
