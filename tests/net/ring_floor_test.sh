#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# bench/ring_floor.c end to end: every layout asked for is measured and the
# "floor" line is the best of them, over tcp and through memory, at rank
# counts and sizes that do not divide evenly; bad arguments exit 2 naming
# what was wrong; a rank killed mid-run ends the run at once, failed.
#
#   ring_floor_test.sh path/to/ring_floor
set -euo pipefail
floor=$1
fail() { echo "ring_floor_test: $*" >&2; exit 1; }

# Runs ring_floor and checks: $want layout lines, each with a time > 0, and
# a last line "floor <bytes> <the least of them>".
check() { # want bytes args...
	local want=$1 bytes=$2 out
	shift 2
	out=$("$floor" "$@") || fail "exit $? from: $*"
	awk -v want="$want" -v bytes="$bytes" '
		/^ring_floor / { n++; t = $(NF - 1) + 0; if (t <= 0) bad = bad " no time in: " $0
				 if (!n1 || t < best) best = t; n1 = 1 }
		/^floor / { f = 1; if ($2 != bytes) bad = bad " floor for " $2 " bytes"
			    if ($3 + 0 != best) bad = bad sprintf(" floor %s is not the least (%s)", $3, best) }
		END { if (n != want) bad = bad sprintf(" %d layout lines, not %d", n, want)
		      if (!f) bad = bad " no floor line"
		      if (bad != "") { print bad; exit 1 } }' <<<"$out" || fail "$* printed:"$'\n'"$out"
}

check 4 262144 -t tcp -p 2 -s 1,2 -c 1,2 -n 3 -w 1 256K
check 1 1000003 -t tcp -p 3 -n 2 -w 1 1000003
check 1 1048576 -t mem -p 3 -n 5 1M
check 1 8 -t mem -p 4 -n 5 8

# refused, exit 2, the reason named
refuse() { # what-it-says args...
	local want=$1 rc=0 err
	shift
	err=$("$floor" "$@" 2>&1 >/dev/null) || rc=$?
	((rc == 2)) || fail "exit $rc, not 2, from: $*"
	grep -q -- "$want" <<<"$err" || fail "'$*' said '$err', not '$want'"
}
refuse "-t takes tcp or mem" -t udp 1M
refuse "-p takes 2 to 64 ranks" -t tcp -p 1 1M
refuse "-s takes thread counts" -t tcp -s 2,9 1M
refuse "-c takes connection counts" -t tcp -c 0 1M
refuse "mem copies on one thread" -t mem -s 2 1M
refuse "one size in bytes" -t tcp
refuse "one size in bytes" -t tcp 12Q
refuse "one size in bytes" -t tcp 4Kfoo
refuse "one size in bytes" -t mem 2T
refuse "-n takes" -t tcp -n 5x 1M
refuse "-s takes thread counts" -t tcp -s 1x 1M

# A rank killed mid-run ends the run, failed, at once: the others neither
# hang nor report a floor.
for how in mem tcp; do
	timeout 30 "$floor" -t $how -p 3 -n 100000000 -w 0 64K >"${TMPDIR:-/tmp}/ring_floor_test.$$" 2>&1 &
	pid=$!
	victim=
	for ((i = 0; i < 100; i++)); do
		sleep 0.05
		parent=$(pgrep -P $pid || true)
		[[ -z $parent ]] || victim=$(pgrep -P "$parent" | sed -n 2p || true)
		[[ -z $victim ]] || break
	done
	[[ -n $victim ]] || fail "$how: no rank of pid $pid to kill"
	kill -9 "$victim"
	start=$SECONDS
	rc=0
	wait $pid || rc=$?
	out=$(cat "${TMPDIR:-/tmp}/ring_floor_test.$$")
	rm -f "${TMPDIR:-/tmp}/ring_floor_test.$$"
	((rc == 1)) || fail "$how: exit $rc after a rank was killed, not 1: $out"
	((SECONDS - start <= 10)) || fail "$how: $((SECONDS - start)) s to end after a rank was killed"
	grep -q "killed by signal 9" <<<"$out" || fail "$how: the kill was not reported: $out"
	! grep -q "^floor " <<<"$out" || fail "$how: a floor was printed after a rank died: $out"
done
echo "ring_floor_test: ok"
