#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ringway's allreduce against Open MPI's MPI_Allreduce and Gloo's
# AllreduceRingChunked, measured in the same run on the same machine, float32
# sum, at every size of SIZES and every rank count of RANKS, over each
# transport of TRANSPORTS:
#
#   shm  ringway RINGWAY_TRANSPORT=shm       vs  Open MPI --mca btl self,vader
#   tcp  ringway RINGWAY_TRANSPORT=socket    vs  Open MPI --mca btl tcp,self
#        RINGWAY_SOCKET_IFNAME=lo                 --mca btl_tcp_if_include lo
#
# Gloo has only its TCP device (on 127.0.0.1); it is measured once per rank
# count and size, and its column is the same in both tables.  Every size is
# its own launch of each program; within a repetition the three alternate
# (ringway, MPI, Gloo, next size), and the table shows each one's median over
# REPEAT repetitions of the time per call in µs (out of place for ringway and
# MPI, in place for Gloo, the slowest rank's average), the ratios MPI/ringway
# and Gloo/ringway (> 1: ringway is faster) and ringway's busbw in GB/s
# (algbw x 2(n-1)/n, GB = 1e9).  Iterations per size: 64 MiB / size, between
# 5 and ITERS_MAX (or ITERS for all sizes); warm-up a tenth of that, at least 2.
# A run that fails or outlasts TIMEOUT seconds is logged and leaves a "-".
#
#   bench/allreduce_compare.sh [build dir]
#   SIZES="8 64K 2M" RANKS=2 TRANSPORTS=shm REPEAT=1 bench/allreduce_compare.sh build
#   GLOO=0 TRANSPORTS=tcp SIZES="16M 32M 64M 128M 256M" ITERS=10 bench/allreduce_compare.sh build
#       (the earlier TCP-only comparison; PS_RANKS="" skips ring vs ps at the end)
#
# Needs openmpi-bin, libopenmpi-dev, libgloo-dev and g++: scripts/install-deps.sh bench.
set -euo pipefail

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
SIZES=${SIZES:-"8 64 512 4K 32K 64K 256K 1M 2M 4M 8M 16M 64M 256M"}
RANKS=${RANKS:-"2 4"}
TRANSPORTS=${TRANSPORTS:-"shm tcp"}
REPEAT=${REPEAT:-3}
ITERS=${ITERS:-}
ITERS_MAX=${ITERS_MAX:-1000}
GLOO=${GLOO:-1}
TIMEOUT=${TIMEOUT:-600}
PS_RANKS=${PS_RANKS-4}
PS_SIZE=${PS_SIZE:-64M}

perf=$build/tools/perf/ringway-perf
[[ -x $perf ]] || { echo "allreduce_compare: $perf is not built" >&2; exit 1; }
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	echo "allreduce_compare: mpicc/mpirun missing (apt-get install openmpi-bin libopenmpi-dev)" >&2
	exit 1
fi

out=$build/bench
mkdir -p "$out"
mpicc -O2 -o "$out/allreduce_mpi" "$here/allreduce_mpi.c"
if [[ $GLOO == 1 ]]; then
	if [[ ! -e /usr/include/gloo/allreduce_ring_chunked.h ]] || ! command -v g++ >/dev/null; then
		echo "allreduce_compare: gloo headers or g++ missing (apt-get install libgloo-dev g++), or GLOO=0" >&2
		exit 1
	fi
	g++ -O2 -std=c++17 -o "$out/allreduce_gloo" "$here/allreduce_gloo.cc" -lgloo -lpthread
fi

as_root=()
[[ $(id -u) == 0 ]] && as_root=(--allow-run-as-root)
mpirun=(mpirun "${as_root[@]}" --oversubscribe --bind-to none --mca pml ob1)

# Bytes of a size with an optional K/M/G suffix.
bytes() {
	local s=$1 m=1
	case $s in
	*[kK]) m=1024 s=${s%?} ;;
	*[mM]) m=$((1 << 20)) s=${s%?} ;;
	*[gG]) m=$((1 << 30)) s=${s%?} ;;
	esac
	echo $((s * m))
}

# Timed iterations for a size in bytes.
iters_for() {
	[[ -n $ITERS ]] && { echo "$ITERS"; return; }
	local n=$(((64 << 20) / ($1 > 0 ? $1 : 1)))
	((n > ITERS_MAX)) && n=$ITERS_MAX
	((n < 5)) && n=5
	echo "$n"
}
warmup_for() { local w=$(($1 / 10)); echo $((w < 2 ? 2 : w)); }

# "bytes us" of the out-of-place time from an nccl-tests table on stdin.
rows() { awk '/^ *[0-9]+ +[0-9]+ /{ print $1, $5 }'; }

# Run a command (logged with its output in $out/compare.log) and leave its
# stdout in $out/last.txt; a failed run is reported and leaves no figure.
measure() {
	local rc=0
	{
		echo "== $*"
		timeout "$TIMEOUT" "$@" >"$out/last.txt" || rc=$?
		cat "$out/last.txt"
	} >>"$out/compare.log" 2>&1
	if ((rc != 0)); then
		echo "allreduce_compare: exit $rc: $*" | tee -a "$out/compare.log" >&2
		: >"$out/last.txt"
	fi
}

