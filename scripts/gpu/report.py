#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tables for scripts/gpu-check.sh (standard library only; Python 3.8+).

  report.py table STEPS.tsv          the step table (step, status, seconds, key figure)
  report.py compare DIR              NCCL busbw side by side from DIR/nccl-*.json:
                                     NCCL's socket, ringway socket, ringway auto, ratios
  report.py perf FILE                key figure of one ringway-perf output
  report.py bench FILE               key figure of ringway-reduce-bench --device-only
  report.py nccl JSON                key figure of one torch_allreduce.py run
  report.py nvtx FILES...            sum NVTX summaries of nvtx_log.c across processes
  report.py self-test                exercise the parsers on canned text
"""
import glob
import json
import os
import re
import sys

# targets of issue 12
KERNEL_TARGET_PCT = 85.0   # float32 / bfloat16 sum vs D2D copy at 256 MiB
SOCKET_TARGET_RATIO = 1.3  # ringway socket vs NCCL socket busbw at 64 and 256 MiB


def table(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3:
                rows.append((parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else ""))
    w = max([len(r[0]) for r in rows] + [4])
    out = ["%-*s  %-7s  %7s  %s" % (w, "step", "status", "time(s)", "key figure"),
           "%s  %s  %s  %s" % ("-" * w, "-" * 7, "-" * 7, "-" * 40)]
    total = 0.0
    for name, status, secs, key in rows:
        try:
            total += float(secs)
        except ValueError:
            pass
        out.append("%-*s  %-7s  %7s  %s" % (w, name, status, secs, key))
    counts = {}
    for r in rows:
        counts[r[1]] = counts.get(r[1], 0) + 1
    out.append("%-*s  %-7s  %7.1f  %s" % (w, "total", "", total, ", ".join(
        "%d %s" % (v, k) for k, v in sorted(counts.items()))))
    return "\n".join(out)


def load_runs(d):
    runs = {}
    for p in sorted(glob.glob(os.path.join(d, "nccl-*.json"))):
        try:
            with open(p) as f:
                r = json.load(f)
        except (OSError, ValueError):
            continue
        runs[r.get("label", os.path.basename(p)[:-5])] = r
    return runs


def busbw(run, size, dtype="float32"):
    for pt in run.get("points", []) if run else []:
        if pt["size"] == size and pt["dtype"] == dtype:
            return pt["busbw"]
    return None


def compare(d):
    """Rows per (nranks, dtype, size); label names nccl-<cfg>-n<N>."""
    runs = load_runs(d)
    out = ["NCCL all_reduce busbw (GB/s), N ranks on one GPU, each its own NCCL_HOSTID",
           "%-6s %-9s %6s %12s %12s %12s %9s %9s" % (
               "ranks", "dtype", "size", "NCCL socket", "ringway sock", "ringway auto",
               "sock/NCCL", "auto/NCCL")]
    misses, seen = [], 0
    for n in (2, 4):
        base = runs.get("nccl-socket-n%d" % n)
        rws = runs.get("nccl-rw-socket-n%d" % n)
        rwa = runs.get("nccl-rw-auto-n%d" % n)
        for dt in ("float32", "bfloat16", "float16"):
            for size in (64 << 20, 256 << 20):
                b, s, a = busbw(base, size, dt), busbw(rws, size, dt), busbw(rwa, size, dt)
                if b is None and s is None and a is None:
                    continue
                seen += 1
                f = lambda v: "%12.2f" % v if v is not None else "%12s" % "-"  # noqa: E731
                r1 = s / b if s and b else None
                r2 = a / b if a and b else None
                out.append("%-6d %-9s %5dM %s %s %s %9s %9s" % (
                    n, dt, size >> 20, f(b), f(s), f(a),
                    "%.2fx" % r1 if r1 else "-", "%.2fx" % r2 if r2 else "-"))
                if r1 is not None and r1 < SOCKET_TARGET_RATIO:
                    misses.append("%d ranks %s %dM: %.2fx" % (n, dt, size >> 20, r1))
    if not seen:
        out.append("(no results)")
    out.append("target: ringway socket >= %.1fx NCCL socket at 64M and 256M: %s" % (
        SOCKET_TARGET_RATIO, "met" if seen and not misses else
        "not measured" if not seen else "MISSED (" + "; ".join(misses) + ")"))
    return "\n".join(out)


PERF_ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                      r"\s+(\S+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)(?:\s+[a-z]+(?::\S+)?)?\s*$")


def perf_key(text):
    """busbw (out-of-place) at the largest size, #wrong total."""
    rows = [m.groups() for m in map(PERF_ROW.match, text.splitlines()) if m]
    if not rows:
        return "no result rows"
    last = rows[-1]
    wrong = 0
    for r in rows:
        for w in (r[7], r[11]):
            wrong += int(w) if w.isdigit() else 0
    size = int(last[0])
    label = "%dM" % (size >> 20) if size >= 1 << 20 else "%dB" % size
    return "busbw %s GB/s @%s, %d wrong" % (last[6], label, wrong)


