#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The cost of ringway's network events for NCCL's profiler: point-to-point
# bandwidth at SIZE (64 KiB) through the plugin ABI (ringway-netperf drives
# ncclNetPlugin_v11 between two forked processes), without a profiler
# callback and with a stand-in one (--profile: a callback at init, a phandle
# with every isend/irecv, one start and one stop event per transfer), runs
# alternating A, B, A, B ... REPEAT times per transport.  Prints each run and
# the medians; the cost is 1 - median(B) / median(A).  Figures only: a
# machine whose cores are busy with something else makes every run noisy
# (both ranks need a core), which is why the runs alternate.  Then, per
# transport, prof_cost (tests/abi/prof_cost.c): the same A/B in one thread timed
# by its CPU clock (preemption excluded), and the event path alone (ns per
# transfer per end) against one end's CPU time per SIZE transfer.
#
#   bench/profiler_cost.sh [build dir]      REPEAT=7 SIZE=64K ITERS=20000
#                                           TRANSPORTS="shm socket"
set -euo pipefail

build=${1:-build}
REPEAT=${REPEAT:-7}
SIZE=${SIZE:-64K}
ITERS=${ITERS:-20000}
TRANSPORTS=${TRANSPORTS:-shm socket}
np=$build/tools/netperf/ringway-netperf
pc=$build/tests/abi/prof_cost
plugin=$build/plugin/libnccl-net-ringway.so
for f in "$np" "$pc"; do
	[[ -x $f ]] || { echo "profiler_cost: $f is not built" >&2; exit 1; }
done

bw() { # the algbw column (GB/s) of one run; $@: extra netperf arguments
	local out
	out=$("$np" --local -b "$SIZE" -e "$SIZE" -n "$ITERS" --no-baseline "$@" 2>&1) || {
		echo "$out" >&2
		exit 1
	}
	if [[ " $* " == *" --profile "* ]] && ! grep -q '^# profiler events: \([0-9]*\) started, \1 stopped' <<<"$out"; then
		echo "profiler_cost: starts and stops differ:" >&2
		echo "$out" >&2
		exit 1
	fi
	awk '/^ +[0-9]/ { print $4 }' <<<"$out"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for t in $TRANSPORTS; do
	export RINGWAY_TRANSPORT=$t RINGWAY_SOCKET_IFNAME=${RINGWAY_SOCKET_IFNAME:-lo}
	off=() on=()
	for ((rep = 1; rep <= REPEAT; rep++)); do
		off+=("$(bw)")
		on+=("$(bw --profile)")
		echo "$t $SIZE run $rep: no profiler ${off[-1]} GB/s, profiler ${on[-1]} GB/s"
	done
	a=$(printf '%s\n' "${off[@]}" | median)
	b=$(printf '%s\n' "${on[@]}" | median)
	awk -v t="$t" -v s="$SIZE" -v a="$a" -v b="$b" -v n="$REPEAT" 'BEGIN {
		printf "%s %s, median of %d: no profiler %.3f GB/s, with events %.3f GB/s, cost %.1f%%\n",
		       t, s, n, a, b, 100 * (1 - b / a) }'
done
for t in $TRANSPORTS; do
	RINGWAY_TRANSPORT=$t "$pc" "$plugin" -s "$SIZE" -n "$ITERS" -r "$REPEAT" | grep '^#'
done
