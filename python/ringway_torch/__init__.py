# SPDX-License-Identifier: Apache-2.0
"""ringway as a torch.distributed backend.

    import ringway_torch                      # registers "ringway"
    dist.init_process_group("ringway")        # or "cpu:ringway,cuda:nccl"

Rendezvous: rank 0 opens ringway's listener on an ephemeral port
(rw_get_unique_id) and hands the id -- address, port and a fresh job
secret -- to the other ranks through the process group's c10d Store, so
no port beyond torchrun's MASTER_PORT is needed.  Every collective is
queued on the group's worker thread and returns a Work at once; a failed
collective raises torch.distributed.DistBackendError naming the rank that
failed.
"""
import os
import threading
from datetime import timedelta

import torch.distributed as dist

from . import _C

__all__ = ["version", "BACKEND"]

BACKEND = "ringway"

_lock = threading.Lock()
_generation = {}  # group id -> groups of that id created in this process


def version():
    """libringway's version string."""
    return _C.version()


def _ms(timeout):
    if isinstance(timeout, timedelta):
        return int(timeout.total_seconds() * 1000)
    return int(float(timeout) * 1000)


def _create(opts, _backend_options=None):
    store, rank, size = opts.store, opts.group_rank, opts.group_size
    # Every member creates a group's backends in the same order, so the
    # count of this group id in this process names the same key on all.
    with _lock:
        gen = _generation.get(opts.group_id, 0)
        _generation[opts.group_id] = gen + 1
    key = "ringway/%s/%d/id" % (opts.group_id, gen)
    if rank == 0:
        uid = _C.unique_id()
        store.set(key, uid)
    else:
        uid = store.get(key)
    timeout_ms = max(1, min(_ms(opts.timeout), 86400000))
    # RINGWAY_TIMEOUT_MS, when set, bounds each wait on a peer; else the
    # process group's timeout does
    rw_timeout = None if os.environ.get("RINGWAY_TIMEOUT_MS") else timeout_ms
    return _C.create(rank, size, bytes(uid), timeout_ms, rw_timeout)


def _devices():
    """cpu; and cuda where libringway was built with CUDA and a GPU is here
    (c10d makes one backend per device: no second communicator without one)."""
    import torch

    devs = ["cpu"]
    if _C.cuda_support() and torch.cuda.is_available():
        devs.append("cuda")
    return devs


if "ringway" not in dist.Backend.backend_list:
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=_devices())
