#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Point-to-point over the same-host transport through the plugin ABI
# (ringway-netperf drives ncclNetPlugin_v11 between two forked processes),
# next to a single-thread memcpy and raw TCP measured by the same run:
#   1. RINGWAY_TRANSPORT=shm, 8 B .. 64 MiB: the rtt column at 8 B is the
#      round trip, the 64 MiB line the bandwidth (cross-memory attach);
#   2. the same at 64 MiB with RINGWAY_SHM_CMA=0 (the slot pipeline);
#   3. RINGWAY_TRANSPORT=socket at 64 MiB, for scale.
# Each run is repeated REPEAT times; the summary keeps the best ratio to the
# memcpy of the same run, and the best 8-byte round trip.  Numbers from a
# machine whose cores are busy with something else mean little: both ranks
# need a core of their own.
#
#   bench/shm_p2p.sh [build dir]          REPEAT=3 MAXB=64M
set -euo pipefail

build=${1:-build}
REPEAT=${REPEAT:-3}
MAXB=${MAXB:-64M}
np=$build/tools/netperf/ringway-netperf
[[ -x $np ]] || { echo "shm_p2p: $np is not built" >&2; exit 1; }
out=$build/bench
mkdir -p "$out"

run() { # $1 label, rest: environment assignments and netperf arguments
	local label=$1 log
	shift
	log=$out/shm_p2p.$label.$rep.txt
	echo "== [$rep/$REPEAT] $*"
	env "$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
	grep -E '^ +[0-9]|memcpy|raw TCP|Out of' "$log"
}

for ((rep = 1; rep <= REPEAT; rep++)); do
	run shm RINGWAY_TRANSPORT=shm "$np" --local -b 8 -e "$MAXB" -f 4
	run slots RINGWAY_TRANSPORT=shm RINGWAY_SHM_CMA=0 "$np" --local -b "$MAXB" -e "$MAXB" --no-baseline
	run socket RINGWAY_TRANSPORT=socket RINGWAY_SOCKET_IFNAME=lo "$np" --local -b "$MAXB" -e "$MAXB" --no-baseline
done

# the largest size's GB/s, the memcpy GB/s and the 8-byte rtt of each run
echo
echo "#### $(nproc) CPU(s), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
for ((rep = 1; rep <= REPEAT; rep++)); do
	awk -v rep="$rep" '
		/^ +[0-9]+ / { if ($1 == 8) rtt = $5; bw = $4; size = $1 }
		/^# memcpy/ { mc = $(NF - 1) }
		END { printf "# run %d: shm %d B %.3f GB/s, memcpy %.3f GB/s: %.2fx; 8 B rtt %.2f us\n",
			     rep, size, bw, mc, (mc > 0 ? bw / mc : 0), rtt }' "$out/shm_p2p.shm.$rep.txt"
	awk -v rep="$rep" '/^ +[0-9]+ / { bw = $4 } END { printf "# run %d: shm, RINGWAY_SHM_CMA=0 %.3f GB/s\n", rep, bw }' \
		"$out/shm_p2p.slots.$rep.txt"
	awk -v rep="$rep" '/^ +[0-9]+ / { bw = $4 } END { printf "# run %d: socket (lo) %.3f GB/s\n", rep, bw }' \
		"$out/shm_p2p.socket.$rep.txt"
done
