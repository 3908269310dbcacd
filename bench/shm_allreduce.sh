#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Allreduce at 2 ranks on one host, float32 sum: ringway (ringway-perf
# --local, the ring over the same-host transport: RINGWAY_TRANSPORT=auto
# picks shm for local peers) against Open MPI's MPI_Allreduce with its
# default MCA choices, i.e. its own shared-memory path (bench/allreduce_mpi.c),
# in the same run, alternating the two sides REPEAT times.  Both print the
# nccl-tests table (busbw = algbw x 2(n-1)/n, GB = 1e9); the summary keeps
# each side's best busbw per size.
#
#   bench/shm_allreduce.sh [build dir]    NRANKS=2 MINB=64M MAXB=64M ITERS=20 WARMUP=5 REPEAT=3
#
# Needs openmpi-bin and libopenmpi-dev (mpicc, mpirun).
set -euo pipefail

build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
NRANKS=${NRANKS:-2}
MINB=${MINB:-64M}
MAXB=${MAXB:-64M}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
REPEAT=${REPEAT:-3}

perf=$build/tools/perf/ringway-perf
[[ -x $perf ]] || { echo "shm_allreduce: $perf is not built" >&2; exit 1; }
command -v mpicc >/dev/null && command -v mpirun >/dev/null ||
	{ echo "shm_allreduce: mpicc/mpirun missing (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
out=$build/bench
mkdir -p "$out"
mpicc -O2 -o "$out/allreduce_mpi" "$here/allreduce_mpi.c"
as_root=()
[[ $(id -u) == 0 ]] && as_root=(--allow-run-as-root)
mpi=(mpirun "${as_root[@]}" --oversubscribe --bind-to none -np "$NRANKS")

rows() { awk '/^ *[0-9]+ +[0-9]+ /{ print $1, $7, $11 }'; }
best() { awk '{ if ($2 > o[$1]) o[$1] = $2; if ($3 > i[$1]) i[$1] = $3; s[$1] = 1 }
	      END { for (k in s) print k, o[k], i[k] }' | sort -n; }

: >"$out/shm_ar_rw.rows"
: >"$out/shm_ar_mpi.rows"
for ((rep = 1; rep <= REPEAT; rep++)); do
	echo "== [$rep/$REPEAT] RINGWAY_TRANSPORT=auto $perf --local $NRANKS -b $MINB -e $MAXB -n $ITERS -w $WARMUP -c 0"
	RINGWAY_TRANSPORT=auto "$perf" --local "$NRANKS" -b "$MINB" -e "$MAXB" -n "$ITERS" -w "$WARMUP" -c 0 |
		tee "$out/shm_ar_rw.$rep.txt"
	rows <"$out/shm_ar_rw.$rep.txt" >>"$out/shm_ar_rw.rows"
	echo "== [$rep/$REPEAT] ${mpi[*]} $out/allreduce_mpi -b $MINB -e $MAXB -n $ITERS -w $WARMUP"
	"${mpi[@]}" "$out/allreduce_mpi" -b "$MINB" -e "$MAXB" -n "$ITERS" -w "$WARMUP" |
		tee "$out/shm_ar_mpi.$rep.txt"
	rows <"$out/shm_ar_mpi.$rep.txt" >>"$out/shm_ar_mpi.rows"
done
best <"$out/shm_ar_rw.rows" >"$out/shm_ar_rw.best"
best <"$out/shm_ar_mpi.rows" >"$out/shm_ar_mpi.best"

echo
echo "#### busbw in GB/s, best of $REPEAT; $NRANKS ranks; $(nproc) CPU(s), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "# %12s  %14s  %14s  %7s  %14s  %14s  %7s\n" size "ringway oop" "MPI oop" ratio \
	"ringway inpl" "MPI inpl" ratio
join <(sort -k1,1 "$out/shm_ar_rw.best") <(sort -k1,1 "$out/shm_ar_mpi.best") | sort -n | awk '{
	r1 = $4 > 0 ? $2 / $4 : 0; r2 = $5 > 0 ? $3 / $5 : 0
	printf "  %12d  %14.3f  %14.3f  %6.2fx  %14.3f  %14.3f  %6.2fx\n", $1, $2, $4, r1, $3, $5, r2
}'
