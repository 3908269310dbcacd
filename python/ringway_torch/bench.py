# SPDX-License-Identifier: Apache-2.0
"""dist.all_reduce bus bandwidth, ringway against Gloo in the same run.

    torchrun --standalone --nproc-per-node 4 -m ringway_torch.bench -b 4K -e 256M

Float32 sum, in place, on CPU tensors.  For each size both backends run
-w warm-up then -n timed calls, -r rounds alternating which goes first;
a round's time is the slowest rank's mean per call (the calls issued
back to back with async_op=True, one wait for the batch), and the table shows
each backend's median round (nccl-tests' columns: time in us, algbw and
busbw in GB/s = 1e9 B/s, busbw = algbw x 2(n-1)/n), then ringway's busbw
over Gloo's.  Figures are printed, never judged.
"""
import argparse
import statistics
import sys
import time

import torch
import torch.distributed as dist

import ringway_torch  # noqa: F401


def size_arg(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper().rstrip("B")
    if s and s[-1] in units:
        return int(float(s[:-1]) * units[s[-1]])
    return int(s)


def timed(t, group, iters, warmup):
    for _ in range(warmup):
        dist.all_reduce(t, group=group)
    dist.barrier(group=group)
    t0 = time.perf_counter()
    works = [dist.all_reduce(t, group=group, async_op=True) for _ in range(iters)]
    # As nccl-tests (and ringway-perf) do: one wait for the batch.  ringway's
    # works complete in order, so the last one's wait covers all; waiting on
    # each in turn would wake this thread once per call, and on a loaded host
    # each wake-up takes a core from the collectives.  (Gloo's may complete
    # out of order: the loop below waits for every one.)
    works[-1].wait()
    for w in works:
        w.wait()  # done already: raises if one failed
    return (time.perf_counter() - t0) / iters


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ringway_torch.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-b", "--minbytes", type=size_arg, default=4096)
    ap.add_argument("-e", "--maxbytes", type=size_arg, default=256 << 20)
    ap.add_argument("-f", "--stepfactor", type=int, default=4)
    ap.add_argument("-n", "--iters", type=int, default=10)
    ap.add_argument("-w", "--warmup", type=int, default=2)
    ap.add_argument("-r", "--rounds", type=int, default=3)
    ap.add_argument("--no-gloo", action="store_true", help="ringway only")
    a = ap.parse_args(argv)

    dist.init_process_group("ringway")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    groups = {"ringway": dist.group.WORLD}
    if not a.no_gloo:
        groups["gloo"] = dist.new_group(backend="gloo")
    report = groups.get("gloo", dist.group.WORLD)
    factor = 2 * (n - 1) / n
    if rank == 0:
        print("# ringway_torch.bench: %d ranks, float32 sum in place, ringway %s, torch %s" %
              (n, ringway_torch.version(), torch.__version__))
        print("# %d warm-up + %d timed calls, median of %d alternating rounds; time: slowest "
              "rank's mean per call" % (a.warmup, a.iters, a.rounds))
        head = "%12s %12s %6s %6s  %10s %7s %7s" % ("size", "count", "type", "redop",
                                                   "time(us)", "algbw", "busbw")
        if "gloo" in groups:
            head += "  %10s %7s %7s  %6s" % ("gloo(us)", "algbw", "busbw", "ratio")
        print(head)
    size = a.minbytes
    ratios = []
    while size <= a.maxbytes:
        count = max(1, size // 4)
        t = torch.ones(count, dtype=torch.float32)
        iters = max(1, min(a.iters, (64 << 20) * a.iters // max(size, 1) or 1))
        rounds = {k: [] for k in groups}
        for r in range(a.rounds):
            order = list(groups) if r % 2 == 0 else list(reversed(list(groups)))
            for name in order:
                s = torch.tensor([timed(t, groups[name], iters, a.warmup)], dtype=torch.float64)
                dist.all_reduce(s, op=dist.ReduceOp.MAX, group=report)
                rounds[name].append(float(s))
        if rank == 0:
            med = {k: statistics.median(v) for k, v in rounds.items()}
            alg = {k: count * 4 / v / 1e9 for k, v in med.items()}
            line = "%12d %12d %6s %6s  %10.1f %7.3f %7.3f" % (
                count * 4, count, "float", "sum", med["ringway"] * 1e6, alg["ringway"],
                alg["ringway"] * factor)
            if "gloo" in groups:
                ratio = alg["ringway"] / alg["gloo"]
                ratios.append(ratio)
                line += "  %10.1f %7.3f %7.3f  %5.2fx" % (med["gloo"] * 1e6, alg["gloo"],
                                                          alg["gloo"] * factor, ratio)
            print(line, flush=True)
        size *= a.stepfactor
    if rank == 0 and ratios:
        print("# ringway / gloo busbw: min %.2fx, median %.2fx, max %.2fx" %
              (min(ratios), statistics.median(ratios), max(ratios)))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
