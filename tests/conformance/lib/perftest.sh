# SPDX-License-Identifier: BSD-2-Clause
# perftest cases with a sample of the data checked (sourced after lib.sh, after conf_init).
#
# The data really moves: conformance/shim/mr_sample.c is preloaded on both sides and fills
# every memory region with a pattern of that side's seed before traffic starts, then counts at
# deregistration which 8-byte words hold this side's pattern, the peer's, or neither. On the
# side(s) that receive, at least the bytes of one message (per QP) must hold the peer's pattern;
# on a side that only sends, none may; and nowhere may a word hold anything else (perftest's
# own ping-pong markers aside). Atomics and the 2-byte latency tests move less than a word per
# message and are checked by their result lines only.
for p in ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_atomic_bw ib_atomic_lat; do
    require_pkg_prog "$p" perftest
done
SHIM=$BINDIR/sr_mr_sample.so
[[ -e $SHIM ]] || die "no $SHIM (build target sr_mr_sample)"

S='[[:space:]]'
N='[0-9]+(\.[0-9]+)?'

# sample_sums <file>: "own peer other" summed over the data regions (perftest's 4 KiB
# RDMA CM exchange buffer is left out: it holds the exchanged addresses).
sample_sums() {
    awk '$1 == "mr" && $2 > 4096 { o += $4; p += $6; x += $8; n++ }
         END { printf "%d %d %d %d\n", o, p, x, n }' "$1" 2>/dev/null
}

# check_side <name> <side> <file> <min peer bytes, or 0 for a side that only sends> <max other>
check_side() {
    local name=$1 side=$2 file=$3 want=$4 max_other=$5 own peer other n
    read -r own peer other n <<<"$(sample_sums "$file")"
    if ((${n:-0} == 0)); then
        fail "$name: $side reported no memory region (was the shim loaded? $(cat "$file" 2>/dev/null))"
        return 1
    fi
    if ((want > 0 && peer < want)); then
        fail "$name: $side holds $peer bytes of the peer's data, expected at least $want (own $own, other $other)"
        return 1
    fi
    if ((want == 0 && peer != 0)); then
        fail "$name: $side only sends, yet $peer bytes of the peer's data landed in its regions"
        return 1
    fi
    if ((other > max_other)); then
        fail "$name: $side has $other bytes that are neither side's data (allowed $max_other): corruption"
        return 1
    fi
    SAMPLE_NOTE+=" $side:peer=$peer,own=$own,other=$other"
}

# pt <name> <server receives> <client receives> <max other> <result ERE> <prog> [args...]
# "receives" is the minimum number of the peer's bytes expected there, 0 for a side that only
# sends, - for no data check.
pt() {
    local name=perftest.$1 srv_want=$2 cli_want=$3 max_other=$4 re=$5 prog=$6 before=$CONF_FAILS line
    local so=$CONF_WORK/$1.server.sample co=$CONF_WORK/$1.client.sample pre=${LD_PRELOAD:+$LD_PRELOAD:}$SHIM
    shift 6
    rm -f "$so" "$co"
    perftest_pair "$name" env LD_PRELOAD="$pre" SR_SAMPLE_SEED=1 SR_SAMPLE_PEER_SEED=2 SR_SAMPLE_OUT="$so" \
        "$prog" "$@" -p @PORT@ -- \
        env LD_PRELOAD="$pre" SR_SAMPLE_SEED=2 SR_SAMPLE_PEER_SEED=1 SR_SAMPLE_OUT="$co" \
        "$prog" "$@" -p @PORT@ 127.0.0.1 || return 1
    local r
    if [[ " $* " == *" -R "* ]]; then
        expect_grep "$name" "$PAIR_CLIENT_OUT" "^$S*rdma_cm QPs$S*:$S*ON$S*\$" "client does not report 'rdma_cm QPs : ON'" || return 1
        expect_grep "$name" "$PAIR_CLIENT_OUT" "^$S*Data ex\\. method$S*:$S*rdma_cm$S*\$" "client does not report 'Data ex. method : rdma_cm'" || return 1
    fi
    for r in $re; do
        expect_grep "$name" "$PAIR_CLIENT_OUT" "$r" "client did not print the result line /$r/" || return 1
    done
    line=$(grep -E -- "${re##* }" "$PAIR_CLIENT_OUT" | tail -1 | awk '{ $1 = $1; print }')
    # Bandwidth lines: bytes iterations peak average msgrate; the average must not be zero.
    if [[ $(wc -w <<<"$line") == 5 ]] && ! awk '{ exit !($4 + 0 > 0) }' <<<"$line"; then
        fail "$name: zero average bandwidth: '$line'"
        return 1
    fi
    SAMPLE_NOTE=""
    if [[ $srv_want != - ]]; then
        check_side "$name" server "$so" "$srv_want" "$max_other" || return 1
        check_side "$name" client "$co" "$cli_want" "$max_other" || return 1
    fi
    ((CONF_FAILS == before)) && pass "$name: $prog $* -> '$line'${SAMPLE_NOTE:+ (data:$SAMPLE_NOTE)}"
}

# Result lines: bandwidth "<bytes> <iters> <peak> <avg> <rate>", latency "<bytes> <iters>" + 7
# figures: min, max, typical, average, stdev, 99% and 99.9%. perftest prints the stdev as -nan
# when its variance sum loses precision (a max a thousand times the min); the others are numbers.
bw() { echo "^$S*$1$S+[0-9]+$S+$N$S+$N$S+$N$S*\$"; }
lat() { echo "^$S*$1$S+[0-9]+($S+$N){4}$S+($N|-?nan)($S+$N){2}$S*\$"; }
K64=65536
M8=8388608
