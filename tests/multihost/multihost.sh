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
#   - placement (the "place:" INFO lines): the ring is one order of all
#     ranks in which each host's ranks are adjacent (it crosses between
#     hosts once per host), each rank's host and hostname are its own, and
#     every hop between hosts goes over the NIC ringway-topo names for the
#     rank's GPU on the fixture, or one as near of the same kind with
#     "spread" in its reason, through the rw_net device of that NIC's
#     netdev, channels spread over every equally near NIC; with
#     RINGWAY_PLACEMENT=rank the ring is rank order;
#   - no WARN from any rank;
#   - with mh_collnet and the plugin given: CollNet (v12) over the same
#     hosts, iallreduce/iallgather/ireducescatter exact on every rank.
# Skips (exit 77) where namespaces cannot be made (not root, no ip/unshare,
# no veth).  Bounded: every rank runs under timeout(1) and
# RINGWAY_TIMEOUT_MS; nothing is timed.
#
#   tests/multihost/multihost.sh <ringway-perf> <ringway-topo> <fixtures dir>
#                                <work dir> [<mh_collnet> <libnccl-net-ringway.so>]
set -uo pipefail

perf=$1
topo=$2
fixtures=$3
work=$4
collnet=${5:-}
plugin=${6:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/multihost/hosts.sh
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
for tool in "$perf" "$topo"; do
	[[ -x $tool ]] || { echo "multihost: $tool is not built" >&2; exit 1; }
done
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
				RINGWAY_TOPO_XML="$( ((xml)) && echo "$fixtures/$fixture")" RINGWAY_CHUNK_BYTES=64K \
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

# check_ring NAME CROSSINGS: the engine's ring (each rank's "next rank" line)
# visits every rank once and crosses between hosts CROSSINGS times (the
# number of hosts when each host's ranks are adjacent).
check_ring() {
	local name=$1 nhosts=$2 dir=$work/$1 n r next cross=0 seen=0 ring=""
	local -a nxt=() host=()
	n=$(cat "$dir/nranks")
	for ((r = 0; r < n; r++)); do
		host[r]=$(cat "$dir/r$r.host")
		# the last comm the rank made (CollNet makes one in rank order
		# first, to share placement, then the one in ring order)
		next=$(sed -n 's/.*coll: rank [0-9]* of [0-9]*: .* next rank \([0-9]*\) .*/\1/p' \
			"$dir/r$r.err" | tail -n 1)
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

# What ringway-topo says of FIXTURE, one fact a line:
#   nic NAME NETDEV KIND | gpu BUSID INDEX | path GPUINDEX NICNAME TYPE |
#   pick BUSID NIC WORDS (its "GPU -> NIC" line up to the path's ")")
topo_facts() {
	RINGWAY_TOPO_XML=$1 "$topo" | awk '
		/^NICs:/ { nics = 1 }
		/^paths/ { nics = 0 }
		nics && $1 == "NIC" {
			nd = $3; for (i = 4; i < NF; i++) if ($i == "netdev") nd = $(i + 1)
			nic[$2] = $3; print "nic", $3, nd, $5 }
		/^  GPU [0-9]+ / { print "gpu", $3, $2 }
		/^ +GPU0 / { for (i = 1; i <= NF; i++) col[i] = $i; next }
		/^GPU[0-9]+ / { g = substr($1, 4)
			for (i = 2; i <= NF; i++) if (col[i - 1] ~ /^NIC/)
				print "path", g, nic[substr(col[i - 1], 4)], $i }
		/→/ { w = $0; sub(/^.*→ [^ ]*: /, "", w); w = substr(w, 1, index(w, ")"))
			n = $4; sub(/:$/, "", n); print "pick", $2, n, w }'
}

# check_place NAME NHOSTS FIXTURE [rank]: the "place:" lines of every rank
# against where the ranks run and what ringway-topo says of FIXTURE.
check_place() {
	local name=$1 nhosts=$2 fixture=$3 mode=${4:-topo} dir=$work/$1
	local n r h line ring="" ring0="" nch=0 c p cross g bus nic devno netdev k before=$failures
	fallbacks=0
	local -A f_netdev=() f_kind=() f_gpu=() f_path=() f_pick=() f_words=()
	local -A ghost=() hostg=() gpu_of=() nics_of=() used_dev=()
	local -a host=() pos=() ringv=()
	local k a b c2 rest
	while read -r k a b c2 rest; do
		case $k in
		nic) f_netdev[$a]=$b f_kind[$a]=$c2 ;;
		gpu) f_gpu[$a]=$b ;;
		path) f_path[$a.$b]=$c2 ;;
		pick) f_pick[$a]=$b f_words[$a]="$c2 $rest" ;;
		esac
	done < <( ((xml)) && topo_facts "$fixtures/$fixture")
	n=$(cat "$dir/nranks")
	for ((r = 0; r < n; r++)); do
		host[r]=$(cat "$dir/r$r.host")
	done
	for ((r = 0; r < n; r++)); do
		line=$(grep -o "place: rank $r of $n: .*" "$dir/r$r.err" | head -n 1)
		if [[ ! $line =~ host\ ([0-9]+)\ of\ ([0-9]+)\ \(([^\)]*)\),\ GPU\ ([^,]*),\ ring\ position\ ([0-9]+) ]]; then
			fail "$name: rank $r: no 'place: rank $r of $n: host .. of .. (..), GPU .., ring position ..' line"
			return
		fi
		[[ ${BASH_REMATCH[2]} == "$nhosts" ]] ||
			fail "$name: rank $r counts ${BASH_REMATCH[2]} hosts, not $nhosts"
		[[ ${BASH_REMATCH[3]} == "host${host[r]}" ]] ||
			fail "$name: rank $r runs on host${host[r]} but says (${BASH_REMATCH[3]})"
		g=${BASH_REMATCH[1]}
		# its host number names one namespace, and one namespace one number
		[[ -z ${ghost[$g]:-} || ${ghost[$g]} == "${host[r]}" ]] ||
			fail "$name: host $g holds ranks of host${ghost[$g]} and host${host[r]}"
		[[ -z ${hostg[${host[r]}]:-} || ${hostg[${host[r]}]} == "$g" ]] ||
			fail "$name: host${host[r]}'s ranks call their host ${hostg[${host[r]}]} and $g"
		ghost[$g]=${host[r]} hostg[${host[r]}]=$g
		gpu_of[$r]=${BASH_REMATCH[4]}
		pos[r]=${BASH_REMATCH[5]}
	done
	# one ring order, the same on every rank and every channel
	local -A logged=()
	while IFS= read -r line; do
		[[ $line =~ place:\ channel\ ([0-9]+)\ ring\ ([0-9\ ]+)\ \(([0-9]+)\ host\ crossings\) ]] ||
			continue
		c=${BASH_REMATCH[1]}
		((c + 1 > nch)) && nch=$((c + 1))
		ring=${BASH_REMATCH[2]% }
		logged[${BASH_REMATCH[3]}]=1
		[[ -z $ring0 ]] && ring0=$ring
		[[ $ring == "$ring0" ]] || fail "$name: channel $c's ring is '$ring', another's '$ring0'"
	done < <(cat "$dir"/r*.err)
	[[ -n $ring0 ]] || { fail "$name: no 'place: channel .. ring ..' line"; return; }
	read -r -a ringv <<<"$ring0"
	[[ ${#ringv[@]} == "$n" && $(printf '%s\n' "${ringv[@]}" | sort -n | uniq | wc -l) == "$n" ]] ||
		fail "$name: the ring '$ring0' is not an order of the $n ranks"
	cross=0
	for ((p = 0; p < n; p++)); do
		r=${ringv[p]}
		[[ ${pos[r]} == "$p" ]] || fail "$name: rank $r says ring position ${pos[r]}, the ring $p"
		((host[r] != host[ringv[(p + 1) % n]])) && cross=$((cross + 1))
	done
	[[ ${!logged[*]} == "$cross" ]] ||
		fail "$name: the ring '$ring0' crosses $cross times, the lines say (${!logged[*]} host crossings)"
	if [[ $mode == rank ]]; then
		[[ $ring0 == "$(seq -s ' ' 0 $((n - 1)))" ]] ||
			fail "$name: RINGWAY_PLACEMENT=rank, but the ring is '$ring0'"
	else
		((cross == (nhosts > 1 ? nhosts : 0))) ||
			fail "$name: the ring '$ring0' crosses between hosts $cross times (hosts ${host[*]})"
	fi
	# every rank's send of every channel
	local -A next_of=()
	for ((p = 0; p < n; p++)); do next_of[${ringv[p]}]=${ringv[(p + 1) % n]}; done
	for ((r = 0; r < n; r++)); do
		local seen=0 nexth
		while IFS= read -r line; do
			[[ $line =~ place:\ channel\ ([0-9]+)\ rank\ $r\ -\>\ rank\ ([0-9]+)\ over\ NIC\ ([^ ]+)\ \(net\ dev\ ([0-9]+)\ ([^\)]*)\):\ (.*) ]] ||
				continue
			seen=$((seen + 1))
			c=${BASH_REMATCH[1]} nic=${BASH_REMATCH[3]} devno=${BASH_REMATCH[4]} netdev=${BASH_REMATCH[5]}
			local why=${BASH_REMATCH[6]}
			[[ ${BASH_REMATCH[2]} == "${next_of[$r]}" ]] ||
				fail "$name: channel $c: rank $r sends to ${BASH_REMATCH[2]}, its next is ${next_of[$r]}"
			nexth=${host[${next_of[$r]}]}
			((nexth == host[r])) && continue # inside a host: shm, whatever the NIC
			used_dev[$netdev]=1
			((xml)) || continue
			if [[ $mode == rank ]]; then
				[[ $devno == 0 ]] ||
					fail "$name: channel $c rank $r: RINGWAY_PLACEMENT=rank, but net dev $devno"
				continue
			fi
			bus=${gpu_of[$r]}
			g=${f_gpu[$bus]:-}
			if [[ -z $g || -z ${f_pick[$bus]:-} ]]; then
				fail "$name: rank $r's GPU '$bus' is not one of $fixture's"
				continue
			fi
			if [[ $netdev != "${f_netdev[$nic]:-?}" ]]; then
				# a NIC this host lacks: dev 0, and the reason says so
				if [[ " ${mh_nics[*]} " != *" ${f_netdev[$nic]:-?} "* &&
					$devno == 0 && $netdev == "${mh_nics[0]}" &&
					$why == *"; no net device named ${f_netdev[$nic]:-?}, using dev 0" ]]; then
					fallbacks=$((fallbacks + 1))
				else
					fail "$name: channel $c rank $r: NIC $nic through net dev '$netdev', its netdev is ${f_netdev[$nic]:-unknown}"
				fi
			fi
			[[ $why == "${f_words[$bus]}"* ]] ||
				fail "$name: channel $c rank $r: reason '$why', ringway-topo says '${f_words[$bus]}'"
			if [[ $nic != "${f_pick[$bus]}" ]]; then
				[[ ${f_path[$g.$nic]:-} == "${f_path[$g.${f_pick[$bus]}]}" &&
					${f_kind[$nic]:-} == "${f_kind[${f_pick[$bus]}]}" && $why == *spread* ]] ||
					fail "$name: channel $c rank $r (GPU $g): NIC $nic (${f_path[$g.$nic]:-?}), ringway-topo names ${f_pick[$bus]} (${f_path[$g.${f_pick[$bus]}]}): $why"
			fi
			nics_of[$r]="${nics_of[$r]:-} $nic"
		done < <(grep -o "place: channel [0-9]* rank $r -> .*" "$dir/r$r.err")
		((seen == nch)) || fail "$name: rank $r logged $seen hop line(s), $nch channel(s)"
		# spread: as many NICs as channels, up to the equally near ones of the pick's kind
		if [[ -n ${nics_of[$r]:-} ]]; then
			bus=${gpu_of[$r]} g=${f_gpu[${gpu_of[$r]}]}
			local want=0 used list
			for nic in "${!f_netdev[@]}"; do
				[[ ${f_path[$g.$nic]:-} == "${f_path[$g.${f_pick[$bus]}]}" &&
					${f_kind[$nic]} == "${f_kind[${f_pick[$bus]}]}" ]] && want=$((want + 1))
			done
			read -r -a list <<<"${nics_of[$r]}"
			used=$(printf '%s\n' "${list[@]}" | sort -u | wc -l)
			((want > nch)) && want=$nch
			((used == want)) ||
				fail "$name: rank $r's channels use $used NIC(s) (${nics_of[$r]# }), $want are equally near"
		fi
	done
	# ringway-perf's rank 0 prints every rank's place: lines as they logged them
	if grep -q '^# ringway-perf' "$dir/r0.out"; then
		diff <(grep -h -o 'place: rank .*\|place: channel .*' "$dir"/r*.err | sort -u) \
			<(sed -n 's/^# \(place: rank .*\|place: channel .*\)/\1/p' "$dir/r0.out" | sort -u) \
			>"$dir/place.diff" ||
			fail "$name: ringway-perf's '# place:' lines differ from the ranks' (< logged, > printed):
$(head -n 10 "$dir/place.diff")"
	fi
	# the bytes went where the lines say: every NIC a hop between hosts
	# names moved data, the others next to nothing (neighbour discovery)
	local moved
	for nic in "${mh_nics[@]}"; do
		moved=$(awk -v d="$nic" '$2 == d { s += $3 } END { print s + 0 }' "$dir/bytes")
		if [[ -n ${used_dev[$nic]:-} ]]; then
			((moved >= 1 << 20)) || fail "$name: $nic carries hops between hosts but moved $moved bytes"
		else
			((moved < 64 << 10)) || fail "$name: no hop between hosts is on $nic, yet it moved $moved bytes"
		fi
	done
	local how="the hops between hosts on the NICs ringway-topo names"
	[[ $mode == rank ]] && how="placement off: rank order, net dev 0"
	((xml)) || how="NICs not checked (no fixtures)"
	((failures == before)) &&
		echo "multihost: $name: placement right: ring $ring0 over hosts ${host[*]}, $cross crossing(s), $nch channel(s), $how (bytes moved on ${!used_dev[*]})"
}

# placement is checked where the build has it (its parameter is
# registered); then its lines must be there, and the ring of ranks dealt
# round-robin must cross once per host too
placement=0
"$topo" --params | grep -q RINGWAY_PLACEMENT && placement=1
have_place() { ((placement)); }
# a build without hwloc cannot read the fixtures: the ranks then see the
# live machine (no GPU, the namespace's veths) and only the ring, the hosts
# and the transports are checked
xml=1
if ! "$topo" --xml "$fixtures/gpu4-nic2.xml" >/dev/null 2>&1; then
	xml=0
	echo "multihost: ringway-topo cannot read $fixtures/gpu4-nic2.xml (built without hwloc?):" \
		"no fixtures, NICs not checked"
fi

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
	have_place && check_place "2x2-$coll" 2 hgx8-2s-4sw.xml
done
# every datatype and reduction once, at a size not a multiple of anything
run 2x2-types 2 hgx8-2s-4sw.xml block -d all -o all -b 100003 -e 100003 -n 1 -w 0 -c 1
check_results 2x2-types "$(awk '/^ +[0-9]/ { n++ } END { print n + 0 }' "$work/2x2-types/r0.out")"
check_transports 2x2-types 1
[[ $(awk '/^ +[0-9]/ { n++ } END { print n + 0 }' "$work/2x2-types/r0.out") -ge 20 ]] ||
	fail "2x2-types: fewer than 20 datatype x reduction rows"
mh_teardown

# hosts lacking a NIC the fixture names (only ib0): those channels fall back
# to net dev 0 and say so
if have_place && ((xml)); then
	mh_setup "$base-$$-c" 2 "ib0" || { echo "multihost: setting up 2 hosts failed" >&2; exit 1; }
	run 2x2-missing-nic 2 hgx8-2s-4sw.xml block --coll allreduce -b 4M -e 4M "${iters[@]}"
	check_results 2x2-missing-nic 1
	check_transports 2x2-missing-nic 1
	check_ring 2x2-missing-nic 2
	check_place 2x2-missing-nic 2 hgx8-2s-4sw.xml
	((fallbacks > 0)) || fail "2x2-missing-nic: no hop fell back to net dev 0 for want of ib1"
	mh_teardown
fi

# 3 hosts, ranks dealt round-robin (rank r on host r % 3), another fixture
mh_setup "$base-$$-b" 3 "ib0 ib1" || { echo "multihost: setting up 3 hosts failed" >&2; exit 1; }
run 3x2-interleaved 3 gpu4-nic2.xml interleaved --coll allreduce "${sizes[@]}" "${iters[@]}"
check_results 3x2-interleaved "$nrows"
if have_place; then
	check_transports 3x2-interleaved 1
	check_ring 3x2-interleaved 3
	check_place 3x2-interleaved 3 gpu4-nic2.xml
	# placement off: the ring in rank order crosses at every hop
	rank_env+=(RINGWAY_PLACEMENT=rank)
	run 3x2-rankorder 3 gpu4-nic2.xml interleaved --coll allreduce "${sizes[@]}" "${iters[@]}"
	unset 'rank_env[-1]'
	check_results 3x2-rankorder "$nrows"
	check_transports 3x2-rankorder 0
	check_ring 3x2-rankorder 6
	check_place 3x2-rankorder 3 gpu4-nic2.xml rank
else
	check_transports 3x2-interleaved 0
fi
if [[ -n $collnet ]]; then
	# dealt round-robin too: the CollNet comm regroups its ring by host
	run 3x2-collnet 3 gpu4-nic2.xml interleaved collnet
	check_ranks 3x2-collnet
	check_transports 3x2-collnet 1
	[[ $(cat "$work"/3x2-collnet/r*.out | grep -c ' exact$') == 6 ]] ||
		fail "3x2-collnet: not every rank says its CollNet results are exact"
	if have_place; then
		check_ring 3x2-collnet 3
		check_place 3x2-collnet 3 gpu4-nic2.xml
	fi
else
	echo "multihost: CollNet not run (no plugin built)"
fi
mh_teardown

((placement)) || echo "multihost: no RINGWAY_PLACEMENT in this build: placement not checked"
if ((failures)); then
	echo "multihost: $failures failure(s); logs in $work" >&2
	exit 1
fi
echo "multihost: all runs exact, transports right (logs in $work)"
