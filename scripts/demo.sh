#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on an embedded default: ringway's pipelined ring allreduce
# between 4 local processes on host memory, nccl-tests style, every result
# checked (#wrong must be 0).  Usage: demo.sh <build dir>
set -euo pipefail
build=${1:-build}
perf=$build/tools/perf/ringway-perf
[[ -x $perf ]] || { echo "demo: $perf not built" >&2; exit 1; }
echo "== ringway-perf --local 4 -b 8 -e 64M -f 4 (float32 sum, host memory) =="
exec "$perf" --local 4 -b 8 -e 64M -f 4
