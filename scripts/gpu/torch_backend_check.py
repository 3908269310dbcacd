# SPDX-License-Identifier: Apache-2.0
"""The ringway torch.distributed backend on CUDA tensors (scripts/gpu-check.sh,
step torch-backend-cuda-n2; torchrun --standalone --nproc-per-node N, every
rank on the current CUDA device).

Checks, each against a reference every rank computes from every rank's
inputs (made on the CPU from a seed, so any rank can make them all):
all_reduce (sum, avg, max) for float32, bfloat16, float16 and int32 at
counts 1, 3, 1000, 65537 and 2^20; reduce_scatter_tensor, all_gather_into_tensor
and broadcast (float32); stream order: a tensor written by a long kernel on
the caller's stream just before the call must be reduced after it ran, and
the caller's stream must see the result after Work.wait().  Then busbw of a
64 MiB float32 all_reduce on CUDA and on CPU tensors.  Rank 0 prints one
"check" line per failure and a last line "RESULT ..."; exit 1 on a failure.
"""
import os
import sys
import time

import torch
import torch.distributed as dist

import ringway_torch  # noqa: F401  (registers "ringway")

RTOL = {torch.float32: 1e-5, torch.bfloat16: 2 ** -6, torch.float16: 2 ** -9, torch.int32: 0}
COUNTS = [1, 3, 1000, 65537, 1 << 20]
OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG, "max": dist.ReduceOp.MAX}

failures = []


def data(rank, count, dtype, seed):
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    if dtype.is_floating_point:
        return torch.randn(count, generator=g, dtype=torch.float64).to(dtype)
    return torch.randint(-100, 100, (count,), generator=g, dtype=torch.int64).to(dtype)


def reference(inputs, op):
    x = torch.stack([t.double() for t in inputs])
    if op == "sum":
        return x.sum(0)
    if op == "avg":
        return x.sum(0) / len(inputs)
    return x.max(0).values


def close(got, ref, dtype, scale):
    got = got.double().cpu()
    if dtype == torch.int32:
        return torch.equal(got, ref.trunc())
    return bool(((got - ref).abs() <= RTOL[dtype] * (ref.abs() + scale) + 1e-30).all())


def fail(what):
    failures.append(what)


def check_allreduce(rank, n, dev):
    checked = 0
    seed = 1
    for dtype in RTOL:
        for op in OPS:
            if op == "avg" and not dtype.is_floating_point:
                continue
            for count in COUNTS:
                seed += 1
                inputs = [data(r, count, dtype, seed) for r in range(n)]
                x = inputs[rank].clone().to(dev)
                dist.all_reduce(x, op=OPS[op])
                scale = max(float(t.double().abs().max()) for t in inputs) * n
                if not close(x, reference(inputs, op), dtype, scale):
                    fail("all_reduce %s %s count %d" % (op, dtype, count))
                checked += 1
    return checked


def check_others(rank, n, dev):
    count = 65537
    inputs = [data(r, count * n, torch.float32, 7) for r in range(n)]
    out = torch.empty(count, device=dev)
    dist.reduce_scatter_tensor(out, inputs[rank].clone().to(dev))
    ref = reference(inputs, "sum")[rank * count:(rank + 1) * count]
    scale = max(float(t.abs().max()) for t in inputs) * n
    if not close(out, ref, torch.float32, scale):
        fail("reduce_scatter_tensor float32 count %d" % count)
    mine = data(rank, count, torch.float32, 8).to(dev)
    gathered = torch.empty(count * n, device=dev)
    dist.all_gather_into_tensor(gathered, mine)
    if not torch.equal(gathered.cpu(), torch.cat([data(r, count, torch.float32, 8) for r in range(n)])):
        fail("all_gather_into_tensor float32 count %d" % count)
    for root in range(n):
        b = data(rank, count, torch.float32, 9 + root).to(dev)
        dist.broadcast(b, src=root)
        if not torch.equal(b.cpu(), data(root, count, torch.float32, 9 + root)):
            fail("broadcast float32 root %d" % root)
    return 3 + n


def check_stream_order(rank, n, dev):
    """The value is written by the caller's stream after a long kernel: the
    backend must wait for it, and the caller's stream must wait for the
    result after Work.wait()."""
    side = 4096 if dev.type == "cuda" else 128
    a = torch.randn(side, side, device=dev) / side ** 0.5
    x = torch.zeros(1 << 20, device=dev)
    for i in range(3):
        for _ in range(8):
            a = torch.tanh(a @ a)  # tens of ms on the caller's stream
        x.fill_(rank + 1 + i)
        w = dist.all_reduce(x, async_op=True)
        w.wait()
        y = x * 2  # on the caller's stream, after the result
        want = 2.0 * sum(r + 1 + i for r in range(n))
        if not torch.equal(y.cpu(), torch.full_like(y.cpu(), want)):
            fail("stream order round %d: got %s, want %s" % (i, y[0].item(), want))
    return 3


def busbw(n, dev, nbytes=64 << 20, iters=10):
    x = torch.ones(nbytes // 4, device=dev)
    for _ in range(3):
        dist.all_reduce(x)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    t = (time.perf_counter() - t0) / iters
    return nbytes / t * 2 * (n - 1) / n / 1e9, t * 1e6


def main():
    dist.init_process_group("ringway")
    rank, n = dist.get_rank(), dist.get_world_size()
    if os.environ.get("TORCH_CHECK_DEVICE") == "cpu":  # a rehearsal without a GPU
        dev = torch.device("cpu")
    elif not torch.cuda.is_available():
        print("RESULT no CUDA device: nothing checked")
        return 1
    else:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        dev = torch.device("cuda", torch.cuda.current_device())
    checked = check_allreduce(rank, n, dev)
    checked += check_others(rank, n, dev)
    checked += check_stream_order(rank, n, dev)
    gpu_bw, gpu_us = busbw(n, dev)
    cpu_bw, cpu_us = busbw(n, torch.device("cpu"))
    label = "cuda" if dev.type == "cuda" else "cpu (rehearsal)"
    bad = torch.tensor([len(failures)])
    dist.all_reduce(bad, op=dist.ReduceOp.SUM)  # every rank's failures (cpu tensor)
    if rank == 0:
        for f in failures:
            print("check FAIL rank 0:", f)
        print("RESULT %d ranks, torch %s: %d checks, %d failures (all ranks); 64 MiB float32 "
              "all_reduce busbw: %s %.2f GB/s (%.0f us), cpu %.2f GB/s (%.0f us)"
              % (n, torch.__version__, checked, int(bad), label, gpu_bw, gpu_us, cpu_bw, cpu_us))
    elif failures:
        for f in failures:
            print("check FAIL rank %d: %s" % (rank, f))
    sys.stdout.flush()
    dist.destroy_process_group()
    return 1 if int(bad) else 0


if __name__ == "__main__":
    sys.exit(main())
