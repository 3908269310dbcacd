#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every comparison of bench/, one after the other (make bench).  Each prints
# its own figures next to the baseline it was measured against in the same run.
# Usage: run-all.sh <build dir>
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)

echo "=== p2p through the plugin ABI, socket transport, vs raw TCP (ringway-netperf) ==="
RINGWAY_TRANSPORT=socket "$build/tools/netperf/ringway-netperf" --local -b 8 -e 64M -f 8
echo "=== iperf3 on loopback (the ceiling of one TCP stream) ==="
if command -v iperf3 >/dev/null; then
  iperf3 -s -D -1 -p 5299 >/dev/null && sleep 0.5 && iperf3 -c 127.0.0.1 -p 5299 -t 5 | tail -3
fi
echo "=== p2p over shared memory vs memcpy ==="
"$here/shm_p2p.sh" "$build"
echo "=== allreduce: ringway over TCP vs Open MPI over TCP loopback ==="
"$here/allreduce_compare.sh" "$build"
echo "=== allreduce: 2 ranks, ringway over shm vs Open MPI's shared-memory path ==="
"$here/shm_allreduce.sh" "$build"
if [[ $(id -u) -eq 0 ]]; then
  echo "=== ring vs ps behind shaped 1 Gbit/s links (network namespaces) ==="
  "$here/allreduce_links.sh" "$build"
  echo "=== placement: 2 hosts x 2 ranks behind shaped 1 Gbit/s links, placed vs rank order ==="
  "$here/multihost_links.sh" "$build"
fi
echo "=== the cost of network events for NCCL's profiler at 64 KiB ==="
"$here/profiler_cost.sh" "$build"
if [[ $(id -u) -eq 0 ]]; then
  echo "=== NIC fusion: one shaped link vs two fused (network namespaces) ==="
  "$here/fuse_links.sh" "$build"
fi
echo "=== host reduction kernels ==="
"$build/tools/reduce-bench/ringway-reduce-bench" -d float32,float16,bfloat16 -o sum --host-only
