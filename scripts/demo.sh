#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job on an embedded default: point-to-point bandwidth and latency
# through the NCCL net plugin ABI between two local processes, next to a raw
# TCP transfer measured in the same run.  Usage: demo.sh <build dir>
set -euo pipefail
build=${1:-build}
netperf=$build/tools/netperf/ringway-netperf
[[ -x $netperf ]] || { echo "demo: $netperf not built" >&2; exit 1; }
echo "== ringway-netperf --local -b 8 -e 64M -f 4 =="
exec "$netperf" --local -b 8 -e 64M -f 4 --plugin "$build/plugin/libnccl-net-ringway.so"
