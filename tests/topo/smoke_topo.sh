#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ringway-topo on every fixture (text, --dot FILE, --dot -), on bad input and
# on this machine.
# Usage: smoke_topo.sh <ringway-topo> <fixtures dir> <scratch dir> [nohwloc]
set -u
tool=$1 fixtures=$2 out=$3 mode=${4:-}
fail=0
mkdir -p "$out"

check() { # what, condition...
  local what=$1; shift
  if ! "$@"; then echo "FAIL: $what"; fail=1; fi
}

if [[ $mode == nohwloc ]]; then
  # built without hwloc: XML is refused with a clear message, the machine still shows
  "$tool" --xml "$fixtures/gpu4-nic2.xml" >"$out/nohwloc.txt" 2>&1
  check "no hwloc: --xml exits 1 (got $?)" test $? -eq 1
  check "no hwloc: message" grep -q "built without hwloc" "$out/nohwloc.txt"
  "$tool" --dot "$out/live.dot" >"$out/live.txt" 2>"$out/live.err"
  check "live: exit 0 (got $?)" test $? -eq 0
  check "live: report" grep -q "sysfs, this machine" "$out/live.txt"
  cat "$out/live.txt"
  [[ $fail == 0 ]] && echo "topo smoke: ok"
  exit $fail
fi

for xml in "$fixtures"/*.xml; do
  name=$(basename "$xml" .xml)
  sys="$fixtures/$name.sys"
  [[ -d $sys ]] || sys=""
  RINGWAY_SYSFS_ROOT=$sys "$tool" --xml "$xml" --dot "$out/$name.dot" >"$out/$name.txt" 2>"$out/$name.err"
  check "$name: exit status $?" test $? -eq 0
  check "$name: report" grep -q "^GPU -> NIC:" "$out/$name.txt"
  check "$name: dot header" grep -q "^digraph ringway {" "$out/$name.dot"
  check "$name: dot closed" grep -q "^}" "$out/$name.dot"
  ngpu=$(sed -n 's/^GPUs: //p' "$out/$name.txt")
  nnic=$(sed -n 's/^NICs: //p' "$out/$name.txt")
  for ((i = 0; i < ngpu; i++)); do
    check "$name: dot node gpu$i" grep -q "^ *gpu$i \[label=\"GPU $i" "$out/$name.dot"
  done
  for ((i = 0; i < nnic; i++)); do
    check "$name: dot node nic$i" grep -q "^ *nic$i \[label=" "$out/$name.dot"
  done
  "$tool" --xml "$xml" --dot - >"$out/$name.stdout.dot" 2>/dev/null
  check "$name: --dot -" grep -q "^digraph ringway {" "$out/$name.stdout.dot"
  check "$name: --dot - prints only the picture" bash -c "! grep -q '^GPU -> NIC' '$out/$name.stdout.dot'"
done

# the 8-GPU box: switches, the ring, each GPU's NIC
d="$out/hgx8-2s-4sw.dot"
check "hgx8: 4 switch clusters" test "$(grep -c 'subgraph cluster_sw' "$d")" -eq 4
check "hgx8: 2 NUMA clusters" test "$(grep -c 'subgraph cluster_numa' "$d")" -eq 2
check "hgx8: ring edges" test "$(grep -c 'label="ring [0-9]' "$d")" -eq 7
check "hgx8: ring leaves by mlx5_7" grep -q 'gpu7 -> nic8 \[color=red' "$d"
check "hgx8: GPU 1 -> mlx5_1" grep -q '0000:0f:00.0 → mlx5_1: same PCIe switch' "$out/hgx8-2s-4sw.txt"
check "dgx1v: NVLink edges" test "$(grep -c 'label="NVL' "$out/dgx1v-nvlink.dot")" -eq 16

# --ranks: the placement rw_comm_init makes, in its INFO log's words
p="$out/hgx8-place.txt"
RINGWAY_NCHANNELS=2 "$tool" --xml "$fixtures/hgx8-2s-4sw.xml" --hosts 2 --ranks 4 >"$p" 2>&1
check "--ranks: exit 0 (got $?)" test $? -eq 0
check "--ranks: hosts grouped" grep -q '^place: channel 0 ring 0 2 1 3 (2 host crossings)$' "$p"
check "--ranks: a line per rank" test "$(grep -c '^place: rank [0-9] of 4: host' "$p")" -eq 4
check "--ranks: channel 1 spread to mlx5_1" \
  grep -q '^place: channel 1 rank 0 -> rank 2 over NIC mlx5_1 (net dev - ib1): same PCIe switch (PIX, 31.5 GB/s); spread' "$p"
"$tool" --ranks 0 >/dev/null 2>&1
check "--ranks 0: exit 2 (got $?)" test $? -eq 2

# bad input: a clear message and exit 1, never a crash
"$tool" --xml "$out/does-not-exist.xml" >"$out/missing.txt" 2>&1
check "missing XML: exit 1 (got $?)" test $? -eq 1
check "missing XML: message" grep -q "cannot open hwloc XML" "$out/missing.txt"
echo "garbage" >"$out/garbage.xml"
"$tool" --xml "$out/garbage.xml" >"$out/garbage.txt" 2>&1
check "garbage XML: exit 1 (got $?)" test $? -eq 1
check "garbage XML: message" grep -q "not an hwloc XML topology" "$out/garbage.txt"
"$tool" --bogus >/dev/null 2>&1
check "bad option: exit 2" test $? -eq 2

# this machine
"$tool" --dot "$out/live.dot" >"$out/live.txt" 2>"$out/live.err"
check "live: exit 0 (got $?)" test $? -eq 0
check "live: report" grep -q "this machine" "$out/live.txt"
check "live: dot" grep -q "^digraph ringway {" "$out/live.dot"
cat "$out/live.txt"

[[ $fail == 0 ]] && echo "topo smoke: ok"
exit $fail