BENCH_ROW = re.compile(r"^dev\s+(\S+)\s+(\S+)\s+cuda\s+([\d.]+) GB/s.*?([\d.]+)% of D2D")
BENCH_COPY = re.compile(r"^dev\s+bytes\s+copy\s+cuda\s+([\d.]+) GB/s")


def bench_key(text):
    """'D2D X GB/s; float32 sum Y% ...' and whether the targets are met."""
    copy, parts, miss = None, [], []
    for line in text.splitlines():
        m = BENCH_COPY.match(line)
        if m:
            copy = m.group(1)
        m = BENCH_ROW.match(line)
        if m:
            dt, op, gbs, pct = m.groups()
            parts.append("%s %s %s%%" % (dt, op, pct))
            if dt in ("float32", "bfloat16") and op == "sum" and float(pct) < KERNEL_TARGET_PCT:
                miss.append(dt)
    if copy is None:
        return "no device rows", False
    return ("D2D %s GB/s; %s" % (copy, ", ".join(parts)) +
            ("; below %d%%: %s" % (KERNEL_TARGET_PCT, ",".join(miss)) if miss else "")), not miss


def nccl_key(path):
    with open(path) as f:
        r = json.load(f)
    pts = r.get("points", [])
    bw = ["%s %s" % ("%dM" % (s >> 20), "%.2f" % busbw(r, s)) for s in (64 << 20, 256 << 20)
          if busbw(r, s) is not None]
    errs = [p["err_over_bound"] for p in pts if p.get("err_over_bound") is not None]
    return "f32 busbw %s GB/s; %d wrong in %d checks%s" % (
        ", ".join(bw) or "-", r.get("wrong", -1), len(pts),
        "; max err/bound %.2f" % max(errs) if errs else "")


NVTX_LINE = re.compile(r'^nvtx pid (\d+) (range|mark) "(.*)" count (\d+)'
                       r'(?: total_ms ([\d.]+) max_us ([\d.]+))?')


def nvtx(files):
    agg, pids = {}, set()
    for p in files:
        with open(p) as f:
            for line in f:
                m = NVTX_LINE.match(line)
                if not m:
                    continue
                pid, kind, name, count, total, _ = m.groups()
                pids.add(pid)
                a = agg.setdefault((kind, name), [0, 0.0])
                a[0] += int(count)
                a[1] += float(total or 0)
    out = ["NVTX ranges and marks over %d process(es)" % len(pids)]
    for (kind, name), (count, total) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        out.append("  %-5s %-28s count %8d%s" % (kind, name, count,
                                                 "  total %9.3f ms" % total if kind == "range" else ""))
    return "\n".join(out), sum(1 for k in agg if k[0] == "range")


def self_test():
    perf = """#       size         count      type   redop     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
           8             2     float     sum    52.47    0.00    0.00       0     4.09    0.00    0.00       0
   268435456      67108864     float     sum  9862.41   27.22   27.22       0  9988.88   26.87   26.87       0
"""
    assert perf_key(perf) == "busbw 27.22 GB/s @256M, 0 wrong", perf_key(perf)
    bench = """dev   bytes      copy   cuda     3900.00 GB/s  (median 3890.00)   cudaMemcpyAsync D2D
dev   float32    sum    cuda     3600.00 GB/s  (median 3500.00)   92.3% of D2D copy
dev   bfloat16   sum    cuda     3000.00 GB/s  (median 2900.00)   76.9% of D2D copy
"""
    key, ok = bench_key(bench)
    assert not ok and "bfloat16" in key.split("below")[1], key
    line = 'nvtx pid 7 range "ringway allreduce" count 3 total_ms 1.500 max_us 700.0'
    assert NVTX_LINE.match(line).group(3) == "ringway allreduce"
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for label, bw in (("nccl-socket-n2", 2.0), ("nccl-rw-socket-n2", 3.0),
                          ("nccl-rw-auto-n2", 9.0)):
            pts = [{"size": s, "dtype": "float32", "busbw": bw} for s in (64 << 20, 256 << 20)]
            with open(os.path.join(d, label + ".json"), "w") as f:
                json.dump({"label": label, "points": pts, "wrong": 0}, f)
        text = compare(d)
        assert "1.50x" in text and "4.50x" in text and ": met" in text, text
    print("report.py self-test: ok")
    return 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    cmd = argv[1]
    if cmd == "table":
        print(table(argv[2]))
    elif cmd == "compare":
        print(compare(argv[2]))
    elif cmd == "perf":
        with open(argv[2]) as f:
            print(perf_key(f.read()))
    elif cmd == "bench":
        with open(argv[2]) as f:
            key, ok = bench_key(f.read())
        print(key)
        return 0 if ok else 3
    elif cmd == "nccl":
        print(nccl_key(argv[2]))
    elif cmd == "nvtx":
        text, nranges = nvtx(argv[2:])
        print(text)
        return 0 if nranges else 3
    elif cmd == "self-test":
        return self_test()
    else:
        print("unknown command %r" % cmd, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
