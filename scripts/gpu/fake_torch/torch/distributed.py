# SPDX-License-Identifier: Apache-2.0
"""torch.distributed of the fake torch: collectives through files in FAKE_TORCH_DIR.

Each collective k: rank r writes its data to k.r, waits (bounded) for every rank's
file, reduces in float64 and rounds once to the tensor's dtype.  FAKE_TORCH_CORRUPT=1
spoils rank 0's last element of every result (the driver's checks must notice).
"""
import json
import os
import time

import torch

_state = {}


class ReduceOp:
    SUM = "sum"
    MAX = "max"


def init_process_group(backend, init_method=None, rank=0, world_size=1, timeout=None,
                       device_id=None):
    d = os.environ.get("FAKE_TORCH_DIR")
    if not d:
        raise RuntimeError("fake torch.distributed needs FAKE_TORCH_DIR")
    _state.update(dir=d, rank=rank, n=world_size, k=0, backend=backend,
                  timeout=timeout.total_seconds() if timeout else 30)


def _exchange(values):
    s = _state
    s["k"] += 1
    path = os.path.join(s["dir"], "%d.%d" % (s["k"], s["rank"]))
    with open(path + ".tmp", "w") as f:
        json.dump(values, f)
    os.replace(path + ".tmp", path)
    deadline = time.time() + s["timeout"]
    out = []
    for q in range(s["n"]):
        p = os.path.join(s["dir"], "%d.%d" % (s["k"], q))
        while not os.path.exists(p):
            if time.time() > deadline:
                raise RuntimeError("fake all_reduce: rank %d never came" % q)
            time.sleep(0.002)
        with open(p) as f:
            out.append(json.load(f))
    return out


def all_reduce(t, op=ReduceOp.SUM):
    parts = _exchange(t.data)
    if op == ReduceOp.MAX:
        t.data = torch.Tensor([max(vs) for vs in zip(*parts)], t.dtype).data
    else:
        t.data = torch.Tensor([sum(vs) for vs in zip(*parts)], t.dtype).data
    if os.environ.get("FAKE_TORCH_CORRUPT") and t.data and _state["rank"] == 0:
        t.data[-1] = torch.Tensor([t.data[-1] * 1.5 + 1], t.dtype).data[0]  # the checks must see it


def barrier():
    _exchange([])


def destroy_process_group():
    barrier()
