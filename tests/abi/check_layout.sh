#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# check_layout.sh <srcdir> <outdir>
#
# ABI layout test.  Builds tests/abi/layout.c twice:
#   ours: -I <srcdir>/include   (softrdma's public headers)
#   sys:  no -I                 (the distribution's rdma-core headers, i.e.
#                                Debian's libibverbs-dev + librdmacm-dev)
# runs both and fails if their outputs differ in any byte.  It also fails
# when the "ours" build pulled an rdma-core header from outside
# <srcdir>/include (anything under an infiniband/ directory, or librdmacm's
# rdma/ headers), and when the rdma-core development headers are missing:
# without them there is nothing to compare against, so that is an error,
# not a skip.
#
# Environment: CC (default cc), EXTRA_CFLAGS (added to both builds).

set -u

die() {
	echo "check_layout: FAIL: $*" >&2
	exit 1
}

[ $# -eq 2 ] || die "usage: $0 <srcdir> <outdir>"

srcdir=$(cd "$1" 2>/dev/null && pwd) || die "no such source dir: $1"
mkdir -p "$2" || die "cannot create output dir: $2"
outdir=$(cd "$2" && pwd)

CC=${CC:-cc}
CFLAGS="-std=gnu11 -O0 -Wall -Wextra -Werror ${EXTRA_CFLAGS:-}"
src=$srcdir/tests/abi/layout.c
ours_inc=$srcdir/include

[ -f "$src" ] || die "missing $src"
[ -d "$ours_inc" ] || die "missing $ours_inc"
command -v "$CC" >/dev/null 2>&1 || die "compiler '$CC' not found"

# The headers whose rdma-core versions we compare against.
hdrs="infiniband/verbs.h infiniband/sa.h infiniband/ib.h rdma/rdma_cma.h
      rdma/rdma_verbs.h rdma/rsocket.h"

# 1. The system must provide rdma-core's development headers.
missing=
for h in $hdrs; do
	if ! printf '#include <%s>\n' "$h" |
	     $CC -std=gnu11 -E -o /dev/null -x c - >/dev/null 2>&1; then
		missing="$missing $h"
	fi
done
if [ -n "$missing" ]; then
	die "system rdma-core headers not found:$missing
  This test compares softrdma's headers with rdma-core's and cannot run
  without them.  On Debian/Ubuntu: apt-get install libibverbs-dev librdmacm-dev"
fi

# 2. Build both variants, keeping the full dependency lists.
build() { # build <name> [extra flags...]
	name=$1
	shift
	rm -f "$outdir/layout_$name" "$outdir/layout_$name.d"
	# shellcheck disable=SC2086
	if ! $CC $CFLAGS "$@" -MD -MF "$outdir/layout_$name.d" \
	     -o "$outdir/layout_$name" "$src" 2>"$outdir/layout_$name.log"; then
		cat "$outdir/layout_$name.log" >&2
		die "layout.c does not compile against the $name headers" \
		    "(log: $outdir/layout_$name.log)"
	fi
}
build ours -I "$ours_inc"
build sys

# 3. Dependency audit.  For each build list every header it read, once as
#    the compiler named it (normalised, symlinks kept) and once resolved.
deps() { # deps <name> <realpath flag: -s keeps symlinks, -e resolves>
	sed -e 's/^[^:]*://' -e 's/\\$//' "$outdir/layout_$1.d" |
		awk '{ for (i = 1; i <= NF; i++) print $i }' |
		while IFS= read -r f; do
			realpath "$2" "$f" 2>/dev/null || echo "$f"
		done | sort -u
}
deps ours -s >"$outdir/deps_ours.txt"
deps ours -e >"$outdir/deps_ours_resolved.txt"
deps sys -s >"$outdir/deps_sys.txt"
deps sys -e >"$outdir/deps_sys_resolved.txt"

# Lines of stdin (not) starting with directory $1 (literal match, no regex).
under() { awk -v p="$1/" 'index($0, p) == 1'; }
not_under() { awk -v p="$1/" 'index($0, p) != 1'; }

rdma_hdr='/infiniband/|/rdma/(rdma_cma|rdma_cma_abi|rdma_verbs|rsocket)\.h$'
ours_inc=$(realpath -s "$ours_inc" 2>/dev/null || echo "$ours_inc")
ours_real=$(realpath -e "$ours_inc" 2>/dev/null || echo "$ours_inc")
# (a) an rdma-core header reached through the include path, not ours
bad=$(not_under "$ours_inc" <"$outdir/deps_ours.txt" | grep -E "$rdma_hdr")
# (b) one of ours that is really the system's file (e.g. a symlink to it)
bad="$bad
$(grep -E "$rdma_hdr" "$outdir/deps_sys_resolved.txt" |
  grep -Fx -f - "$outdir/deps_ours_resolved.txt")"
bad=$(echo "$bad" | sed "/^$/d" | sort -u)
if [ -n "$bad" ]; then
	echo "$bad" | sed 's/^/    /' >&2
	die "the 'ours' build used the rdma-core header(s) above instead of" \
	    "softrdma's (missing from $ours_inc or included by a wrong name)"
fi
if cat "$outdir/deps_sys.txt" "$outdir/deps_sys_resolved.txt" |
	under "$ours_inc" | grep -q . ||
   cat "$outdir/deps_sys.txt" "$outdir/deps_sys_resolved.txt" |
	under "$ours_real" | grep -q .; then
	die "the 'sys' build read softrdma headers (check CPATH/C_INCLUDE_PATH)"
fi
for h in $hdrs; do
	grep -qx "$ours_inc/$h" "$outdir/deps_ours.txt" ||
		die "the 'ours' build did not read $ours_inc/$h"
	grep -q "/$h\$" "$outdir/deps_sys.txt" ||
		die "the 'sys' build did not read a system $h"
done
# Kernel uAPI headers (linux-libc-dev) are allowed; show them for the record.
other=$(not_under "$ours_inc" <"$outdir/deps_ours.txt" | grep '/rdma/')
if [ -n "$other" ]; then
	echo "check_layout: note: 'ours' also read system headers:"
	echo "$other" | sed 's/^/    /'
fi

# 4. Run and compare.
"$outdir/layout_ours" >"$outdir/layout_ours.txt" ||
	die "layout_ours exited with status $?"
"$outdir/layout_sys" >"$outdir/layout_sys.txt" ||
	die "layout_sys exited with status $?"

if ! diff -u --label "rdma-core (system headers)" --label "softrdma ($ours_inc)" \
     "$outdir/layout_sys.txt" "$outdir/layout_ours.txt" >"$outdir/layout.diff"; then
	cat "$outdir/layout.diff"
	die "softrdma's header layout differs from rdma-core's" \
	    "($(grep -c '^[-+][^-+]' "$outdir/layout.diff") changed lines;" \
	    "diff: $outdir/layout.diff)"
fi

echo "check_layout: OK: identical output ($(grep -c "^###" "$outdir/layout_ours.txt") struct listings," \
     "$(grep -c ' off=' "$outdir/layout_ours.txt") members," \
     "$(grep -c "=0x" "$outdir/layout_ours.txt") constants)"
exit 0
