# SPDX-License-Identifier: Apache-2.0
"""Every collective x dtype x op of the ringway backend against Gloo's
results in the same job (torchrun --standalone --nproc-per-node N).

The default group is ringway's; a Gloo group over the same ranks computes
the reference from the same inputs.  Integers must match exactly.  Floats
are random, and the two backends add in different orders, so they match
within a tolerance: float32 rtol 1e-5, float64 1e-12, bfloat16 and float16
one rounding of the result (2^-7, 2^-10 relative; ringway reduces them in
float32 and rounds once per step) plus the inputs' scale.  Where Gloo has
no such reduction (AVG, some dtypes) the reference is the same reduction
computed locally from every rank's input (each rank can make them all).
Also: in place and through non-contiguous views, the list forms, every
root of broadcast, NotImplementedError for what ringway does not do.
"""
import sys

import torch
import torch.distributed as dist

import ringway_torch  # noqa: F401  (registers "ringway")

OPS = {
    "sum": dist.ReduceOp.SUM,
    "avg": dist.ReduceOp.AVG,
    "product": dist.ReduceOp.PRODUCT,
    "min": dist.ReduceOp.MIN,
    "max": dist.ReduceOp.MAX,
}
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int8,
          torch.int16, torch.int32, torch.int64, torch.uint8]
RTOL = {torch.float32: 1e-5, torch.float64: 1e-12, torch.bfloat16: 2 ** -6,
        torch.float16: 2 ** -9}
COUNTS = [1, 3, 1000, 65537]

failures = []


def data(rank, count, dtype, op, seed):
    """rank's input: reproducible on any rank."""
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    if dtype.is_floating_point:
        if op == "product":  # near 1: no overflow, no underflow
            x = 1 + 0.05 * torch.randn(count, generator=g, dtype=torch.float64)
        else:
            x = torch.randn(count, generator=g, dtype=torch.float64)
        return x.to(dtype)
    lo, hi = (-3, 4) if op == "product" else (-100, 100)
    if dtype == torch.uint8:
        lo, hi = (0, 4) if op == "product" else (0, 120)
    return torch.randint(lo, hi, (count,), generator=g, dtype=torch.int64).to(dtype)


def local_reduce(xs, op, n):
    """op over ranks, as ringway defines it (integers wrap; AVG: the sum,
    wrapped in the dtype, divided once by n, integers truncating toward
    zero)."""
    dtype = xs[0].dtype
    if dtype.is_floating_point:
        acc = [x.double() for x in xs]
    else:
        acc = [x.long() for x in xs]
    out = acc[0].clone()
    for x in acc[1:]:
        if op in ("sum", "avg"):
            out = out + x
        elif op == "product":
            out = out * x
        elif op == "min":
            out = torch.minimum(out, x)
        else:
            out = torch.maximum(out, x)
    if op == "avg" and dtype.is_floating_point:
        out = out / n
    elif op == "avg":  # the sum wraps in the dtype first (as NCCL's avg)
        out = torch.div(out.to(dtype).long(), n, rounding_mode="trunc")
    return out.to(dtype)  # wraps like the fixed-width sum


def same(what, got, want):
    if got.dtype.is_floating_point:
        rtol = RTOL[got.dtype]
        scale = max(1.0, float(want.double().abs().max())) if want.numel() else 1.0
        ok = torch.allclose(got.double(), want.double(), rtol=rtol, atol=rtol * scale)
    else:
        ok = torch.equal(got, want)
    if not ok:
        diff = (got.double() - want.double()).abs()
        i = int(diff.argmax())
        failures.append("%s: element %d: got %r, want %r" % (what, i, got.flatten()[i].item(),
                                                              want.flatten()[i].item()))


def gloo_reduce(x, op, gloo):
    """Gloo's allreduce of x, or None where Gloo has no such reduction."""
    if op == "avg":
        return None
    y = x.clone()
    try:
        dist.all_reduce(y, op=OPS[op], group=gloo)
    except (RuntimeError, ValueError):
        return None
    return y


def check_allreduce(rank, n, gloo):
    seed = 0
    checked = [0, 0]
    for dtype in DTYPES:
        for op in OPS:
            for count in COUNTS:
                seed += 1
                x = data(rank, count, dtype, op, seed)
                ref = gloo_reduce(x, op, gloo)
                checked[ref is None] += 1
                if ref is None:
                    ref = local_reduce([data(r, count, dtype, op, seed) for r in range(n)], op, n)
                what = "all_reduce(%s, %s, count=%d)" % (dtype, op, count)
                y = x.clone()
                work = dist.all_reduce(y, op=OPS[op], async_op=True)
                work.wait()
                same(what, y, ref)
                # a non-contiguous view of a bigger tensor: the same result, the
                # elements in between untouched
                if count == 1000:
                    big = torch.zeros(2 * count, dtype=dtype)
                    view = big[::2]
                    view.copy_(x)
                    dist.all_reduce(view, op=OPS[op])
                    same(what + " strided", view, ref)
                    same(what + " strided gaps", big[1::2], torch.zeros(count, dtype=dtype))
    return checked