# One measurement, appended to $out/<side>_<...>.times as "bytes us".
run_rw() { # transport ranks bytes
	local env=(RINGWAY_TRANSPORT=shm) it
	[[ $1 == tcp ]] && env=(RINGWAY_TRANSPORT=socket RINGWAY_SOCKET_IFNAME=lo)
	it=$(iters_for "$3")
	measure env "${env[@]}" "$perf" --local "$2" -b "$3" -e "$3" -n "$it" -w "$(warmup_for "$it")" -c 0
	rows <"$out/last.txt" >>"$out/rw_$1_$2.times"
}
run_mpi() { # transport ranks bytes
	local mca=(--mca btl "self,vader") it
	[[ $1 == tcp ]] && mca=(--mca btl "tcp,self" --mca btl_tcp_if_include lo)
	it=$(iters_for "$3")
	measure "${mpirun[@]}" "${mca[@]}" -np "$2" "$out/allreduce_mpi" -b "$3" -e "$3" -n "$it" \
		-w "$(warmup_for "$it")"
	rows <"$out/last.txt" >>"$out/mpi_$1_$2.times"
}
run_gloo() { # ranks bytes
	local it
	it=$(iters_for "$2")
	measure "$out/allreduce_gloo" -n "$1" -i "$it" -w "$(warmup_for "$it")" "$2"
	awk '$1 == "gloo" { print $3, $4 }' "$out/last.txt" >>"$out/gloo_$1.times"
}

# "bytes median" per size from "bytes us" lines.
median() {
	sort -k1,1n -k2,2g "$1" | awk '
		function flush() { if (n) print k, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }
		$1 != k { flush(); k = $1; n = 0 }
		{ v[++n] = $2 }
		END { flush() }'
}

size_list=()
for s in $SIZES; do size_list+=("$(bytes "$s")"); done
: >"$out/compare.log"
for n in $RANKS; do
	for t in $TRANSPORTS; do
		: >"$out/rw_${t}_$n.times"
		: >"$out/mpi_${t}_$n.times"
	done
	: >"$out/gloo_$n.times"
done

echo "allreduce_compare: sizes ${SIZES}; ranks ${RANKS}; transports ${TRANSPORTS}; repeat $REPEAT; log $out/compare.log"
for ((rep = 1; rep <= REPEAT; rep++)); do
	for n in $RANKS; do
		for b in "${size_list[@]}"; do
			echo "[$rep/$REPEAT] $n ranks, $b B"
			for t in $TRANSPORTS; do
				run_rw "$t" "$n" "$b"
				run_mpi "$t" "$n" "$b"
			done
			[[ $GLOO == 1 ]] && run_gloo "$n" "$b"
		done
	done
done

echo
echo "#### allreduce, float32 sum, time per call in µs (median of $REPEAT); ratio = other / ringway (> 1: ringway faster)"
echo "#### $(nproc) CPU(s), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
for t in $TRANSPORTS; do
	for n in $RANKS; do
		if [[ $t == shm ]]; then
			title="shm: ringway RINGWAY_TRANSPORT=shm vs Open MPI btl self,vader"
		else
			title="TCP: ringway socket on lo vs Open MPI btl tcp,self on lo"
		fi
		echo
		echo "### $n ranks, $title; Gloo AllreduceRingChunked over its tcp device on 127.0.0.1"
		echo
		echo "| size | ringway | Open MPI | ratio (MPI/ringway) | Gloo | ratio (Gloo/ringway) | ringway busbw (GB/s) |"
		echo "|---|---|---|---|---|---|---|"
		median "$out/rw_${t}_$n.times" >"$out/rw_${t}_$n.med"
		median "$out/mpi_${t}_$n.times" >"$out/mpi_${t}_$n.med"
		median "$out/gloo_$n.times" >"$out/gloo_$n.med"
		awk -v n="$n" -v sizes="${size_list[*]}" '
			FILENAME ~ /\/rw_/ { rw[$1] = $2 }
			FILENAME ~ /\/mpi_/ { mpi[$1] = $2 }
			FILENAME ~ /\/gloo_/ { gl[$1] = $2 }
			function sz(b) {
				if (b >= 1048576 && b % 1048576 == 0) return b / 1048576 " MiB"
				if (b >= 1024 && b % 1024 == 0) return b / 1024 " KiB"
				return b " B"
			}
			function us(v) { return v == "" ? "-" : (v < 100 ? sprintf("%.1f", v) : sprintf("%.0f", v)) }
			function ratio(o, r) { return (o == "" || r == "" || r <= 0) ? "-" : sprintf("%.2f", o / r) }
			END {
				k = split(sizes, order, " ")
				for (i = 1; i <= k; i++) {
					b = order[i]; r = rw[b]
					bus = r > 0 ? b / (r * 1e-6) / 1e9 * 2 * (n - 1) / n : 0
					printf "| %s | %s | %s | %s | %s | %s | %.2f |\n", sz(b), us(r), us(mpi[b]),
						ratio(mpi[b], r), us(gl[b]), ratio(gl[b], r), bus
				}
			}' "$out/rw_${t}_$n.med" "$out/mpi_${t}_$n.med" "$out/gloo_$n.med"
	done
done

[[ -n $PS_RANKS ]] || exit 0
# ringway's ring against its parameter-server baseline (both socket over lo).
: >"$out/ring.times"
: >"$out/ps.times"
psb=$(bytes "$PS_SIZE")
it=$(iters_for "$psb")
for ((rep = 1; rep <= REPEAT; rep++)); do
	for algo in ring ps; do
		measure env RINGWAY_TRANSPORT=socket RINGWAY_SOCKET_IFNAME=lo "$perf" --local "$PS_RANKS" \
			-a "$algo" -b "$psb" -e "$psb" -n "$it" -w "$(warmup_for "$it")" -c 0
		rows <"$out/last.txt" >>"$out/$algo.times"
	done
done
echo
echo "### $PS_RANKS ranks, $PS_SIZE, socket on lo: ring vs ps (ringway both), µs per call, median of $REPEAT"
join <(median "$out/ring.times") <(median "$out/ps.times") |
	awk '{ r = $2 > 0 ? $3 / $2 : 0; printf "  ring %.0f   ps %.0f   ps/ring %.2f\n", $2, $3, r }'
