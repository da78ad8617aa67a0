#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# check_provider_stubs.sh <libdir>
#
# Our stub libmlx5.so.1 and libefa.so.1 must export exactly what Debian's rdma-core 44
# providers export: every name@VERSION and every version node of Debian's symbols file
# (ibverbs-providers), no more and no less, so that any program linked against the real
# libraries loads with ours.
set -u
libdir=${1:?usage: $0 <libdir>}
symbols=/var/lib/dpkg/info/ibverbs-providers:amd64.symbols
[ -r "$symbols" ] || symbols=$(ls /var/lib/dpkg/info/ibverbs-providers:*.symbols 2>/dev/null | head -n1)
if [ ! -r "$symbols" ]; then
    echo "FAIL: Debian's ibverbs-providers symbols file is missing (install ibverbs-providers)"
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for lib in libmlx5.so.1 libefa.so.1; do
    # Debian's list: " name@VERSION minver" lines under the "libX.so.1 ..." header.
    awk -v l="$lib" '/^[^ *]/ { cur = $1; next } cur == l && /^ / { print $1 }' "$symbols" |
        sort > "$tmp/want"
    [ -s "$tmp/want" ] || { echo "FAIL: $lib has no entries in $symbols"; fail=1; continue; }
    f="$libdir/$lib"
    [ -e "$f" ] || { echo "FAIL: $f does not exist"; fail=1; continue; }
    # Ours: defined functions as name@VERSION, plus each version node as NODE@NODE (as the
    # symbols file writes them).
    {
        readelf --dyn-syms -W "$f" | awk '$7 != "UND" && $4 == "FUNC" && $8 ~ /@/ {
            n = $8; sub(/@@/, "@", n); print n }'
        readelf -V -W "$f" | awk '/^Version definition section/ { d = 1; next }
            /^Version (needs|symbols) section/ { d = 0 }
            d && /Name:/ { for (i = 1; i <= NF; i++) if ($i == "Name:") n = $(i + 1);
                           if (n !~ /\.so/) print n "@" n }'
    } | sort -u > "$tmp/have"
    missing=$(comm -23 "$tmp/want" "$tmp/have")
    extra=$(comm -13 "$tmp/want" "$tmp/have")
    if [ -n "$missing" ] || [ -n "$extra" ]; then
        fail=1
        echo "FAIL: $lib differs from Debian's list"
        [ -n "$missing" ] && echo "  missing:" && echo "$missing" | sed 's/^/    /'
        [ -n "$extra" ] && echo "  not in Debian's list:" && echo "$extra" | sed 's/^/    /'
    else
        echo "ok: $lib exports all $(wc -l < "$tmp/want") entries of Debian's list, and nothing else"
    fi
done
exit $fail
