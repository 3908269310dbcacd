# SPDX-License-Identifier: Apache-2.0
"""A rank killed in the middle of DDP training over the ringway backend.

Three ranks (plain processes meeting at a FileStore: torchrun would tear
the job down itself when a worker dies) train a small MLP with DDP.  At
step 20 rank 2 is killed with SIGKILL between its forward and its
backward.  Ranks 0 and 1 must raise an exception naming rank 2, with
RINGWAY_TIMEOUT_MS=2000, well within 5 s of the kill (the issue's
bound; the dead rank's connections break at once, so this is seconds of
margin, not a race), then destroy the process group and create a new one
of the two survivors in the same process, and all-reduce through it.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta

KILL_STEP = 20
BOUND_S = 5.0


def all_here(store, world, key="here"):
    """Wait (bounded) until every rank reached this point: the group's
    start-up then waits only the RINGWAY_TIMEOUT_MS of 2 s, which ranks
    still importing torch on a loaded host could miss."""
    store.add(key, 1)
    deadline = time.time() + 60
    while int(store.add(key, 0)) < world:
        if time.time() > deadline:
            raise RuntimeError("%s: not every rank arrived within 60 s" % key)
        time.sleep(0.01)


def worker(rank, world, where):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    import ringway_torch  # noqa: F401

    torch.set_num_threads(1)
    store = dist.FileStore(os.path.join(where, "store1"), world)
    all_here(store, world)
    dist.init_process_group("ringway", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    torch.manual_seed(0)
    net = DDP(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                            nn.Linear(64, 1)), bucket_cap_mb=0.01)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    result = {"rank": rank}
    try:
        for step in range(1000):
            x = torch.randn(8, 16)
            loss = net(x).pow(2).mean()
            if rank == world - 1 and step == KILL_STEP:
                with open(os.path.join(where, "killed"), "w") as f:
                    f.write(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
            opt.zero_grad()
            loss.backward()
            opt.step()
        result["error"] = None
    except Exception as e:  # what the user sees
        result["t"] = time.time()
        result["type"] = type(e).__name__
        result["error"] = str(e)
        result["step"] = step
    # the survivors leave together: a rank that destroys its group closes
    # its links, and a failure notice naming rank 2 that the other has not
    # read yet would go with them (it would then blame the rank that left)
    all_here(store, world - 1, "raised")
    dist.destroy_process_group()

    # a new group of the survivors, in the same process
    # the survivors raised at different moments (each within the bound)
    store = dist.FileStore(os.path.join(where, "store2"), world - 1)
    all_here(store, world - 1)
    dist.init_process_group("ringway", store=store, rank=rank, world_size=world - 1,
                            timeout=timedelta(seconds=60))
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    result["after"] = float(t[0])
    dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(where, "rank%d.json" % rank), "w") as f:
        json.dump(result, f)


def main():
    world = 3
    with tempfile.TemporaryDirectory(prefix="ringway-kill-") as where:
        env = dict(os.environ, RINGWAY_TIMEOUT_MS="2000")
        procs = [subprocess.Popen([sys.executable, __file__, str(r), str(world), where], env=env)
                 for r in range(world)]
        codes = []
        for p in procs:
            try:
                codes.append(p.wait(timeout=120))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append("hung")
        bad = []
        if codes[world - 1] != -signal.SIGKILL:
            bad.append("rank %d: exit %r, not killed" % (world - 1, codes[world - 1]))
        killed = float(open(os.path.join(where, "killed")).read())
        for r in range(world - 1):
            if codes[r] != 0:
                bad.append("rank %d: exit %r" % (r, codes[r]))
                continue
            res = json.load(open(os.path.join(where, "rank%d.json" % r)))
            if res["error"] is None:
                bad.append("rank %d: trained on without an exception" % r)
                continue
            took = res["t"] - killed
            print("rank %d: %s after %.2f s at step %d: %s" % (r, res["type"], took, res["step"],
                                                                 res["error"]))
            if "rank %d" % (world - 1) not in res["error"]:
                bad.append("rank %d: the exception does not name rank %d" % (r, world - 1))
            if took > BOUND_S:
                bad.append("rank %d: raised %.2f s after the kill (bound %.0f s)" % (r, took,
                                                                                     BOUND_S))
            if res["after"] != float(sum(range(1, world))):
                bad.append("rank %d: the new group's all_reduce gave %r" % (r, res["after"]))
        if bad:
            for b in bad:
                print("FAIL " + b, file=sys.stderr)
            sys.exit(1)
        print("killed rank named by every survivor within %.0f s; a new group works" % BOUND_S)


if __name__ == "__main__":
    if len(sys.argv) == 4:
        worker(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
    else:
        main()
