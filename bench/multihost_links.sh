#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Placement where links are the limit: HOSTS hosts (network namespaces with
# their own hostnames, tests/multihost/hosts.sh), each behind one NIC shaped
# to RATE in each direction (tc tbf), 2 ranks of ringway-perf per host,
# allreduce of SIZE, float32 sum, auto transport (shm inside a host, socket
# between hosts), RINGWAY_TOPO_XML=FIXTURE standing in for every host.
# Ranks are dealt round-robin (rank r on host r % HOSTS: h0 h1 h0 h1), the
# worst order for a ring in rank order.  Three runs:
#   block       ranks launched host by host (rank order already groups them)
#   placed      interleaved launch, placement on (the default)
#   ignored     interleaved launch, placement off (PLACE_OFF, the ring in
#               rank order: it crosses between hosts at every hop)
# and each busbw as % of RATE, and placed / ignored.
#
#   sudo bench/multihost_links.sh [build dir]
#   RATE=1gbit SIZE=64M ITERS=5 sudo -E bench/multihost_links.sh build
#
# Needs root, iproute2 (ip, tc), unshare, veth and tbf.  Everything lives
# in namespaces named rwmhb-<pid>-*, removed on exit.
set -euo pipefail

build=${1:-build}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
perf=$(cd "$build/tools/perf" && pwd)/ringway-perf
HOSTS=${HOSTS:-2}
RATE=${RATE:-1gbit}
SIZE=${SIZE:-64M}
ITERS=${ITERS:-5}
WARMUP=${WARMUP:-1}
CHECK=${CHECK:-1}
FIXTURE=${FIXTURE:-$here/../tests/topo/fixtures/2s-1nic.xml}
NIC=${NIC:-ens7f0np0}		       # the fixture's NIC (its netdev name)
PLACE_OFF=${PLACE_OFF:-RINGWAY_PLACEMENT=rank} # what turns placement off
RUNS=${RUNS:-"block placed ignored"}
port=29600

# shellcheck source=tests/multihost/hosts.sh
source "$here/../tests/multihost/hosts.sh"
why=$(mh_unusable)
[[ -z $why ]] || { echo "multihost_links: $why" >&2; exit 1; }
[[ -x $perf ]] || { echo "multihost_links: $perf is not built" >&2; exit 1; }

out=$(mktemp -d)
cleanup() { mh_teardown; }
trap cleanup EXIT
mh_reap_stale rwmhb
mh_setup "rwmhb-$$" "$HOSTS" "$NIC" "$RATE"

# run KIND: prints rank 0's output; logs in $out/KIND.r*
run() {
	local kind=$1 n=$((2 * HOSTS)) r h l pids=() extra=()
	[[ $kind == ignored ]] && extra=("$PLACE_OFF")
	for ((r = 0; r < n; r++)); do
		if [[ $kind == block ]]; then
			h=$((r / 2)) l=$((r % 2))
		else
			h=$((r % HOSTS)) l=$((r / HOSTS))
		fi
		mh_exec "$h" "host$h" env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$l \
			RINGWAY_ROOT="$(mh_addr 0 0):$port" RINGWAY_TRANSPORT=auto \
			RINGWAY_SOCKET_IFNAME="$NIC" RINGWAY_TIMEOUT_MS=300000 RINGWAY_DEBUG=INFO \
			RINGWAY_TOPO_XML="$FIXTURE" "${extra[@]}" \
			"$perf" -b "$SIZE" -e "$SIZE" -n "$ITERS" -w "$WARMUP" -c "$CHECK" \
			>"$out/$kind.r$r.out" 2>"$out/$kind.r$r.err" &
		pids+=($!)
	done
	port=$((port + 1))
	if ! wait "${pids[@]}"; then
		tail -n 5 "$out/$kind".r*.err >&2
		return 1
	fi
	cat "$out/$kind.r0.out"
}

bps=$(awk -v r="$RATE" 'BEGIN { v = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u);
	m = u ~ /^g/ ? 1e9 : u ~ /^m/ ? 1e6 : u ~ /^k/ ? 1e3 : 1;
	if (u ~ /bps$/) m *= 8;  # tc: "bps" is bytes per second
	print v * m }')
echo "# $HOSTS hosts x 2 ranks, each host behind one $RATE link ($NIC, tbf both ways)," \
	"allreduce $SIZE float sum, auto transport, fixture $(basename "$FIXTURE")"
declare -A bus
for kind in $RUNS; do
	echo "== $kind"
	run "$kind" | tee "$out/$kind.txt" | grep -E '^# algo|^ +[0-9]'
	# where the ranks are, the ring, and each rank's send on channel 0
	grep -h -o 'place: rank .*\|place: channel 0 .*' "$out/$kind".r*.err | sort -u || true
	# busbw from the time columns (the table rounds GB/s to 2 decimals):
	# bytes / time x 2(n-1)/n, out of place and in place
	bus[$kind]=$(awk -v n=$((2 * HOSTS)) '/^ +[0-9]/ { o = $1 / ($5 * 1e-6) * 2 * (n - 1) / n;
		i = $1 / ($9 * 1e-6) * 2 * (n - 1) / n } END { printf "%.0f %.0f", o, i }' "$out/$kind.txt")
	awk -v b="${bus[$kind]}" -v bps="$bps" -v k="$kind" 'BEGIN { split(b, v, " ");
		printf "# %s: busbw %.1f MB/s = %.1f%% of the link rate out of place, %.1f MB/s = %.1f%% in place\n",
		       k, v[1] / 1e6, v[1] * 8 / bps * 100, v[2] / 1e6, v[2] * 8 / bps * 100 }'
done
if [[ -n ${bus[placed]:-} && -n ${bus[ignored]:-} ]]; then
	awk -v a="${bus[placed]}" -v b="${bus[ignored]}" 'BEGIN { split(a, x, " "); split(b, y, " ");
		printf "# placed / ignored busbw: %.2fx out of place, %.2fx in place\n",
		       (y[1] > 0 ? x[1] / y[1] : 0), (y[2] > 0 ? x[2] / y[2] : 0) }'
fi
echo "# logs: $out"