def check_reduce_scatter(rank, n, gloo):
    seed = 5000
    for dtype in DTYPES:
        for op in OPS:
            for count in (1, 777):
                seed += 1
                xs = [data(r, n * count, dtype, op, seed) for r in range(n)]
                full = gloo_reduce(xs[rank], op, gloo)
                if full is None:
                    full = local_reduce(xs, op, n)
                ref = full[rank * count:(rank + 1) * count]
                what = "reduce_scatter_tensor(%s, %s, count=%d)" % (dtype, op, count)
                out = torch.empty(count, dtype=dtype)
                dist.reduce_scatter_tensor(out, xs[rank], op=OPS[op])
                same(what, out, ref)
                # the list form
                out2 = torch.empty(count, dtype=dtype)
                dist.reduce_scatter(out2, list(xs[rank].chunk(n)), op=OPS[op])
                same(what.replace("_tensor", "") + " (list)", out2, ref)


def check_gathers(rank, n, gloo):
    seed = 9000
    for dtype in DTYPES:
        for count in (1, 1001):
            seed += 1
            x = data(rank, count, dtype, "sum", seed)
            ref = torch.empty(n * count, dtype=dtype)
            try:
                dist.all_gather_into_tensor(ref, x, group=gloo)
            except RuntimeError:  # a dtype Gloo does not gather
                ref = torch.cat([data(r, count, dtype, "sum", seed) for r in range(n)])
            out = torch.empty(n * count, dtype=dtype)
            dist.all_gather_into_tensor(out, x)
            same("all_gather_into_tensor(%s, %d)" % (dtype, count), out, ref)
            # in place: the input is this rank's slot of the output
            out = torch.zeros(n * count, dtype=dtype)
            out[rank * count:(rank + 1) * count] = x
            dist.all_gather_into_tensor(out, out[rank * count:(rank + 1) * count])
            same("all_gather_into_tensor in place (%s)" % dtype, out, ref)
            # the list form, 2-d tensors
            parts = [torch.empty(count, 1, dtype=dtype) for _ in range(n)]
            dist.all_gather(parts, x.view(count, 1))
            same("all_gather(%s) (list)" % dtype, torch.cat(parts).flatten(), ref)
            # broadcast from every root
            for root in range(n):
                b = data(rank, count, dtype, "sum", seed + 100 * root)
                want = data(root, count, dtype, "sum", seed + 100 * root)
                dist.broadcast(b, root)
                same("broadcast(%s, root=%d)" % (dtype, root), b, want)


def check_misc(rank, n):
    # complex sums as pairs of reals; bool max is "any"
    z = torch.full((5,), complex(rank, -rank), dtype=torch.complex64)
    dist.all_reduce(z)
    s = sum(range(n))
    same("all_reduce(complex64)", torch.view_as_real(z),
         torch.view_as_real(torch.full((5,), complex(s, -s), dtype=torch.complex64)))
    b = torch.tensor([rank == 0, False, True])
    dist.all_reduce(b, op=dist.ReduceOp.MAX)
    if b.tolist() != [True, False, True]:
        failures.append("all_reduce(bool, max): %r" % b.tolist())
    # a Work's future carries the result
    t = torch.ones(4)
    fut = dist.all_reduce(t, async_op=True).get_future()
    got = fut.wait()[0]
    same("all_reduce future", got, torch.full((4,), float(n)))
    dist.barrier()
    # what ringway does not do: NotImplementedError naming the call
    for name, call in [
        ("reduce", lambda: dist.reduce(torch.ones(2), dst=0)),
        ("gather", lambda: dist.gather(torch.ones(2), [torch.ones(2)] * n if rank == 0 else None,
                                       dst=0)),
        ("alltoall_base", lambda: dist.all_to_all_single(torch.ones(n), torch.ones(n))),
        ("send", lambda: dist.send(torch.ones(2), dst=(rank + 1) % n)),
        ("BAND", lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32),
                                         op=dist.ReduceOp.BAND)),
    ]:
        try:
            call()
            failures.append("%s: no exception" % name)
        except NotImplementedError as e:
            if name not in str(e) or "ringway" not in str(e):
                failures.append("%s: NotImplementedError without the call's name: %s" % (name, e))
    # and the group still works
    t = torch.ones(3)
    dist.all_reduce(t)
    same("all_reduce after refusals", t, torch.full((3,), float(n)))


def main():
    dist.init_process_group("ringway")
    rank, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    checked = check_allreduce(rank, n, gloo)
    check_reduce_scatter(rank, n, gloo)
    check_gathers(rank, n, gloo)
    check_misc(rank, n)
    dist.barrier(group=gloo)
    dist.destroy_process_group()
    if failures:
        for f in failures[:20]:
            print("rank %d: FAIL %s" % (rank, f), file=sys.stderr)
        print("rank %d: %d failures" % (rank, len(failures)), file=sys.stderr)
        sys.exit(1)
    print("rank %d of %d: every collective agrees (%d allreduce cases against Gloo, %d against "
          "the local reference where Gloo has no such reduction)" % (rank, n, checked[0],
                                                                     checked[1]))


if __name__ == "__main__":
    main()
