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
# Then, per rank count, the issue's table (shm and TCP side by side, ratio =
# MPI time / ringway time), the busbw-cliff check (from 64 KiB to 16 MiB,
# ringway's busbw at each size against the size before it in SIZES: a drop
# below 80% is a cliff) and a summary of issue 16's targets, each "met" or
# "NOT met" with the cells that miss it (a target with no figure is "not
# measured").  Figures are printed, never asserted: the exit code says only
# whether the runs ran.
#
# With FLOOR=1 (the default) every size from FLOOR_MIN (64K) up is also
# measured with bench/ring_floor.c, in the same alternation: the time this
# host takes to move the bytes any allreduce of that size must move (2(P-1)/P
# of the buffer into each rank), with nothing else done, through memory (one
# memcpy per byte, shm) and through the kernel's TCP on loopback (the best of
# 1, 2 and 4 threads of 1 or 4 connections).  Its table says how far above
# that floor each ringway figure is; the cliff check also checks the floors,
# and a Gloo target that misses says whether 1.5x Gloo lies below the TCP
# floor.
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
SIZES=${SIZES:-"8 64 512 4K 32K 64K 128K 256K 512K 1M 2M 4M 8M 16M 64M 256M"}
RANKS=${RANKS:-"2 4"}
TRANSPORTS=${TRANSPORTS:-"shm tcp"}
REPEAT=${REPEAT:-3}
ITERS=${ITERS:-}
ITERS_MAX=${ITERS_MAX:-1000}
GLOO=${GLOO:-1}
FLOOR=${FLOOR:-1}
FLOOR_MIN=${FLOOR_MIN:-64K}
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

if [[ $FLOOR == 1 ]]; then
	cc -O2 -std=c11 -Wall -pthread -o "$out/ring_floor" "$here/ring_floor.c"
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

