#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Ring against parameter server where links, not CPUs, are the limit: each
# rank runs in its own network namespace, joined to a software switch by a
# veth pair shaped to RATE in each direction (tc tbf), as if every rank were
# a node with its own NIC.  ringway over TCP, float32 sum, the same sizes
# for -a ring and -a ps.  On one host's loopback both algorithms cost the
# same CPU (every byte is copied by the same kernel either way), which hides
# the ring's advantage; here rank 0's link carries (P-1) x N bytes each way
# under ps and every link 2 (P-1)/P x N under the ring.
#
#   sudo bench/allreduce_links.sh [build dir]
#   RANKS=4 RATE=1gbit SIZES="16M 64M" ITERS=3 sudo -E bench/allreduce_links.sh build
#
# Needs root, iproute2 (ip, tc) and veth/tbf in the kernel.  Everything it
# creates lives in namespaces named rwlink-*, removed on exit; the host's
# own interfaces are not touched.
set -euo pipefail

build=${1:-build}
perf=$(cd "$(dirname "$build/tools/perf/ringway-perf")" && pwd)/ringway-perf
RANKS=${RANKS:-4}
RATE=${RATE:-1gbit}
SIZES=${SIZES:-"64M"}
ITERS=${ITERS:-3}
WARMUP=${WARMUP:-1}
PORT=${PORT:-29700}
ns=rwlink

[[ $(id -u) == 0 ]] || { echo "allreduce_links: needs root (network namespaces)" >&2; exit 1; }
[[ -x $perf ]] || { echo "allreduce_links: $perf is not built" >&2; exit 1; }

cleanup() {
	for ((r = 0; r < RANKS; r++)); do ip netns del "$ns-$r" 2>/dev/null || true; done
	ip netns del "$ns-sw" 2>/dev/null || true
}
trap cleanup EXIT
cleanup

ip netns add "$ns-sw"
ip -n "$ns-sw" link add br0 type bridge
ip -n "$ns-sw" link set br0 up
for ((r = 0; r < RANKS; r++)); do
	ip netns add "$ns-$r"
	ip -n "$ns-$r" link set lo up
	ip -n "$ns-$r" link add eth0 type veth peer name "p$r" netns "$ns-sw"
	ip -n "$ns-$r" addr add "10.77.0.$((r + 1))/24" dev eth0
	ip -n "$ns-$r" link set eth0 mtu 9000 up
	ip -n "$ns-sw" link set "p$r" mtu 9000 master br0 up
	# the rank's NIC: RATE out of the rank, RATE into it
	tc -n "$ns-$r" qdisc add dev eth0 root tbf rate "$RATE" burst 1mb latency 100ms
	tc -n "$ns-sw" qdisc add dev "p$r" root tbf rate "$RATE" burst 1mb latency 100ms
done

run() { # $1 algo, $2 size: prints rank 0's table rows
	local pids=() out
	out=$(mktemp)
	for ((r = RANKS - 1; r >= 0; r--)); do
		ip netns exec "$ns-$r" env RANK=$r WORLD_SIZE="$RANKS" \
			RINGWAY_ROOT="10.77.0.1:$PORT" RINGWAY_TRANSPORT=socket \
			RINGWAY_SOCKET_IFNAME=eth0 RINGWAY_TIMEOUT_MS=120000 \
			"$perf" -a "$1" -b "$2" -e "$2" -n "$ITERS" -w "$WARMUP" -c 1 \
			>"$out.$r" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}" || { cat "$out".*; rm -f "$out"*; return 1; }
	cat "$out.0"
	rm -f "$out"*
	PORT=$((PORT + 1))
}

echo "# $RANKS ranks, each in its own namespace behind a $RATE veth (tbf), socket transport"
for size in $SIZES; do
	for algo in ring ps; do
		echo "== $algo, $size"
		run "$algo" "$size" | tee "/tmp/$ns-$algo-$size.txt" | grep -E '^#  |^ +[0-9]|bandwidth'
	done
	awk -v s="$size" 'FNR == 1 { f++ } /^ +[0-9]/ { o[f] = $7; i[f] = $11 }
		END { printf "# %s: ring/ps busbw %.2fx out of place, %.2fx in place\n", s,
		      o[2] ? o[1] / o[2] : 0, i[2] ? i[1] / i[2] : 0 }' \
		"/tmp/$ns-ring-$size.txt" "/tmp/$ns-ps-$size.txt"
done
