#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# NIC fusion where links are the limit: two hosts (network namespaces,
# tests/multihost/hosts.sh), each with NICs fa0 and fa1 shaped to RATE in
# each direction (tc tbf), ringway-netperf host 0 -> host 1 at SIZE over
# device 0 (fa0 alone) and over --fuse 0,1 (fa0+fa1, makeVDevice), REPEAT
# times alternating; prints each run, the medians and fused / one link.
# Then links of unequal speed (fa0 slowed to SLOW): the fused bandwidth and
# each NIC's share of the bytes, which completion-driven striping sets by
# speed (a fixed split would hold the fast link to the slow one's pace).
#
#   sudo bench/fuse_links.sh [build dir]
#   RATE=200mbit SLOW=100mbit SIZE=16M ITERS=12 REPEAT=3 sudo -E bench/fuse_links.sh build
set -euo pipefail

build=${1:-build}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
netperf=$(cd "$build/tools/netperf" && pwd)/ringway-netperf
plugin=$(cd "$build/plugin" && pwd)/libnccl-net-ringway.so
RATE=${RATE:-200mbit}
SIZE=${SIZE:-16M}
ITERS=${ITERS:-12}
REPEAT=${REPEAT:-3}
SLOW=${SLOW:-100mbit}
port=29900

# shellcheck source=tests/multihost/hosts.sh
source "$here/../tests/multihost/hosts.sh"
why=$(mh_unusable)
[[ -z $why ]] || { echo "fuse_links: $why" >&2; exit 1; }
out=$(mktemp -d)
trap 'mh_teardown' EXIT
mh_reap_stale rwfb
mh_setup "rwfb-$$" 2 "fa0 fa1" "$RATE"

# run ARGS...: rank 0's algbw (GB/s) at SIZE
run() {
	local s c
	for h in 0 1; do
		local role=(--server)
		((h == 0)) || role=(--client "$(mh_addr 0 0)")
		mh_exec "$h" "host$h" env RINGWAY_TRANSPORT=socket RINGWAY_SOCKET_IFNAME==fa0,fa1 \
			RINGWAY_SOCKET_FAMILY=ipv4 "$netperf" --plugin "$plugin" --no-baseline \
			-p "$port" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 2 "${role[@]}" "$@" \
			>"$out/r$h.out" 2>"$out/r$h.err" &
		((h == 0)) && s=$! || c=$!
	done
	port=$((port + 1))
	if ! wait "$s" || ! wait "$c"; then
		tail -n 5 "$out"/r*.err >&2
		return 1
	fi
	grep -q "Out of bounds values : 0 OK" "$out/r0.out" || { echo "wrong bytes" >&2; return 1; }
	awk '$1 ~ /^[0-9]+$/ { bw = $4 } END { print bw }' "$out/r0.out"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "# fuse_links: 2 hosts, NICs fa0 fa1 at $RATE each way, $SIZE x $ITERS, $REPEAT rounds"
one=() two=()
for ((i = 1; i <= REPEAT; i++)); do
	a=$(run -d 0)
	b=$(run --fuse 0,1)
	one+=("$a") two+=("$b")
	echo "round $i: one link (fa0) $a GB/s, fused (fa0+fa1) $b GB/s"
done
m1=$(median "${one[@]}") m2=$(median "${two[@]}")
awk -v a="$m1" -v b="$m2" -v r="$RATE" 'BEGIN {
	printf "median: one link %.4f GB/s, fused %.4f GB/s = %.2fx one link (rate %s per link)\n",
	       a, b, b / a, r }'

# fa0 slowed to SLOW on both hosts, both directions
for h in 0 1; do
	tc -n "rwfb-$$-h$h" qdisc change dev fa0 root tbf rate "$SLOW" burst 1mb latency 100ms
	tc -n "rwfb-$$-sw" qdisc change dev "h${h}r0" root tbf rate "$SLOW" burst 1mb latency 100ms
done
b0=$(mh_bytes 0 fa0) b1=$(mh_bytes 0 fa1)
u=$(run --fuse 0,1)
d0=$(($(mh_bytes 0 fa0) - b0)) d1=$(($(mh_bytes 0 fa1) - b1))
awk -v u="$u" -v d0="$d0" -v d1="$d1" -v s="$SLOW" -v r="$RATE" 'BEGIN {
	printf "uneven links (fa0 %s, fa1 %s): fused %.4f GB/s; bytes fa0 %.0f MB (%.0f%%), fa1 %.0f MB (%.0f%%)\n",
	       s, r, u, d0 / 1e6, 100 * d0 / (d0 + d1), d1 / 1e6, 100 * d1 / (d0 + d1) }'
