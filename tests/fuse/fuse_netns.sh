#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# NIC fusion over two socket interfaces: two "hosts" (network namespaces,
# tests/multihost/hosts.sh), each with NICs fa0 and fa1 on their own rails,
# ringway-netperf between them through the plugin's v11 table with
# --fuse 0,1 (makeVDevice, then every transfer on the virtual device).
#   1. every byte right at sizes 1 B .. 16 MiB, both NICs moved > 8 MiB each;
#   2. makeVDevice refusing bad input through the plugin's table, naming
#      the value (a device twice, out of range);
#   3. fa1 taken down mid-transfer: both ranks fail within the wait bound
#      (RINGWAY_TIMEOUT_MS=3000 here), one of them naming fa1.
# Root only: elsewhere it says why and exits 77 (a CTest skip).
#
#   fuse_netns.sh NETPERF PLUGIN WORKDIR
set -uo pipefail

netperf=$1 plugin=$2 work=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/multihost/hosts.sh
source "$here/../multihost/hosts.sh"
why=$(mh_unusable)
if [[ -n $why ]]; then
	echo "fuse_netns: skipped: $why"
	exit 77
fi
rm -rf "$work" && mkdir -p "$work"
trap 'rc=$?; mh_teardown; exit $rc' EXIT
mh_reap_stale rwfu
mh_setup "rwfu-$$" 2 "fa0 fa1" || { echo "fuse_netns: namespaces failed"; exit 1; }
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# rank RUN HOST ROLE ARGS...: one rank in the background, output in WORK/RUN.HOST.*
rank() {
	local run=$1 h=$2
	shift 2
	mh_exec "$h" "host$h" env RINGWAY_TRANSPORT=socket RINGWAY_SOCKET_IFNAME==fa0,fa1 \
		RINGWAY_SOCKET_FAMILY=ipv4 RINGWAY_TIMEOUT_MS=3000 \
		"$netperf" --plugin "$plugin" --fuse 0,1 --no-baseline -p "$port" "$@" \
		>"$work/$run.h$h.out" 2>"$work/$run.h$h.err" &
}

# 1. data
port=29700
b0=$(mh_bytes 0 fa0) b1=$(mh_bytes 0 fa1)
rank data 0 --server -b 1 -e 16M -f 4 -n 20 -w 2
s=$!
rank data 1 --client "$(mh_addr 0 0)" -b 1 -e 16M -f 4 -n 20 -w 2
c=$!
wait $s || bad "data: the server failed: $(tail -n 3 "$work/data.h0.err")"
wait $c || bad "data: the client failed: $(tail -n 3 "$work/data.h1.err")"
cat "$work/data.h0.out"
grep -q "Out of bounds values : 0 OK" "$work/data.h0.out" || bad "data: wrong bytes"
grep -q "fa0+fa1" "$work/data.h0.out" || bad "data: not on the fused device fa0+fa1"
d0=$(($(mh_bytes 0 fa0) - b0)) d1=$(($(mh_bytes 0 fa1) - b1))
echo "# bytes through host 0's NICs: fa0 $d0, fa1 $d1"
((d0 > 8 << 20)) || bad "data: fa0 moved only $d0 bytes"
((d1 > 8 << 20)) || bad "data: fa1 moved only $d1 bytes"

# 2. bad makeVDevice input through the plugin: an error (NCCL then does not
#    fuse) and a WARN naming the value
for bad in "0,0:device 0 is listed twice" "0,7:device 7 is out of range"; do
	if mh_exec 0 host0 env RINGWAY_TRANSPORT=socket RINGWAY_SOCKET_IFNAME==fa0,fa1 \
		"$netperf" --plugin "$plugin" --local --no-baseline --fuse "${bad%%:*}" -b 8 -e 8 \
		>"$work/bad.out" 2>"$work/bad.err"; then
		bad "makeVDevice accepted --fuse ${bad%%:*}"
	fi
	grep -q "${bad#*:}" "$work/bad.err" || bad "--fuse ${bad%%:*}: no '${bad#*:}' in: $(head -c 300 "$work/bad.err")"
	grep -q "makeVDevice.*failed: ncclResult" "$work/bad.err" ||
		bad "--fuse ${bad%%:*}: makeVDevice did not fail"
done

# 3. fa1 fails mid-transfer
port=29710
rank down 0 --server -b 64M -e 64M -n 1000 -w 0
s=$!
rank down 1 --client "$(mh_addr 0 0)" -b 64M -e 64M -n 1000 -w 0
c=$!
# mid-transfer: once 64 MiB went through fa1 (bounded: a rank that never
# got there is reported by the checks below)
b1=$(mh_bytes 1 fa1)
for ((i = 0; i < 600 && $(mh_bytes 1 fa1) - b1 < 64 << 20; i++)); do
	sleep 0.1
done
echo "# fa1 down after $(($(mh_bytes 1 fa1) - b1)) bytes through it"
ip -n "rwfu-$$-h1" link set fa1 down
t0=$SECONDS
wait $s && bad "down: the server succeeded with fa1 down"
wait $c && bad "down: the client succeeded with fa1 down"
t=$((SECONDS - t0))
echo "# fa1 down: both ranks failed after ${t}s"
((t < 30)) || bad "down: the ranks took ${t}s to fail"
grep -h "fuse:" "$work"/down.h*.err | head -n 4
grep -q "NIC fa1\|fa1: [0-9]* request" "$work"/down.h*.err || bad "down: no message names fa1"
exit $fail
