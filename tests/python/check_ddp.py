# SPDX-License-Identifier: Apache-2.0
"""DDP training through the ringway backend against the same training
through Gloo, in one job (torchrun --standalone --nproc-per-node N).

A 3-layer MLP on synthetic regression data, 200 SGD steps, each rank on
its own shard.  Two replicas start from the same weights: one wrapped in
DDP over the ringway group (the default group), one over a Gloo group;
small gradient buckets (several in flight per step, overlapping the
backward pass).  The model is float64: the backends add gradients in
different orders (ringway's choice of algorithm by size changes it too),
and training amplifies the last bit's difference step by step (in
float32 with momentum it reaches 1e-4 relative by step ~100), so float64
keeps the comparison strict: at every step the two losses agree within
rtol 1e-9; at the end every rank holds bit-identical parameters of the
ringway replica (gathered and compared), and the two replicas agree
within 1e-7.  Prints the mean time of a DDP step with each backend.
"""
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import ringway_torch  # noqa: F401

STEPS = 200
BATCH = 32
RTOL = 1e-9


def model():
    torch.manual_seed(1234)  # the same weights on every rank and for both backends
    return nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 4)).double()


def main():
    dist.init_process_group("ringway")
    rank, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    torch.set_num_threads(1)

    nets = {"ringway": DDP(model(), process_group=None, bucket_cap_mb=0.05),
            "gloo": DDP(model(), process_group=gloo, bucket_cap_mb=0.05)}
    opts = {k: torch.optim.SGD(v.parameters(), lr=0.05, momentum=0.9) for k, v in nets.items()}
    g = torch.Generator().manual_seed(99 + rank)
    w_true = torch.randn(32, 4, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    spent = {"ringway": 0.0, "gloo": 0.0}
    bad = []
    losses = {}
    worst = 0.0
    for step in range(STEPS):
        x = torch.randn(BATCH, 32, generator=g, dtype=torch.float64)
        y = torch.tanh(x @ w_true) + 0.01 * torch.randn(BATCH, 4, generator=g, dtype=torch.float64)
        order = ("ringway", "gloo") if step % 2 == 0 else ("gloo", "ringway")
        for name in order:  # alternate who goes first: a fair time
            t0 = time.perf_counter()
            opts[name].zero_grad(set_to_none=True)
            loss = nn.functional.mse_loss(nets[name](x), y)
            loss.backward()
            opts[name].step()
            spent[name] += time.perf_counter() - t0
            losses[name] = loss.detach()
        # the mean loss over ranks: what the curves compare
        both = torch.stack([losses["ringway"], losses["gloo"]])
        dist.all_reduce(both, group=gloo)
        both /= n
        worst = max(worst, float((both[0] - both[1]).abs() / both[1].abs()))
        if not torch.allclose(both[0], both[1], rtol=RTOL, atol=1e-12):
            bad.append("step %d: loss ringway %.8f gloo %.8f" % (step, both[0], both[1]))
        if step in (0, STEPS // 2, STEPS - 1) and rank == 0:
            print("step %3d: loss ringway %.12f gloo %.12f" % (step, both[0], both[1]))

    # final parameters: identical on every rank, and close to Gloo's
    flat = torch.cat([p.detach().flatten() for p in nets["ringway"].parameters()])
    every = [torch.empty_like(flat) for _ in range(n)]
    dist.all_gather(every, flat, group=gloo)
    for r in range(n):
        if not torch.equal(every[r], flat):
            bad.append("rank %d's parameters differ from rank %d's" % (r, rank))
    ref = torch.cat([p.detach().flatten() for p in nets["gloo"].parameters()])
    if not torch.allclose(flat, ref, rtol=1e-7, atol=1e-9):
        bad.append("parameters after %d steps: ringway and gloo differ by %g" %
                   (STEPS, float((flat - ref).abs().max())))
    times = torch.tensor([spent["ringway"], spent["gloo"]], dtype=torch.float64)
    dist.all_reduce(times, op=dist.ReduceOp.MAX, group=gloo)
    dist.destroy_process_group()
    if bad:
        for b in bad[:10]:
            print("rank %d: FAIL %s" % (rank, b), file=sys.stderr)
        sys.exit(1)
    if rank == 0:
        print("%d ranks, %d DDP steps: loss curves agree at every step (largest relative "
              "difference %.1e, bound %g), parameters identical on every rank; DDP step %.2f ms "
              "with ringway, %.2f ms with gloo" % (n, STEPS, worst, RTOL, 1e3 * times[0] / STEPS,
                                                   1e3 * times[1] / STEPS))


if __name__ == "__main__":
    main()