run_floor() { # transport ranks bytes
	local how=(-t mem) it
	[[ $1 == tcp ]] && how=(-t tcp -s 1,2,4 -c 1,4)
	it=$(iters_for "$3")
	measure "$out/ring_floor" "${how[@]}" -p "$2" -n "$it" -w "$(warmup_for "$it")" "$3"
	awk '$1 == "floor" { print $2, $3 }' "$out/last.txt" >>"$out/floor_$1_$2.times"
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
floor_min=$(bytes "$FLOOR_MIN")
: >"$out/compare.log"
for n in $RANKS; do
	for t in $TRANSPORTS; do
		: >"$out/rw_${t}_$n.times"
		: >"$out/mpi_${t}_$n.times"
		: >"$out/floor_${t}_$n.times"
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
				if [[ $FLOOR == 1 ]] && ((b >= floor_min)); then
					run_floor "$t" "$n" "$b"
				fi
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

# --- issue 16's table, the cliff check and the targets ------------------------

# "bytes us" medians of side ($1: rw|mpi) transport ($2) ranks ($3), or nothing.
med_of() { if [[ -s $out/$1_$2_$3.med ]]; then cat "$out/$1_$2_$3.med"; fi; }

# All medians as "key bytes us" lines for one awk: rw_shm_2 123 4.5 ...
all_meds() {
	local n t
	for n in $RANKS; do
		for t in $TRANSPORTS; do
			med_of rw "$t" "$n" | sed "s/^/rw_${t}_$n /"
			med_of mpi "$t" "$n" | sed "s/^/mpi_${t}_$n /"
			if [[ -s $out/floor_${t}_$n.times ]]; then
				median "$out/floor_${t}_$n.times" | sed "s/^/floor_${t}_$n /"
			fi
		done
		if [[ -s $out/gloo_$n.med ]]; then sed "s/^/gloo_$n /" "$out/gloo_$n.med"; fi
	done
}

all_meds | awk -v sizes="${size_list[*]}" -v ranks="$RANKS" -v transports="$TRANSPORTS" -v ncpu="$(nproc)" '
	{ v[$1, $2] = $3 }
	function sz(b) {
		if (b >= 1048576 && b % 1048576 == 0) return b / 1048576 " MiB"
		if (b >= 1024 && b % 1024 == 0) return b / 1024 " KiB"
		return b " B"
	}
	function us(x) { return x == "" ? "-" : (x < 100 ? sprintf("%.1f", x) : sprintf("%.0f", x)) }
	function ratio(o, r) { return (o == "" || r == "" || r <= 0) ? "-" : sprintf("%.2f", o / r) }
	function bus(b, t, n) { return t > 0 ? b / (t * 1e-6) / 1e9 * 2 * (n - 1) / n : 0 }
	function has(t) { return index(" " transports " ", " " t " ") > 0 }
	# targets: name -> "met"/"NOT met", with the cells that miss
	function miss(k, what) { bad[k] = bad[k] (bad[k] == "" ? "" : "; ") what; seen[k] = 1 }
	function ok(k) { seen[k] = 1 }
	END {
		k = split(sizes, order, " ")
		nr = split(ranks, rk, " ")
		for (j = 1; j <= nr; j++) {
			n = rk[j]
			printf "\n### issue 16 table: %d ranks, time per call in µs (median), ratio = other / ringway (> 1: ringway faster)\n\n", n
			print "| size | shm: ringway | shm: Open MPI (vader) | ratio | TCP: ringway | TCP: Open MPI (btl tcp) | ratio | Gloo (tcp) | Gloo/ringway shm | Gloo/ringway TCP |"
			print "|---|---|---|---|---|---|---|---|---|---|"
			for (i = 1; i <= k; i++) {
				b = order[i]
				rs = v["rw_shm_" n, b]; ms = v["mpi_shm_" n, b]
				rt = v["rw_tcp_" n, b]; mt = v["mpi_tcp_" n, b]; g = v["gloo_" n, b]
				printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sz(b), us(rs), us(ms),
					ratio(ms, rs), us(rt), us(mt), ratio(mt, rt), us(g), ratio(g, rs), ratio(g, rt)
			}
		}
		# the floor: ringway against the least time moving its bytes takes
		for (j = 1; j <= nr; j++) {
			n = rk[j]
			any = 0
			for (i = 1; i <= k; i++)
				if (v["floor_shm_" n, order[i]] != "" || v["floor_tcp_" n, order[i]] != "") any = 1
			if (!any) continue
			printf "\n### the floor: %d ranks, the least time moving an allreduce'"'"'s bytes takes (bench/ring_floor.c), µs; x floor = ringway / floor\n\n", n
			print "| size | shm floor (memcpy) | shm: ringway | x floor | floor busbw (GB/s) | TCP floor (loopback) | TCP: ringway | x floor | floor busbw (GB/s) |"
			print "|---|---|---|---|---|---|---|---|---|"
			for (i = 1; i <= k; i++) {
				b = order[i]
				fs = v["floor_shm_" n, b]; ft = v["floor_tcp_" n, b]
				if (fs == "" && ft == "") continue
				rs = v["rw_shm_" n, b]; rt = v["rw_tcp_" n, b]
				printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sz(b), us(fs), us(rs), ratio(rs, fs),
					fs == "" ? "-" : sprintf("%.2f", bus(b, fs, n)), us(ft), us(rt), ratio(rt, ft),
					ft == "" ? "-" : sprintf("%.2f", bus(b, ft, n))
			}
			if (n > ncpu)
				printf "\n%d ranks on %d CPUs: the floor'"'"'s ranks share the cores too, and one waiting for its predecessor yields, so the scheduler weighs on it as on ringway (which may come out below it).\n", n, ncpu
		}
		# the busbw cliff: 64 KiB .. 16 MiB, each size against the one before;
		# the floors are checked the same way, for comparison (not a target)
		print "\n### busbw cliff check (ringway, 64 KiB to 16 MiB): busbw at a size >= 80% of the size before\n"
		for (j = 1; j <= nr; j++) {
			n = rk[j]
			for (tt = 1; tt <= 2; tt++) {
				t = tt == 1 ? "shm" : "tcp"
				if (!has(t)) continue
				for (side = 1; side <= 2; side++) {
					who = side == 1 ? "rw" : "floor"
					line = ""; prev = 0; pb = 0; cliff = 0
					for (i = 1; i <= k; i++) {
						b = order[i]
						if (b < 65536 || b > 16777216) continue
						r = v[who "_" t "_" n, b]
						if (r == "") continue
						bw = bus(b, r, n)
						mark = ""
						if (prev > 0 && bw < 0.8 * prev) {
							mark = sprintf(" CLIFF (%.0f%% of %s)", 100 * bw / prev, sz(pb))
							cliff = 1
							if (who == "rw")
								miss("cliff", sprintf("%s %d ranks %s %.2f GB/s = %.0f%% of %s", t, n, sz(b), bw, 100 * bw / prev, sz(pb)))
						}
						line = line sprintf("  %s %.2f%s", sz(b), bw, mark)
						prev = bw; pb = b
					}
					if (line == "") continue
					if (who == "rw" && !cliff) ok("cliff")
					printf "%-9s %d ranks:%s  -> %s\n", (who == "rw" ? "" : "floor ") t, n, line, cliff ? "cliff" : "no cliff"
				}
			}
		}
		# the targets
		for (j = 1; j <= nr; j++) {
			n = rk[j]
			for (tt = 1; tt <= 2; tt++) {
				t = tt == 1 ? "shm" : "tcp"
				for (i = 1; i <= k; i++) {
					b = order[i]; r = v["rw_" t "_" n, b]; m = v["mpi_" t "_" n, b]
					g = v["gloo_" n, b]
					if (r == "" || r <= 0) continue
					if (g != "") {
						if (g / r >= 1.5) ok("gloo")
						else {
							f = v["floor_tcp_" n, b]
							miss("gloo", sprintf("%s %d ranks %s %.2fx%s", t, n, sz(b), g / r,
								f == "" ? "" : sprintf(" (1.5x Gloo: %s us; the TCP floor: %s us)", us(g / 1.5), us(f))))
						}
					}
					if (m == "") continue
					q = m / r
					if (n == 2 && t == "shm") {
						if (b == 8) { if (r <= 2 * m) ok("shm2_8"); else miss("shm2_8", sprintf("8 B %s us vs MPI %s us (%.1fx its time)", us(r), us(m), r / m)) }
						if (b >= 4096) { if (q >= 1.0) ok("shm2"); else miss("shm2", sprintf("%s %.2f", sz(b), q)) }
					}
					if (n == 2 && t == "tcp") {
						if (b == 8) { if (r <= 1.5 * m) ok("tcp2_8"); else miss("tcp2_8", sprintf("8 B %s us vs MPI %s us (%.1fx its time)", us(r), us(m), r / m)) }
						if (b >= 65536) { if (q >= 1.2) ok("tcp2"); else miss("tcp2", sprintf("%s %.2f", sz(b), q)) }
					}
					if (n == 4 && b >= 65536) {
						if (q >= 1.0) ok("four_" t); else miss("four_" t, sprintf("%s %.2f", sz(b), q))
					}
				}
			}
		}
		print "\n### issue 16 targets\n"
		nt = split("shm2 shm2_8 tcp2 tcp2_8 four_shm four_tcp cliff gloo", names, " ")
		desc["shm2"] = "2 ranks shm: ratio >= 1.0 from 4 KiB to 256 MiB"
		desc["shm2_8"] = "2 ranks shm: 8 B within 2x Open MPI time"
		desc["tcp2"] = "2 ranks TCP: ratio >= 1.2 from 64 KiB up"
		desc["tcp2_8"] = "2 ranks TCP: 8 B within 1.5x Open MPI time"
		desc["four_shm"] = "4 ranks shm: ratio >= 1.0 from 64 KiB up"
		desc["four_tcp"] = "4 ranks TCP: ratio >= 1.0 from 64 KiB up"
		desc["cliff"] = "no busbw cliff from 64 KiB to 16 MiB (>= 80% of the size before)"
		desc["gloo"] = "at least 1.5x Gloo at every size, both transports"
		for (i = 1; i <= nt; i++) {
			x = names[i]
			st = !seen[x] ? "not measured" : bad[x] == "" ? "met" : "NOT met"
			printf "- %s: %s%s\n", st, desc[x], bad[x] == "" ? "" : "; misses: " bad[x]
		}
	}'

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
