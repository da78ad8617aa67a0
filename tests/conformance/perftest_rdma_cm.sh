#!/usr/bin/env bash
# Conformance: Debian's unmodified perftest in RDMA CM mode (-R: connection setup and the
# exchange of buffer addresses go through librdmacm instead of a TCP side channel), over
# 127.0.0.1 on our librdmacm.so.1 + libibverbs.so.1 (+ the stub libmlx5.so.1/libefa.so.1
# perftest links directly).
#   server: <prog> -R -p PORT -n 1000          client: <prog> -R -p PORT -n 1000 127.0.0.1
# for ib_send_bw (SEND), ib_write_bw (RDMA WRITE) and ib_read_lat (RDMA READ):
#   - both sides exit 0;
#   - the client reports "rdma_cm QPs : ON" and "Data ex. method : rdma_cm";
#   - the client prints the result table line: for the bandwidth tests
#     "65536 1000 <peak> <average> <msg rate>" with a non-zero average, for ib_read_lat
#     "2 1000 <t_min> <t_max> <t_typical> <t_avg> <t_stdev> <99%> <99.9%>".
. "$(dirname "${BASH_SOURCE[0]}")/lib/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cm.sh"
conf_init "$@"
cm_init
for p in ib_send_bw ib_write_bw ib_read_lat; do require_pkg_prog "$p" perftest; done
require_prog ldd

check_resolves_to_ours perftest.ldd ib_send_bw librdmacm.so.1 libibverbs.so.1

S='[[:space:]]'
N='[0-9]+(\.[0-9]+)?'
BW_RE="^$S*65536$S+1000$S+$N$S+$N$S+$N$S*\$"
LAT_RE="^$S*2$S+1000($S+$N){7}$S*\$"

# perf_case <prog> <result ERE> <header ERE>
perf_case() {
    local prog=$1 re=$2 hdr=$3 name=perftest.$1 before=$CONF_FAILS line
    run_pair "$name" "$prog" -R -p @PORT@ -n 1000 -- "$prog" -R -p @PORT@ -n 1000 127.0.0.1 || return 1
    expect_grep "$name" "$PAIR_CLIENT_OUT" "^$S*rdma_cm QPs$S*:$S*ON$S*\$" "client does not report 'rdma_cm QPs : ON'" || return 1
    expect_grep "$name" "$PAIR_CLIENT_OUT" "^$S*Data ex\\. method$S*:$S*rdma_cm$S*\$" "client does not report 'Data ex. method : rdma_cm'" || return 1
    expect_grep "$name" "$PAIR_CLIENT_OUT" "$hdr" "client did not print the result table header" || return 1
    expect_grep "$name" "$PAIR_CLIENT_OUT" "$re" "client did not print the result table line" || return 1
    line=$(grep -E -- "$re" "$PAIR_CLIENT_OUT" | head -1 | awk '{ $1 = $1; print }')
    if [[ $re == "$BW_RE" ]]; then
        # Fields: bytes iterations peak average msgrate. The average must not be zero.
        if awk '{ exit !($4 + 0 > 0) }' <<<"$line"; then :; else
            fail "$name: zero average bandwidth: '$line'"
            dump_file "$name server" "$PAIR_SERVER_OUT"
            dump_file "$name client" "$PAIR_CLIENT_OUT"
        fi
    fi
    ((CONF_FAILS == before)) && pass "$name: $prog -R -n 1000: '$line'"
}

perf_case ib_send_bw "$BW_RE" "^$S*#bytes$S+#iterations$S+BW peak\\[MB/sec\\]$S+BW average\\[MB/sec\\]$S+MsgRate\\[Mpps\\]"
perf_case ib_write_bw "$BW_RE" "^$S*#bytes$S+#iterations$S+BW peak\\[MB/sec\\]$S+BW average\\[MB/sec\\]$S+MsgRate\\[Mpps\\]"
perf_case ib_read_lat "$LAT_RE" "^$S*#bytes$S+#iterations$S+t_min\\[usec\\]$S+t_max\\[usec\\]$S+t_typical\\[usec\\]$S+t_avg\\[usec\\]"

conf_finish
