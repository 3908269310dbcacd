#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Several hosts on one machine: each host a network namespace with its own
# hostname (hosts.sh), its NICs veths named like the topology fixture's
# netdevs, one bridge per rail; 2 ranks of ringway-perf per host, each
# with RINGWAY_TOPO_XML standing in for its host's machine and LOCAL_RANK
# naming its GPU there.  For every run it checks:
#   - every rank exits 0 and rank 0's table has #wrong 0 in every row
#     (ringway-perf -c 1 poisons the output and checks every element);
#   - auto's connection lines: shm only to a rank of the same host, socket
#     only to an address of another host, and both kinds seen where a ring
#     must have both;
#   - no WARN from any rank;
#   - with mh_collnet and the plugin given: CollNet (v12) over the same
#     hosts, iallreduce/iallgather/ireducescatter exact on every rank.
# Skips (exit 77) where namespaces cannot be made (not root, no ip/unshare,
# no veth).  Bounded: every rank runs under timeout(1) and
# RINGWAY_TIMEOUT_MS; nothing is timed.
#
#   tests/multihost/multihost.sh <ringway-perf> <fixtures dir> [work dir
#                                [<mh_collnet> <libnccl-net-ringway.so>]]
set -uo pipefail

perf=$1
fixtures=$2
work=${3:-$(mktemp -d)}
collnet=${4:-}
plugin=${5:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hosts.sh
source "$here/hosts.sh"

RANK_TIMEOUT_S=${RANK_TIMEOUT_S:-90}
# more VAR=value for every rank, last (e.g. to see the checks fail:
# MH_RANK_ENV=RINGWAY_TRANSPORT=socket)
read -r -a rank_env <<<"${MH_RANK_ENV:-}"
base=rwmh

why=$(mh_unusable)
if [[ -n $why ]]; then
	echo "multihost: SKIP: $why"
	exit 77
fi
[[ -x $perf ]] || { echo "multihost: $perf is not built" >&2; exit 1; }
mkdir -p "$work"
mh_reap_stale "$base"
trap mh_teardown EXIT
trap 'exit 130' INT TERM

failures=0
fail() {
	echo "multihost: FAIL: $*" >&2
	failures=$((failures + 1))
}

port=29500

# run NAME NHOSTS FIXTURE LAYOUT PERF-ARGS...: one ringway-perf job over
# hosts 0..NHOSTS-1, 2 ranks each.  LAYOUT "block": ranks 2h and 2h+1 on
# host h; "interleaved": rank r on host r % NHOSTS.  PERF-ARGS "collnet":
# the ranks run mh_collnet instead.  Leaves $work/NAME/r<R>.{out,err,host}
# and the ranks' exit codes in r<R>.rc.
run() {
	local name=$1 nhosts=$2 fixture=$3 layout=$4
	shift 4
	local n=$((2 * nhosts)) dir=$work/$name r h l pids=() cmd root
	root=$(mh_addr 0 0):$port
	port=$((port + 1))
	rm -rf "$dir"
	mkdir -p "$dir"
	nic_bytes >"$dir/bytes.before"
	for ((r = 0; r < n; r++)); do
		if [[ $layout == block ]]; then
			h=$((r / 2)) l=$((r % 2))
		else
			h=$((r % nhosts)) l=$((r / nhosts))
		fi
		echo "$h" >"$dir/r$r.host"
		if [[ $1 == collnet ]]; then
			cmd=("$collnet" "$plugin" "$dir" "$r" "$n")
		else
			cmd=("$perf" "$@")
		fi
		(
			mh_exec "$h" "host$h" env RANK=$r WORLD_SIZE=$n LOCAL_RANK=$l \
				RINGWAY_ROOT="$root" RINGWAY_TRANSPORT=auto RINGWAY_SOCKET_IFNAME=ib \
				RINGWAY_DEBUG=INFO RINGWAY_TIMEOUT_MS=$((RANK_TIMEOUT_S * 1000 / 2)) \
				RINGWAY_TOPO_XML="$fixtures/$fixture" RINGWAY_CHUNK_BYTES=64K \
				"${rank_env[@]}" timeout -k 5 "$RANK_TIMEOUT_S" "${cmd[@]}" >"$dir/r$r.out" 2>"$dir/r$r.err"
			echo $? >"$dir/r$r.rc"
		) &
		pids+=($!)
	done
	wait "${pids[@]}"
	echo "$n" >"$dir/nranks"
	nic_bytes >"$dir/bytes.after"
	# "host nic bytes" moved during the run
	paste "$dir/bytes.before" "$dir/bytes.after" |
		awk '{ print $1, $2, $6 - $3 }' >"$dir/bytes"
}

# "host nic bytes" (sent + received so far) of every NIC of every host.
nic_bytes() {
	local h nic
	for ((h = 0; h < mh_nhosts; h++)); do
		for nic in "${mh_nics[@]}"; do
			echo "$h $nic $(mh_bytes "$h" "$nic")"
		done
	done
}

# The rank's own pid: the logger's "ringway PID:TID LEVEL ..." prefix.
rank_pid() { awk '$1 == "ringway" { split($2, a, ":"); print a[1]; exit }' "$1"; }

# check_ranks NAME: every rank exited 0 and warned of nothing.
check_ranks() {
	local name=$1 dir=$work/$1 n r rc
	n=$(cat "$dir/nranks")
	for ((r = 0; r < n; r++)); do
		rc=$(cat "$dir/r$r.rc" 2>/dev/null || echo missing)
		if [[ $rc != 0 ]]; then
			fail "$name: rank $r exited with $rc (124: timed out); its stderr:"
			tail -n 20 "$dir/r$r.err" >&2
		fi
		if grep -q ' WARN ' "$dir/r$r.err"; then
			fail "$name: rank $r warned:"
			grep ' WARN ' "$dir/r$r.err" | head -n 5 >&2
		fi
	done
}

# check_results NAME ROWS: check_ranks, and rank 0's table.
check_results() {
	local name=$1 rows=$2 dir=$work/$1 got
	check_ranks "$name"
	# rows: size count type redop time algbw busbw #wrong (x2)
	got=$(awk '/^ +[0-9]/ { n++; if ($8 != "0" || $12 != "0") bad++ }
		END { printf "%d %d", n, bad }' "$dir/r0.out")
	if [[ $got != "$rows 0" ]]; then
		fail "$name: expected $rows rows with #wrong 0, got (rows, wrong rows) $got:"
		cat "$dir/r0.out" >&2
	fi
	grep -q '^# Out of bounds values : 0 OK' "$dir/r0.out" ||
		fail "$name: rank 0 does not say 'Out of bounds values : 0 OK'"
}

# check_transports NAME NEED_SHM: every auto connection line names the
# right transport for where the peer is.  NEED_SHM: the ring has a hop
# inside a host, so at least one shm connection must be seen.
check_transports() {
	local name=$1 need_shm=$2 dir=$work/$1 n r h pid
	local -A host_of_pid=()
	local nshm=0 nsock=0 line peer ph
	n=$(cat "$dir/nranks")
	for ((r = 0; r < n; r++)); do
		pid=$(rank_pid "$dir/r$r.err")
		[[ -n $pid ]] && host_of_pid[$pid]=$(cat "$dir/r$r.host")
	done
	for ((r = 0; r < n; r++)); do
		h=$(cat "$dir/r$r.host")
		while IFS= read -r line; do
			if [[ $line =~ connection\ to\ pid\ ([0-9]+)\ uses\ shm\ \(peer\ on\ this\ host\) ]]; then
				peer=${BASH_REMATCH[1]}
				ph=${host_of_pid[$peer]:-?}
				[[ $ph == "$h" ]] ||
					fail "$name: rank $r (host $h) uses shm to pid $peer on host $ph"
				nshm=$((nshm + 1))
			elif [[ $line =~ connection\ to\ 10\.80\.([0-9]+)\.([0-9]+):[0-9]+\ uses\ socket\ \(peer\ on\ another\ host ]]; then
				ph=$((BASH_REMATCH[2] - 1))
				[[ $ph != "$h" ]] ||
					fail "$name: rank $r (host $h) uses socket to its own host: $line"
				nsock=$((nsock + 1))
			else
				fail "$name: rank $r: unexpected transport choice: $line"
			fi
		done < <(grep -o 'auto: connection to .*' "$dir/r$r.err")
	done
	((nsock > 0)) || fail "$name: no connection between hosts used socket"
	if ((need_shm && nshm == 0)); then
		fail "$name: no connection inside a host used shm"
	fi
	echo "multihost: $name: $nshm shm and $nsock socket connection(s), each to the right kind of peer"
}

# check_ring NAME NHOSTS: the ring (each rank's "next rank" INFO line)
# visits every rank once and crosses between hosts exactly NHOSTS times
# (once per host: its ranks are adjacent).
check_ring() {
	local name=$1 nhosts=$2 dir=$work/$1 n r next cross=0 seen=0 ring=""
	local -a nxt=() host=()
	n=$(cat "$dir/nranks")
	for ((r = 0; r < n; r++)); do
		host[r]=$(cat "$dir/r$r.host")
		next=$(sed -n 's/.*coll: rank [0-9]* of [0-9]*: .* next rank \([0-9]*\) .*/\1/p' \
			"$dir/r$r.err" | head -n 1)
		[[ -n $next ]] || { fail "$name: rank $r logged no next rank"; return; }
		nxt[r]=$next
	done
	r=0
	while ((seen < n)); do
		ring+=" $r(h${host[r]})"
		((host[r] != host[nxt[r]])) && cross=$((cross + 1))
		r=${nxt[r]}
		seen=$((seen + 1))
		((r == 0)) && break
	done
	((seen == n && r == 0)) || fail "$name: the next ranks do not make one ring:$ring"
	((cross == nhosts)) ||
		fail "$name: the ring$ring crosses between hosts $cross times, not $nhosts"
	echo "multihost: $name: ring$ring, $cross host crossings"
}

# rows for sizes 4 .. 4M, x16
sizes=(-b 4 -e 4M -f 16)
nrows=6
iters=(-n 2 -w 1 -c 1)

mh_setup "$base-$$-a" 2 "ib0 ib1" || { echo "multihost: setting up 2 hosts failed" >&2; exit 1; }
for coll in allreduce reduce_scatter allgather broadcast; do
	run "2x2-$coll" 2 hgx8-2s-4sw.xml block --coll "$coll" "${sizes[@]}" "${iters[@]}"
	check_results "2x2-$coll" "$nrows"
	check_transports "2x2-$coll" 1
	check_ring "2x2-$coll" 2
done
# every datatype and reduction once, at a size not a multiple of anything
run 2x2-types 2 hgx8-2s-4sw.xml block -d all -o all -b 100003 -e 100003 -n 1 -w 0 -c 1
check_results 2x2-types "$(awk '/^ +[0-9]/ { n++ } END { print n + 0 }' "$work/2x2-types/r0.out")"
check_transports 2x2-types 1
[[ $(awk '/^ +[0-9]/ { n++ } END { print n + 0 }' "$work/2x2-types/r0.out") -ge 20 ]] ||
	fail "2x2-types: fewer than 20 datatype x reduction rows"
mh_teardown

# 3 hosts, ranks dealt round-robin, another fixture
mh_setup "$base-$$-b" 3 "ib0 ib1" || { echo "multihost: setting up 3 hosts failed" >&2; exit 1; }
run 3x2-interleaved 3 gpu4-nic2.xml interleaved --coll allreduce "${sizes[@]}" "${iters[@]}"
check_results 3x2-interleaved "$nrows"
check_transports 3x2-interleaved 0
if [[ -n $collnet ]]; then
	run 3x2-collnet 3 gpu4-nic2.xml block collnet
	check_ranks 3x2-collnet
	check_transports 3x2-collnet 1
	[[ $(cat "$work"/3x2-collnet/r*.out | grep -c ' exact$') == 6 ]] ||
		fail "3x2-collnet: not every rank says its CollNet results are exact"
else
	echo "multihost: CollNet not run (no plugin built)"
fi
mh_teardown

if ((failures)); then
	echo "multihost: $failures failure(s); logs in $work" >&2
	exit 1
fi
echo "multihost: all runs exact, transports right (logs in $work)"
