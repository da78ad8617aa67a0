#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Turns bench/run.sh's raw tool outputs into results.json, results.md and plot.svg.

    python3 bench/report.py OUTDIR

Reads OUTDIR/runs.tsv (one row per run or per shape a tool cannot run) and the raw outputs it
names. Every number comes from a tool's own output. Ratios are softrdma / baseline taken
within one round (both ran back to back), and the median over rounds is reported: the machine
is shared, so numbers from different moments are not compared.
"""
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

MIB = 1048576  # perftest and ucx_perftest print MB/s meaning MiB/s

UNITS = {"lat": "µs", "bw": "GB/s", "rate": "Mmsg/s", "conn": "conn/s"}
LOWER_IS_BETTER = {"lat"}


# ------------------------------------------------------------------ parsers (one per tool)
def _num_row_after(lines, header_re):
    """The first all-numeric row after a header line matching header_re, as floats."""
    for i, line in enumerate(lines):
        if re.search(header_re, line):
            for row in lines[i + 1:]:
                tok = row.split()
                if tok and all(re.fullmatch(r"[0-9.]+", t) for t in tok):
                    return [float(t) for t in tok]
    return None


def parse_perftest(text, metric):
    lines = text.splitlines()
    if metric == "lat":
        hdr = next((l for l in lines if "t_typical" in l), None)
        row = _num_row_after(lines, r"t_typical\[usec\]")
        if not hdr or not row:
            return None
        # Columns: #bytes #iterations t_min t_max t_typical ...; t_typical is the median.
        idx = hdr.split().index("t_typical[usec]")
        return {"lat": row[idx]}
    row = _num_row_after(lines, r"BW average\[MB/sec\]")
    if not row or len(row) < 5:
        return None
    # Columns: #bytes #iterations BW-peak BW-average MsgRate[Mpps]
    return {"bw": row[3] * MIB / 1e9, "rate": row[4]}


def parse_sockperf(text, metric):
    if metric == "lat":
        m = re.search(r"percentile 50\.000 =\s*([0-9.]+)", text)
        return {"lat": float(m.group(1))} if m else None
    m = re.search(r"Message Rate is ([0-9.]+) \[msg/sec\]", text)
    return {"rate": float(m.group(1)) / 1e6} if m else None


def parse_iperf3(text, metric):
    start = text.find("{")
    if start < 0:
        return None
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start:])
        bps = doc["end"]["sum_received"]["bits_per_second"]
    except (ValueError, KeyError):
        return None
    return {"bw": bps / 8 / 1e9}


def parse_ucx(text, metric):
    m = re.search(r"^Final:\s+(.*)$", text, re.M)
    if not m:
        return None
    tok = [float(t) for t in m.group(1).split()]
    # iterations, lat p50, lat avg, lat overall, bw avg, bw overall, msgrate avg, overall
    if len(tok) < 8:
        return None
    return {"lat": tok[1], "bw": tok[5] * MIB / 1e9, "rate": tok[7] / 1e6}


def parse_fi_pingpong(text, metric):
    # Header "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec"; counts print as "2k".
    lines = text.splitlines()
    for i, line in enumerate(lines):
        hdr = line.split()
        if "usec/xfer" in hdr and i + 1 < len(lines):
            row = lines[i + 1].split()
            if len(row) == len(hdr):
                return {"lat": float(row[hdr.index("usec/xfer")])}
    return None


CM_SETUP_STEPS = ("create id", "resolve addr", "resolve route", "create qp", "connect")


def parse_cmtime(text, metric):
    steps = {}
    for m in re.finditer(r"^(create id|resolve addr|resolve route|create qp|connect|disconnect|destroy)\s*:"
                         r"\s+([0-9.]+)", text, re.M):
        steps[m.group(1)] = float(m.group(2))
    n = re.search(r"-c (\d+)", text)
    if not n or not all(s in steps for s in CM_SETUP_STEPS):
        return None
    conns = int(n.group(1))
    setup_ms = sum(steps[s] for s in CM_SETUP_STEPS)
    # Connection rate: everything from rdma_create_id to ESTABLISHED, per second.
    return {"conn": conns / (setup_ms / 1e3), "connect_only": conns / (steps["connect"] / 1e3),
            "steps_ms": steps}


def parse_connrate(text, metric):
    m = re.search(r"conn_per_s ([0-9.]+)", text)
    return {"conn": float(m.group(1))} if m else None


def parse_shm_baseline(text, metric):
    m = re.search(r"gbps ([0-9.]+)", text)
    return {"bw": float(m.group(1))} if m else None


def parse_rstream(text, metric):
    # name bytes xfers iters total time Gb/sec usec/xfer (usec/xfer: one way)
    m = re.search(r"^custom\s+\S+\s+\S+\s+\S+\s+\S+\s+[0-9.]+s\s+([0-9.]+)\s+([0-9.]+)\s*$", text, re.M)
    if not m:
        return None
    return {"bw": float(m.group(1)) / 8, "lat": float(m.group(2))}


PARSERS = {
    "ib_send_lat": parse_perftest, "ib_write_lat": parse_perftest, "ib_read_lat": parse_perftest,
    "ib_send_bw": parse_perftest, "ib_write_bw": parse_perftest, "ib_read_bw": parse_perftest,
    "sockperf": parse_sockperf, "iperf3": parse_iperf3, "ucx_perftest": parse_ucx,
    "fi_pingpong": parse_fi_pingpong, "cmtime": parse_cmtime, "tcp_connrate": parse_connrate,
    "shm_baseline": parse_shm_baseline, "rstream": parse_rstream,
}


# ------------------------------------------------------------------ collecting
class Series:
    """All rounds of one (stack, metric, test, size, qps)."""

    def __init__(self):
        self.by_rep = {}      # rep -> value
        self.extra = {}       # rep -> parser's other fields
        self.failures = []    # (rep, rc, raw)
        self.missing = None   # reason
        self.tool = None
        self.command = None

    def stats(self):
        v = list(self.by_rep.values())
        if not v:
            return None
        return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def load(outdir):
    series = {}
    with open(os.path.join(outdir, "runs.tsv"), newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            key = (r["stack"], r["metric"], r["test"], int(r["size"]), int(r["qps"]))
            s = series.setdefault(key, Series())
            if r["status"] == "missing":
                s.missing = r["command"]
                continue
            s.tool, s.command = r["tool"], r["command"]
            rep = int(r["rep"])
            raw = os.path.join(outdir, r["raw"])
            if r["status"] != "ok":
                s.failures.append((rep, r["rc"], r["raw"]))
                continue
            try:
                text = open(raw, errors="replace").read()
            except OSError:
                text = ""
            val = PARSERS[r["tool"]](text, r["metric"])
            if not val or r["metric"] not in val:
                s.failures.append((rep, "unparsed", r["raw"]))
                continue
            s.by_rep[rep] = val[r["metric"]]
            s.extra[rep] = {k: v for k, v in val.items() if k != r["metric"]}
    return series


def find(series, stack, metric, test, size, qps):
    """The series, else a 'missing' row that covers it (test 'any')."""
    for t in (test, "any"):
        s = series.get((stack, metric, t, size, qps))
        if s is not None:
            return s
    return None


# ------------------------------------------------------------------ comparisons
SR_TEST = {"SEND": "SEND", "WRITE": "WRITE", "READ": "READ"}
UCX_TEST = {
    "lat": {"SEND": "tag_lat", "WRITE": "ucp_put_lat", "READ": "ucp_get"},
    "bw": {"SEND": "tag_bw", "WRITE": "ucp_put_bw", "READ": "ucp_get"},
    "rate": {"SEND": "tag_bw", "WRITE": "ucp_put_bw"},
}


def baseline_for(stack, metric, op, size, qps):
    """(stack, metric, test, size, qps, scale, label) of the baseline for one softrdma shape."""
    if stack == "tcp":
        if metric == "lat":
            # A READ is a request and a response: compare it with TCP's full round trip.
            scale, label = (2.0, "sockperf RTT") if op == "READ" else (1.0, "sockperf")
            return ("tcp", "lat", "sockperf_pp", size, 1, scale, label)
        if metric == "bw":
            return ("tcp", "bw", "iperf3", size, qps, 1.0, "iperf3" + (" -P 4" if qps > 1 else ""))
        if metric == "rate":
            return ("tcp", "rate", "sockperf_tp" if qps == 1 else "any", size, qps, 1.0, "sockperf tp")
        return ("tcp", "conn", "tcp_connrate", size, 1, 1.0, "connect+accept")
    if stack == "ucx":
        t = UCX_TEST.get(metric, {}).get(op, "any") if qps == 1 else "any"
        return ("ucx", metric, t, size, qps, 1.0, t)
    if metric == "lat":
        t = "fi_pingpong" if op == "SEND" else op
        return ("ofi", "lat", t, size, 1, 1.0, "fi_pingpong")
    return ("ofi", metric, "any", size, qps, 1.0, "")


def compare(series, sr, base, scale, metric):
    """Median over rounds of softrdma/baseline from the same round, plus the rounds used."""
    ratios = [sr.by_rep[r] / (base.by_rep[r] * scale) for r in sorted(sr.by_rep)
              if r in base.by_rep and base.by_rep[r] > 0]
    if not ratios:
        return None
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "rounds": len(ratios)}


def ahead(metric, ratio):
    return ratio < 1.0 if metric in LOWER_IS_BETTER else ratio > 1.0


def describe_missing(s):
    if s is None:
        return "not measured"
    if s.missing:
        return "missing: " + s.missing
    if s.failures and not s.by_rep:
        rep, rc, raw = s.failures[0]
        return f"failed ({'exit ' + rc if rc != 'unparsed' else 'output not parsed'}; {raw})"
    return None


def shape_row(sr, metric, op, size, qps):
    return {"metric": metric, "op": op, "size": size, "qps": qps, "unit": UNITS[metric],
            "softrdma": sr.stats(), "softrdma_note": describe_missing(sr) if not sr.by_rep else None,
            "softrdma_command": sr.command, "baselines": {}}


def add_ratio(cell, series, sr, base, scale, metric):
    cmp = compare(series, sr, base, scale, metric)
    if cmp:
        cmp["ahead"] = ahead(metric, cmp["median"])
        cell["ratio"] = cmp


def target_adder(out):
    """add(name, row, baseline key, limit text, test on the ratio): one target into out."""
    def add(name, row, base, limit, cond):
        cell = row["baselines"].get(base) if row else None
        ratio = cell.get("ratio") if cell else None
        if ratio is None:
            why = "softrdma not measured" if not row or not row["softrdma"] else \
                (cell or {}).get("missing", "no ratio")
            out.append({"target": name, "status": "not measured", "ratio": None, "limit": limit, "why": why})
        else:
            ok = cond(ratio["median"])
            out.append({"target": name, "status": "met" if ok else "missed", "ratio": ratio["median"],
                        "limit": limit, "rounds": ratio["rounds"]})
    return add


def build(series):
    shapes = sorted({k for k in series if k[0] == "softrdma"},
                    key=lambda k: (["lat", "bw", "rate", "conn"].index(k[1]), k[4],
                                   ["SEND", "WRITE", "READ", "CONNECT"].index(k[2]), k[3]))
    rows = []
    for (stack, metric, op, size, qps) in shapes:
        sr = series[(stack, metric, op, size, qps)]
        row = shape_row(sr, metric, op, size, qps)
        if metric == "conn" and sr.extra:
            row["softrdma_connect_step_only"] = statistics.median(
                e["connect_only"] for e in sr.extra.values())
        for bstack in ("tcp", "ucx", "ofi"):
            bs, bm, bt, bsize, bq, scale, label = baseline_for(bstack, metric, op, size, qps)
            b = find(series, bs, bm, bt, bsize, bq)
            cell = {"test": label}
            st = b.stats() if b else None
            if st:
                cell.update({k: (v * scale if k != "n" else v) for k, v in st.items()})
                cell["command"] = b.command
                if scale != 1.0:
                    cell["note"] = f"{scale:g} × the tool's one-way latency"
                if bs == "ofi":
                    cell["note"] = "mean: fi_pingpong prints no median"
                if bt == "sockperf_tp":
                    cell["note"] = "sender's rate; TCP coalesces the small writes (Nagle), no per-message completion"
                if bs == "ucx" and bt == "ucp_get" and metric == "lat":
                    cell["note"] = "ucp_get -O 1: one get in flight, its time per get"
                if bs == "tcp" and bt == "sockperf_pp" and size < 14:
                    cell["note"] = (cell.get("note", "") + "; " if "note" in cell else "") + \
                        "sockperf sends at least 14 B"
                add_ratio(cell, series, sr, b, scale, metric)
            else:
                cell["missing"] = describe_missing(b)
            row["baselines"][bstack] = cell
        rows.append(row)
    return rows


# ------------------------------------------------------------------ same host
# softrdma's shared-memory path against UCX's shared-memory transports, softrdma's own TCP path
# and the machine's copy limits (process_vm_writev/readv: one copy between two processes).
CMA_TEST = {"SEND": "cma_write", "WRITE": "cma_write", "READ": "cma_read"}


def build_same_host(series, stack_name="softrdma_shm"):
    shapes = sorted({k for k in series if k[0] == stack_name},
                    key=lambda k: (["lat", "bw", "rate"].index(k[1]), ["SEND", "WRITE", "READ"].index(k[2]),
                                   k[3]))
    rows = []
    for (stack, metric, op, size, qps) in shapes:
        sr = series[(stack, metric, op, size, qps)]
        row = shape_row(sr, metric, op, size, qps)
        ucx_t = UCX_TEST.get(metric, {}).get(op)
        cands = {"tcp_path": ("softrdma", metric, op, size, qps, "softrdma over TCP"),
                 "ucx_sm": ("ucx_sm", metric, ucx_t, size, 1, f"{ucx_t}")}
        if metric == "bw":
            cands["refs"] = ("softrdma_shm_cma", metric, op, size, qps, "SOFTRDMA_SHM_CMA=1")
            cands["cma"] = ("mem", "bw", CMA_TEST[op], size, 1, CMA_TEST[op])
            cands["memcpy"] = ("mem", "bw", "memcpy", size, 1, "memcpy")
        for key, (bs, bm, bt, bsize, bq, label) in cands.items():
            b = series.get((bs, bm, bt, bsize, bq)) if bt else None
            cell = {"test": label}
            st = b.stats() if b else None
            if st:
                cell.update(st)
                cell["command"] = b.command
                if bs == "ucx_sm" and bt == "ucp_get" and metric == "lat":
                    cell["note"] = "ucp_get -O 1: one get in flight, its time per get"
                add_ratio(cell, series, sr, b, 1.0, metric)
            else:
                cell["missing"] = describe_missing(b)
            row["baselines"][key] = cell
        rows.append(row)
    return rows


def same_host_targets(rows, label="same host"):
    out = []
    add = target_adder(out)

    def get(metric, op, size):
        return next((r for r in rows if (r["metric"], r["op"], r["size"]) == (metric, op, size)), None)

    for op, t in (("SEND", "tag_lat"), ("WRITE", "ucp_put_lat")):
        add(f"{label}: {op} latency 8 B ≤ 1.5× UCX shared memory ({t})", get("lat", op, 8), "ucx_sm",
            "≤ 1.50", lambda x: x <= 1.5)
    for op, lim in (("WRITE", 0.75), ("READ", 0.75), ("SEND", 0.6)):
        add(f"{label}: {op} bandwidth 1 MiB ≥ {lim:.0%} of {CMA_TEST[op]} (process_vm_{CMA_TEST[op][4:]}v)",
            get("bw", op, MIB), "cma", f"≥ {lim:.2f}", lambda x, lim=lim: x >= lim)
    for op in ("SEND", "WRITE"):
        add(f"{label}: {op} message rate 64 B ≥ 4× softrdma's TCP path", get("rate", op, 64), "tcp_path",
            "≥ 4.00", lambda x: x >= 4.0)
    for r in rows:
        if r["metric"] == "bw" and "ratio" in r["baselines"].get("ucx_sm", {}):
            add(f"{label}: ahead of UCX shared memory ({r['baselines']['ucx_sm']['test']}): {shape_name(r)}",
                r, "ucx_sm", "> 1", lambda x: x > 1.0)
    return out


def targets(rows):
    out = []
    add = target_adder(out)

    def get(metric, op, size, qps=1):
        return next((r for r in rows if (r["metric"], r["op"], r["size"], r["qps"]) == (metric, op, size, qps)), None)

    for op in ("WRITE", "SEND"):
        for r in rows:
            if r["metric"] == "bw" and r["op"] == op and r["qps"] == 1 and r["size"] >= 65536:
                add(f"{op} bandwidth {fmt_size(r['size'])} ≥ 90% of iperf3 single stream (-l {fmt_size(r['size'])})",
                    r, "tcp", "≥ 0.90", lambda x: x >= 0.9)
    for op in ("SEND", "WRITE"):
        add(f"{op} latency 8 B ≤ 1.3× busy-polling TCP ping-pong (sockperf)", get("lat", op, 8), "tcp",
            "≤ 1.30", lambda x: x <= 1.3)
    for base, name in (("ucx", "UCX tcp"), ("ofi", "libfabric tcp")):
        for r in rows:
            cell = r["baselines"][base]
            if "ratio" in cell:
                better = "lower" if r["metric"] in LOWER_IS_BETTER else "higher"
                add(f"ahead of {name} ({cell['test']}): {shape_name(r)}", r, base,
                    "< 1" if better == "lower" else "> 1",
                    (lambda x: x < 1.0) if better == "lower" else (lambda x: x > 1.0))
    conn = next((r for r in rows if r["metric"] == "conn"), None)
    add("CM connection rate (cmtime) ≥ 50% of plain TCP connect+accept", conn, "tcp", "≥ 0.50",
        lambda x: x >= 0.5)
    return out


def event_driven(series, tgts):
    """Both ends asleep on a completion channel (ib_send_lat -e, the TCP path) next to a TCP
    ping-pong whose ends sleep in recv(): the row, and its target appended to tgts."""
    sr = series.get(("softrdma_event", "lat", "SEND", 8, 1))
    base = series.get(("tcp", "lat", "sockperf_pp_blocking", 8, 1))
    row = None
    if sr and sr.by_rep:
        row = shape_row(sr, "lat", "SEND", 8, 1)
        cell = {"test": "sockperf ping-pong, blocking recv()"}
        if base and base.by_rep:
            cell.update(base.stats())
            add_ratio(cell, series, sr, base, 1.0, "lat")
        row["baselines"]["tcp_blocking"] = cell
    target_adder(tgts)("event-driven SEND latency 8 B (ib_send_lat -e) ≤ 1.2× a blocking TCP ping-pong",
                       row, "tcp_blocking", "≤ 1.20", lambda x: x <= 1.2)
    return row


# ------------------------------------------------------------------ rsockets
# rsockets (rstream, and iperf3 through librspreload.so) next to plain TCP in the same round:
# rstream -T s (the same program on kernel sockets) and plain iperf3.
RS_TOOLS = ("rstream", "iperf3")


def build_rsockets(series):
    rows = []
    for stack in ("rsocket_shm", "rsocket_tcp"):
        for (st, metric, tool, size, qps) in sorted(k for k in series if k[0] == stack):
            sr = series[(st, metric, tool, size, qps)]
            row = shape_row(sr, metric, tool, size, qps)
            row["path"] = "same host" if stack == "rsocket_shm" else "TCP path"
            b = series.get(("tcp", metric, tool, size, 1))
            cell = {"test": "rstream -T s" if tool == "rstream" else "iperf3"}
            if b and b.stats():
                cell.update(b.stats())
                cell["command"] = b.command
                add_ratio(cell, series, sr, b, 1.0, metric)
            else:
                cell["missing"] = describe_missing(b)
            row["baselines"]["tcp"] = cell
            rows.append(row)
    return rows


def rsocket_targets(rows):
    out = []
    add = target_adder(out)
    for r in rows:
        if r["metric"] != "bw":
            continue
        name = f"rsockets ({r['path']}): {r['op']} bandwidth {fmt_size(r['size'])}"
        if r["path"] == "TCP path":
            add(name + " ≥ 90% of TCP", r, "tcp", "≥ 0.90", lambda x: x >= 0.9)
        else:
            add(name + " ahead of TCP", r, "tcp", "> 1", lambda x: x > 1.0)
    return out


# ------------------------------------------------------------------ formatting
def fmt_size(n):
    if n >= MIB and n % MIB == 0:
        return f"{n // MIB} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} B"


def fmt_val(metric, v):
    if v is None:
        return "–"
    return {"lat": f"{v:.2f}", "bw": f"{v:.3f}", "rate": f"{v:.3f}", "conn": f"{v:.0f}"}[metric]


def fmt_stat(metric, st):
    if not st:
        return "–"
    s = f"{fmt_val(metric, st['median'])} ({fmt_val(metric, st['min'])}–{fmt_val(metric, st['max'])})"
    return s + (f" n={st['n']}" if st.get("n", 3) < 3 else "")


def shape_name(r):
    q = f", {r['qps']} QPs" if r["qps"] > 1 else ""
    if r["metric"] == "conn":
        return f"CM connect, {r['size']} connections"
    kind = {"lat": "latency", "bw": "bandwidth", "rate": "message rate"}[r["metric"]]
    return f"{r['op']} {kind} {fmt_size(r['size'])}{q}"


def markdown(rows, tgts, env, notes_out, same_rows=(), same_tgts=(), rs_rows=(), rs_tgts=(), mr_rows=(),
             mr_tgts=()):
    notes = []

    def note(text):
        if text not in notes:
            notes.append(text)
        return f"[{notes.index(text) + 1}]"

    def bcell(r, key):
        c = r["baselines"][key]
        if "median" not in c:
            return note(c.get("missing") or "not measured"), "–"
        v = fmt_stat(r["metric"], c)
        if c.get("note"):
            v += " " + note(c["note"])
        ratio = c.get("ratio")
        rs = "–" if not ratio else f"{ratio['median']:.2f}" + (" ✓" if ratio["ahead"] else "")
        return f"{c['test']}: {v}", rs

    md = ["# softrdma benchmark", ""]
    md.append(f"Run: {env.get('started', '?')} – {env.get('finished', '?')}, {env.get('runtime_s', '?')} s, "
              f"{env.get('rounds', '?')} round(s), server/client pinned to CPU1/CPU0: {env.get('pinned', '?')}, "
              f"load average before {env.get('loadavg_before', '?')}, after {env.get('loadavg_after', '?')}; "
              f"softrdma {env.get('softrdma', '?')}, kernel {env.get('kernel', '?')}.")
    md.append("")
    md.append("All traffic on 127.0.0.1. Values: median over rounds (min–max). Ratio = softrdma ÷ baseline, "
              "taken within each round and then the median over rounds; ✓ = softrdma ahead "
              "(lower latency, higher bandwidth/rate). Latency is one-way (round trip / 2) except READ, "
              "which is the full READ (perftest) against TCP's round trip and UCX's one get. "
              "Bandwidth is GB/s (10⁹ B/s); perftest/UCX MiB/s converted.")
    md.append("")
    md.append("## Targets")
    md.append("")
    md.append("| target | limit | ratio | result |")
    md.append("|---|---|---|---|")
    for t in tgts:
        ratio = "–" if t["ratio"] is None else f"{t['ratio']:.2f}"
        res = t["status"] if t["status"] != "not measured" else f"not measured ({t['why']})"
        md.append(f"| {t['target']} | {t['limit']} | {ratio} | **{res}** |")
    met = sum(t["status"] == "met" for t in tgts)
    missed = sum(t["status"] == "missed" for t in tgts)
    md.append("")
    md.append(f"{met} met, {missed} missed, {len(tgts) - met - missed} not measured.")
    for name in ("UCX tcp", "libfabric tcp"):
        sel = [t for t in tgts if t["target"].startswith(f"ahead of {name} ")]
        if sel:
            md.append(f"Ahead of {name} on {sum(t['status'] == 'met' for t in sel)} of {len(sel)} shapes both ran.")
    try:
        if float(env.get("loadavg_before", "0").split()[0]) >= 1.0:
            md.append("")
            md.append("**Warning:** the machine was busy when the run started (1-minute load ≥ 1.0 on 2 CPUs): "
                      "busy-polling peers are very sensitive to a third runnable process.")
    except ValueError:
        pass
    for metric, title in (("lat", "Latency (µs)"), ("bw", "Bandwidth (GB/s)"),
                          ("rate", "Message rate (Mmsg/s)"), ("conn", "Connection setup (connections/s)")):
        sel = [r for r in rows if r["metric"] == metric]
        if not sel:
            continue
        md += ["", f"## {title}", "",
               "| shape | softrdma | TCP | ÷TCP | UCX tcp | ÷UCX | libfabric tcp | ÷libfabric |",
               "|---|---|---|---|---|---|---|---|"]
        for r in sel:
            sv = fmt_stat(metric, r["softrdma"]) if r["softrdma"] else note(r["softrdma_note"] or "not measured")
            cells = [c for key in ("tcp", "ucx", "ofi") for c in bcell(r, key)]
            md.append(f"| {shape_name(r)} | {sv} | " + " | ".join(cells) + " |")
        if metric == "conn":
            for r in sel:
                if r.get("softrdma_connect_step_only"):
                    md.append("")
                    md.append("softrdma's rate counts every cmtime step from rdma_create_id to ESTABLISHED "
                              "(create id, resolve addr, resolve route, create qp, connect); its connect step "
                              f"alone: {r['softrdma_connect_step_only']:.0f} conn/s. TCP: socket()+connect() "
                              "for every connection until the server accepted the last one.")
    same_sections = []
    if same_rows:
        same_sections.append((
            "## Same host: shared memory",
            "softrdma as a user gets it between two processes on one host (the connection moves to shared "
            "memory), next to softrdma's TCP path (`SOFTRDMA_SHM=0`, the tables above), UCX's shared-memory "
            "transports (`UCX_TLS=posix,cma,self`) and this machine's copy limits (`bench/shm_baseline.c`: "
            "process_vm_writev/readv between two processes, memcpy), all in the same round.",
            same_rows, same_tgts))
    if mr_rows:
        same_sections.append((
            "## Same host: shared regions (`SOFTRDMA_SHM_MR=1`, opt-in)",
            "The same shapes with both ends' regions moved into shared memory: WRITE and READ are one memcpy "
            "at post time (docs/compatibility.md §5). Same baselines, same rounds.",
            mr_rows, mr_tgts))
    for title, intro, sec_rows, sec_tgts in same_sections:
        md += ["", title, "", intro, "",
               "| target | limit | ratio | result |", "|---|---|---|---|"]
        for t in sec_tgts:
            ratio = "–" if t["ratio"] is None else f"{t['ratio']:.2f}"
            res = t["status"] if t["status"] != "not measured" else f"not measured ({t['why']})"
            md.append(f"| {t['target']} | {t['limit']} | {ratio} | **{res}** |")
        md += ["", "The *by reference* column is softrdma with `SOFTRDMA_SHM_CMA=1` (large payloads copied "
               "once by the reader with process_vm_readv instead of twice through the ring); a ratio above 1 "
               "says the default is the faster here.", "",
               "| shape | softrdma (shm) | TCP path | ÷TCP path | UCX sm | ÷UCX sm | by reference | ÷by reference "
               "| CMA | ÷CMA | memcpy | ÷memcpy |",
               "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sec_rows:
            sv = fmt_stat(r["metric"], r["softrdma"]) if r["softrdma"] else note(r["softrdma_note"] or "not measured")
            cells = []
            for key in ("tcp_path", "ucx_sm", "refs", "cma", "memcpy"):
                if key not in r["baselines"]:
                    cells += ["–", "–"]
                    continue
                cells += list(bcell(r, key))
            md.append(f"| {shape_name(r)} | {sv} | " + " | ".join(cells) + " |")
    if rs_rows:
        md += ["", "## rsockets", "",
               "rstream (Debian's, on our librdmacm) and iperf3 through librspreload.so, next to the same "
               "programs on kernel TCP sockets (rstream -T s, plain iperf3) in the same round.", ""]
        if rs_tgts:
            md += ["| target | limit | ratio | result |", "|---|---|---|---|"]
            for t in rs_tgts:
                ratio = f"{t['ratio']:.2f}" if t["ratio"] is not None else "–"
                md.append(f"| {t['target']} | {t['limit']} | {ratio} | {t['status']} |")
            md.append("")
        md += ["| path | shape | rsockets | TCP | ÷TCP |", "|---|---|---|---|---|"]
        for r in rs_rows:
            sv = fmt_stat(r["metric"], r["softrdma"]) if r["softrdma"] else note(r["softrdma_note"] or "not measured")
            c = r["baselines"]["tcp"]
            bv = fmt_stat(r["metric"], c) if "median" in c else note(c.get("missing") or "not measured")
            ratio = f"{c['ratio']['median']:.2f}" if "ratio" in c else "–"
            kind = {"lat": "latency", "bw": "bandwidth"}[r["metric"]]
            md.append(f"| {r['path']} | {r['op']} {kind} {fmt_size(r['size'])} ({UNITS[r['metric']]}) | {sv} | {bv} | {ratio} |")
    if notes:
        md += ["", "Notes:", ""]
        md += [f"{i + 1}. {n}" for i, n in enumerate(notes)]
    notes_out.extend(notes)
    return "\n".join(md) + "\n"


# ------------------------------------------------------------------ plot
PLOT_SERIES = {
    "lat": [("softrdma", "lat", "SEND", "softrdma SEND"), ("softrdma", "lat", "WRITE", "softrdma WRITE"),
            ("softrdma", "lat", "READ", "softrdma READ (whole READ, not halved)"), ("tcp", "lat", "sockperf_pp", "TCP sockperf busy-poll"),
            ("ucx", "lat", "tag_lat", "UCX tcp tag"), ("ucx", "lat", "ucp_put_lat", "UCX tcp put"),
            ("ofi", "lat", "fi_pingpong", "libfabric tcp fi_pingpong")],
    "bw": [("softrdma", "bw", "SEND", "softrdma SEND"), ("softrdma", "bw", "WRITE", "softrdma WRITE"),
           ("softrdma", "bw", "READ", "softrdma READ"), ("tcp", "bw", "iperf3", "TCP iperf3 1 stream"),
           ("ucx", "bw", "tag_bw", "UCX tcp tag"), ("ucx", "bw", "ucp_put_bw", "UCX tcp put"),
           ("ucx", "bw", "ucp_get", "UCX tcp get")],
}


def plot(series, outdir):
    gp = shutil.which("gnuplot")
    if not gp:
        return "gnuplot not installed: no plot"
    pdir = os.path.join(outdir, "plot")
    os.makedirs(pdir, exist_ok=True)
    cmds = {}
    for metric, lines in PLOT_SERIES.items():
        cmds[metric] = []
        for stack, m, test, title in lines:
            pts = sorted((k[3], s.stats()) for k, s in series.items()
                         if k[:3] == (stack, m, test) and k[4] == 1 and s.stats())
            if len(pts) < 2:
                continue
            name = os.path.join(pdir, f"{metric}.{stack}.{test}.dat")
            with open(name, "w") as f:
                f.write("# size median min max\n")
                for size, st in pts:
                    f.write(f"{size} {st['median']} {st['min']} {st['max']}\n")
            style = "lw 2" if stack == "softrdma" else "lw 1 dt 2"
            cmds[metric].append(f"'{name}' using 1:2:3:4 with yerrorlines {style} title '{title}'")
    if not cmds["lat"] and not cmds["bw"]:
        return "no perftest series to plot (BENCH_ONLY?)"
    body = [
        "set termoption noenhanced",
        "set multiplot layout 1,2 title 'softrdma vs. baselines on 127.0.0.1 (median of rounds, bars: min-max)'",
        "set logscale x 2", "set format x '%.0b%B'", "set grid", "set key opaque box font ',9'",
        "set xlabel 'message size (bytes)'",
        "set logscale y", "set ylabel 'one-way latency (µs)'", "set title 'Latency'", "set key bottom right",
        "plot " + ", ".join(cmds["lat"]) if cmds["lat"] else "plot 1 with lines lc rgb 'white' notitle",
        "unset logscale y", "set yrange [0:*]", "set ylabel 'bandwidth (GB/s)'",
        "set title 'Bandwidth, 1 QP / 1 stream'", "set key top left",
        "plot " + ", ".join(cmds["bw"]) if cmds["bw"] else "plot 1 with lines lc rgb 'white' notitle",
        "unset multiplot",
    ]
    # SVG for the report, PNG for viewers without SVG support.
    terminals = {"plot.svg": "svg size 1200,520 dynamic font 'sans,11' background '#ffffff'",
                 "plot.png": "pngcairo size 1400,600 font 'sans,10'"}
    for out, term in terminals.items():
        gpfile = os.path.join(pdir, out.replace(".", "_") + ".gp")
        with open(gpfile, "w") as f:
            f.write("\n".join([f"set terminal {term}", f"set output '{os.path.join(outdir, out)}'"] + body) + "\n")
        r = subprocess.run([gp, gpfile], capture_output=True, text=True)
        if r.returncode != 0:
            return "gnuplot failed: " + r.stderr.strip()[-300:]
    return None


# ------------------------------------------------------------------ main
def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py OUTDIR")
    outdir = sys.argv[1]
    env = {}
    try:
        for line in open(os.path.join(outdir, "env.txt")):
            k, _, v = line.strip().partition(" ")
            if k == "started":
                env["started"], _, env["finished"] = v.partition(" finished ")
            elif k == "rounds":
                parts = v.split()
                env["rounds"], env["pinned"] = parts[0], parts[-1]
            elif k == "pkg":
                env.setdefault("packages", {})[v.split()[0]] = " ".join(v.split()[1:])
            else:
                env[k] = v
    except OSError:
        pass
    series = load(outdir)
    rows = build(series)
    tgts = targets(rows)
    event_row = event_driven(series, tgts)
    same_rows = build_same_host(series)
    same_tgts = same_host_targets(same_rows)
    mr_rows = build_same_host(series, "softrdma_shm_mr")
    mr_tgts = same_host_targets(mr_rows, "same host, shared regions")
    rs_rows = build_rsockets(series)
    rs_tgts = rsocket_targets(rs_rows)
    notes = []
    md = markdown(rows, tgts, env, notes, same_rows, same_tgts, rs_rows, rs_tgts, mr_rows, mr_tgts)
    plot_err = plot(series, outdir)
    if plot_err:
        md += f"\nPlot: {plot_err}\n"
    else:
        md += "\nPlot: plot.svg (and plot.png): latency and bandwidth vs. message size.\n"
    raw = {}
    for (stack, metric, test, size, qps), s in sorted(series.items()):
        entry = {"stack": stack, "metric": metric, "test": test, "size": size, "qps": qps,
                 "unit": UNITS[metric], "tool": s.tool, "command": s.command}
        if s.missing:
            entry["missing"] = s.missing
        else:
            entry.update({"stats": s.stats(), "per_round": {str(k): v for k, v in sorted(s.by_rep.items())}})
            if s.failures:
                entry["failures"] = [{"round": r, "rc": rc, "raw": p} for r, rc, p in s.failures]
            if s.extra and any(s.extra.values()):
                entry["extra_per_round"] = {str(k): v for k, v in sorted(s.extra.items())}
        raw[f"{stack}|{metric}|{test}|{size}|{qps}"] = entry
    doc = {"env": env, "series": raw, "comparisons": rows, "targets": tgts, "event_driven": event_row,
           "same_host": {"comparisons": same_rows, "targets": same_tgts},
           "same_host_shared_regions": {"comparisons": mr_rows, "targets": mr_tgts},
           "rsockets": {"comparisons": rs_rows, "targets": rs_tgts}, "notes": notes,
           "plot": None if plot_err else "plot.svg", "plot_error": plot_err}
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
