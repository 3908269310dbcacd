#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# ringway's allreduce over TCP against Open MPI's MPI_Allreduce forced over
# TCP loopback (--mca btl tcp,self), measured in the same run on the same
# machine, float32 sum, at 2 and 4 local ranks; then ringway's ring against
# its parameter-server baseline (RINGWAY_ALGO=ps) at 4 ranks, 64 MiB.
#
# Both sides print the nccl-tests table (busbw = algbw x 2(n-1)/n, GB = 1e9,
# the slowest rank's average time).  With REPEAT > 1 every run is repeated,
# alternating the two sides, and each size keeps its best busbw per side.
#
#   bench/allreduce_compare.sh [build dir]
#   RANKS="2 4" MINB=16M MAXB=256M ITERS=10 WARMUP=3 REPEAT=1 bench/allreduce_compare.sh build
#
# Needs openmpi-bin and libopenmpi-dev (mpicc, mpirun): scripts/install-deps.sh bench.
set -euo pipefail

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
RANKS=${RANKS:-"2 4"}
MINB=${MINB:-16M}
MAXB=${MAXB:-256M}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-3}
REPEAT=${REPEAT:-1}
PS_RANKS=${PS_RANKS:-4}
PS_SIZE=${PS_SIZE:-64M}

perf=$build/tools/perf/ringway-perf
[[ -x $perf ]] || { echo "allreduce_compare: $perf is not built" >&2; exit 1; }
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
	{ echo "allreduce_compare: mpicc/mpirun missing (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }

out=$build/bench
mkdir -p "$out"
mpicc -O2 -o "$out/allreduce_mpi" "$here/allreduce_mpi.c"

as_root=()
[[ $(id -u) == 0 ]] && as_root=(--allow-run-as-root)
mpi=(mpirun "${as_root[@]}" --oversubscribe --bind-to none
     --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo)

# ringway over TCP on the loopback interface, like MPI.
export RINGWAY_TRANSPORT=socket RINGWAY_SOCKET_IFNAME=lo

# "size oop_busbw ip_busbw" from a table on stdin.
rows() { awk '/^ *[0-9]+ +[0-9]+ /{ print $1, $7, $11 }'; }

# Merge runs: the best busbw of each size, per placement.
best() { awk '{ if ($2 > o[$1]) o[$1] = $2; if ($3 > i[$1]) i[$1] = $3; s[$1] = 1 }
	      END { for (k in s) print k, o[k], i[k] }' | sort -n; }

ratio_table() { # $1 ringway rows, $2 mpi rows, $3 title
	echo
	echo "# $3"
	printf "# %12s  %14s  %14s  %7s  %14s  %14s  %7s\n" size "ringway oop" "MPI oop" ratio \
		"ringway inpl" "MPI inpl" ratio
	join <(sort -k1,1 "$1") <(sort -k1,1 "$2") | sort -n | awk '{
		r1 = $4 > 0 ? $2 / $4 : 0; r2 = $5 > 0 ? $3 / $5 : 0
		printf "  %12d  %14.3f  %14.3f  %6.2fx  %14.3f  %14.3f  %6.2fx\n", $1, $2, $4, r1, $3, $5, r2
	}'
}

for n in $RANKS; do
	: >"$out/rw_$n.rows"
	: >"$out/mpi_$n.rows"
	for ((rep = 1; rep <= REPEAT; rep++)); do
		echo "== [$rep/$REPEAT] RINGWAY_TRANSPORT=socket RINGWAY_SOCKET_IFNAME=lo $perf --local $n -b $MINB -e $MAXB -f 2 -n $ITERS -w $WARMUP -c 0"
		"$perf" --local "$n" -b "$MINB" -e "$MAXB" -f 2 -n "$ITERS" -w "$WARMUP" -c 0 |
			tee "$out/rw_$n.$rep.txt"
		rows <"$out/rw_$n.$rep.txt" >>"$out/rw_$n.rows"
		echo "== [$rep/$REPEAT] ${mpi[*]} -np $n $out/allreduce_mpi -b $MINB -e $MAXB -f 2 -n $ITERS -w $WARMUP"
		"${mpi[@]}" -np "$n" "$out/allreduce_mpi" -b "$MINB" -e "$MAXB" -f 2 -n "$ITERS" -w "$WARMUP" |
			tee "$out/mpi_$n.$rep.txt"
		rows <"$out/mpi_$n.$rep.txt" >>"$out/mpi_$n.rows"
	done
	best <"$out/rw_$n.rows" >"$out/rw_$n.best"
	best <"$out/mpi_$n.rows" >"$out/mpi_$n.best"
done

: >"$out/ring.rows"
: >"$out/ps.rows"
for ((rep = 1; rep <= REPEAT; rep++)); do
	for algo in ring ps; do
		echo "== [$rep/$REPEAT] $perf --local $PS_RANKS -a $algo -b $PS_SIZE -e $PS_SIZE -n $ITERS -w $WARMUP -c 0"
		"$perf" --local "$PS_RANKS" -a "$algo" -b "$PS_SIZE" -e "$PS_SIZE" -n "$ITERS" -w "$WARMUP" -c 0 |
			tee "$out/$algo.$rep.txt"
		rows <"$out/$algo.$rep.txt" >>"$out/$algo.rows"
	done
done
best <"$out/ring.rows" >"$out/ring.best"
best <"$out/ps.rows" >"$out/ps.best"

echo
echo "#### busbw in GB/s, best of $REPEAT; $(nproc) CPU(s), $(uname -r)"
for n in $RANKS; do
	ratio_table "$out/rw_$n.best" "$out/mpi_$n.best" \
		"$n ranks: ringway (socket, lo) vs MPI_Allreduce (btl tcp,self, lo)"
done
echo
echo "# $PS_RANKS ranks, $PS_SIZE: ring vs ps (both ringway, socket over lo)"
join "$out/ring.best" "$out/ps.best" | awk '{
	r1 = $4 > 0 ? $2 / $4 : 0; r2 = $5 > 0 ? $3 / $5 : 0
	printf "  %12d  ring %8.3f / %8.3f   ps %8.3f / %8.3f   ring/ps %5.2fx / %5.2fx (oop / in place)\n",
		$1, $2, $3, $4, $5, r1, r2 }'
