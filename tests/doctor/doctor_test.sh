#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ringway-doctor, end to end.
# Usage: doctor_test.sh <ringway-doctor> <plugin dir> <fixtures dir> <scratch dir> MODE
#   host       this machine: found, ABI bound, self-test, --json, the plugin
#              not found, contradictions, bad RINGWAY_* values
#   fixtures   the GPU <-> NIC pairing of every topology fixture (hwloc builds)
#   softverbs  under sv_run: the emulated verbs devices, port states, GIDs,
#              GPUDirect, the ib self-test, a forced ib that cannot work
set -u
doctor=$1 plugdir=$2 fixtures=$3 out=$4 mode=$5
fail=0
mkdir -p "$out"

last=""
check() { # what, command...
  local what=$1; shift
  if ! "$@"; then
    echo "FAIL: $what"
    [[ -n $last ]] && sed -n '/^summary:/,$p' "$last" | sed 's/^/    /'
    fail=1
  fi
}
has() { grep -qE -- "$2" "$1"; }
hasnt() { ! grep -qE -- "$2" "$1"; }
json_ok() { python3 -m json.tool "$1" >/dev/null; }
# run NAME [VAR=value...] -- args: the doctor in a clean environment (no
# NCCL_*/RINGWAY_* from the caller), output in $out/NAME.txt, status in $out/NAME.rc
run() {
  local name=$1; shift
  local envs=()
  while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  env $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\|RINGWAY_[A-Za-z0-9_]*\|LD_LIBRARY_PATH\)=.*/-u \1/p') \
    ${envs[@]+"${envs[@]}"} "$doctor" "$@" >"$out/$name.txt" 2>"$out/$name.err"
  echo $? >"$out/$name.rc"
  last=$out/$name.txt
}
rc() { cat "$out/$1.rc"; }

# which NCCL would bind which ABI (for the checks below), from the installed library
nccl_lib=$(ldconfig -p 2>/dev/null | sed -n 's/.*libnccl\.so\.2 .*=> //p' | head -1)

case $mode in
host)
  good=(LD_LIBRARY_PATH="$plugdir" NCCL_NET_PLUGIN=ringway NCCL_NET=ringway NCCL_NET_PLUGIN_REF_COUNT=1)

  # --- a good setup: exit 0, the plugin found by NCCL's rule, every transport tested
  run good "${good[@]}" -- --selftest 2
  t=$out/good.txt
  check "good: exit 0 (got $(rc good))" test "$(rc good)" -eq 0
  check "good: found by the libnccl-net-NAME.so rule" has "$t" "found: $plugdir/libnccl-net-ringway.so \(dlopen\(\"libnccl-net-ringway.so\""
  check "good: exports v6..v12 and CollNet" has "$t" "exports: ncclNetPlugin_v6..v12; ncclCollNetPlugin_v6..v12 \(name \"ringway\"\)"
  check "good: socket usable" has "$t" "ok   usable: yes, [0-9]+ stream"
  check "good: shm usable" has "$t" "ok   usable: yes \(peers on this host"
  check "good: socket self-test checked" has "$t" "socket bandwidth: [0-9.]+ GB/s .*every byte checked; [0-9.]+x the expected"
  check "good: shm self-test" has "$t" "shm rtt: 8-byte round trip [0-9.]+ us"
  check "good: yardsticks" has "$t" "socket expected: [0-9.]+ GB/s \(one raw TCP stream"
  check "good: summary" has "$t" "^summary: 0 problem\(s\)"
  if [[ -n $nccl_lib ]] && strings "$nccl_lib" | grep -qx 'ncclNetPlugin_v11'; then
    want=$(strings "$nccl_lib" | sed -n 's/^ncclNetPlugin_v\([0-9]*\)$/\1/p' | sort -n | tail -1)
    check "good: NCCL binds v$want" has "$t" "binds: NCCL [0-9.]+ will bind ringway's ncclNetPlugin_v$want"
    check "good: NCCL version" has "$t" "version: NCCL 2\.[0-9]+\.[0-9]+ \(ncclGetVersion [0-9]+\)"
  fi

  # --- --json parses, has every section and the figures
  run json "${good[@]}" -- --json --selftest 1
  check "json: exit 0 (got $(rc json))" test "$(rc json)" -eq 0
  check "json: parses" json_ok "$out/json.txt"
  check "json: sections and figures" python3 - "$out/json.txt" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
secs = d["sections"]
for s in ("plugin", "nccl", "env", "socket", "shm", "ib", "choice", "topo", "selftest"):
    assert s in secs, s
assert d["status"] in ("ok", "warn"), d["status"]
items = secs["selftest"]["items"]
bw = [i for i in items if i["key"] == "socket bandwidth"]
assert bw and bw[0]["unit"] == "GB/s" and bw[0]["value"] > 0, bw
found = [i for i in secs["plugin"]["items"] if i["key"] == "found"]
assert found and found[0]["level"] == "ok", found
EOF

  # --- the plugin not found: exit 1 with the reason and where it is
  run nolib NCCL_NET_PLUGIN=ringway -- --selftest 0
  t=$out/nolib.txt
  check "not found: exit 1 (got $(rc nolib))" test "$(rc nolib)" -eq 1
  check "not found: reason" has "$t" "FAIL not found: NCCL_NET_PLUGIN=ringway: NCCL would print \"NET/Plugin: Could not find\""
  check "not found: tried both names" has "$t" "tried: libnccl-net-ringway.so: .*cannot open shared object file"
  check "not found: where it is" has "$t" "libnccl-net-ringway.so exists but is not on the loader's path"
  check "not found: in the summary" has "$t" "FAIL \[plugin\] not found"

  run unset LD_LIBRARY_PATH="$plugdir" -- --selftest 0
  check "NCCL_NET_PLUGIN unset: exit 1" test "$(rc unset)" -eq 1
  check "NCCL_NET_PLUGIN unset: advice" has "$out/unset.txt" "FAIL not loaded: NCCL will not load ringway: set NCCL_NET_PLUGIN=ringway \(the loader finds libnccl-net-ringway.so at"

  # a libnccl-net.so that is ringway works without NCCL_NET_PLUGIN
  mkdir -p "$out/symlink" && ln -sf "$(cd "$plugdir" && pwd)/libnccl-net-ringway.so" "$out/symlink/libnccl-net.so"
  run symlink LD_LIBRARY_PATH="$out/symlink" NCCL_NET=ringway NCCL_NET_PLUGIN_REF_COUNT=1 -- --selftest 0
  check "libnccl-net.so symlink: exit 0 (got $(rc symlink))" test "$(rc symlink)" -eq 0
  check "libnccl-net.so symlink: found" has "$out/symlink.txt" "ok   name rule: libnccl-net.so is ringway"

  run missing NCCL_NET_PLUGIN=/nonexistent/libnccl-net-ringway.so -- --selftest 0
  check "missing file: exit 1" test "$(rc missing)" -eq 1
  check "missing file: reason" has "$out/missing.txt" "FAIL not found: NCCL_NET_PLUGIN=/nonexistent/libnccl-net-ringway.so names a file that does not exist"

  run path NCCL_NET_PLUGIN="$plugdir/libnccl-net-ringway.so" NCCL_NET_PLUGIN_REF_COUNT=1 -- --selftest 0
  check "full path: exit 0 (got $(rc path))" test "$(rc path)" -eq 0
  check "full path: tried exactly it" has "$out/path.txt" "NCCL tries exactly $plugdir/libnccl-net-ringway.so"

  run static NCCL_NET_PLUGIN=static -- --selftest 0
  check "STATIC_PLUGIN prefix: warned" has "$out/static.txt" "WARN name rule: NCCL_NET_PLUGIN entry \"static\" is a prefix of STATIC_PLUGIN"

  # --- contradictions
  run c1 LD_LIBRARY_PATH="$plugdir" NCCL_NET=ringway -- --selftest 0
  check "NCCL_NET without NCCL_NET_PLUGIN: exit 1" test "$(rc c1)" -eq 1
  check "NCCL_NET without NCCL_NET_PLUGIN: said" has "$out/c1.txt" "FAIL NCCL_NET: NCCL_NET=ringway without NCCL_NET_PLUGIN"

  run c2 "${good[@]}" NCCL_IB_DISABLE=1 RINGWAY_TRANSPORT=ib NCCL_SOCKET_IFNAME=eth0 \
    NCCL_NET=IB -- --selftest 0
  t=$out/c2.txt
  check "NCCL_IB_DISABLE with ib: said" has "$t" "WARN NCCL_IB_DISABLE: NCCL_IB_DISABLE=1 with RINGWAY_TRANSPORT=ib"
  check "NCCL_SOCKET_IFNAME not read: said" has "$t" "WARN NCCL_SOCKET_IFNAME: NCCL_SOCKET_IFNAME=eth0 is not read by ringway"
  check "NCCL_NET=IB: said" has "$t" "WARN NCCL_NET: NCCL_NET=IB: NCCL uses only that network, never ringway"

  run c3 NCCL_NET_PLUGIN=nosuchplugin NCCL_COLLNET_ENABLE=1 -- --selftest 0
  check "CollNet without symbols: said" has "$out/c3.txt" "FAIL NCCL_COLLNET_ENABLE: NCCL_COLLNET_ENABLE=1 but ringway is not loaded"

  run c4 "${good[@]}" RINGWAY_NCHANNELS=lots RINGWAY_CHUNKBYTES=1M RINGWAY_SECRET=hush -- --selftest 0
  t=$out/c4.txt
  check "bad value: exit 1 (got $(rc c4))" test "$(rc c4)" -eq 1
  check "bad value: registry's words" has "$t" "FAIL RINGWAY_NCHANNELS: 'lots' rejected \(expected an integer in \[1, 32\]\): ringway uses the default '4'"
  check "misspelt name: warned" has "$t" "WARN RINGWAY_CHUNKBYTES: not a ringway variable"
  check "secret never printed" hasnt "$t" "hush"

  run c5 "${good[@]}" RINGWAY_TRANSPORT=shm -- --selftest 0
  check "forced shm: warned" has "$out/c5.txt" "WARN RINGWAY_TRANSPORT: shm reaches only ranks on this host"

  run usage -- --selftest -1
  check "bad option: exit 2" test "$(rc usage)" -eq 2
  cat "$out/good.txt"
  ;;

fixtures)
  for xml in "$fixtures"/*.xml; do
    name=$(basename "$xml" .xml)
    sys="$fixtures/$name.sys"
    [[ -d $sys ]] || sys=""
    run "fx-$name" LD_LIBRARY_PATH="$plugdir" NCCL_NET_PLUGIN=ringway RINGWAY_SYSFS_ROOT="$sys" -- \
      --xml "$xml" --selftest 0 --json
    t=$out/fx-$name.txt
    check "$name: json parses" json_ok "$t"
    check "$name: a pairing per GPU" python3 - "$t" "$xml" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
items = d["sections"]["topo"]["items"]
src = [i for i in items if i["key"] == "source"][0]["text"]
ngpu = int(re.search(r"(\d+) GPU\(s\)", src).group(1))
assert "XML" in src or "xml" in src, src
pairs = [i for i in items if i["key"] == "pairing"]
if ngpu:
    assert len(pairs) == ngpu, (ngpu, pairs)
    assert all(re.match(r"GPU \d+ \(\S+\) -> ", p["text"]) for p in pairs), pairs
else:
    assert len(pairs) == 1 and pairs[0]["text"].startswith("no GPU"), pairs
EOF
  done
  run fx-hgx LD_LIBRARY_PATH="$plugdir" NCCL_NET_PLUGIN=ringway \
    RINGWAY_SYSFS_ROOT="$fixtures/hgx8-2s-4sw.sys" -- --xml "$fixtures/hgx8-2s-4sw.xml" --selftest 0
  t=$out/fx-hgx.txt
  check "hgx8: 8 pairings" test "$(grep -c 'pairing: GPU' "$t")" -eq 8
  check "hgx8: GPU 1 -> mlx5_1, same switch" has "$t" "ok   pairing: GPU 1 \(0000:0f:00.0\) -> mlx5_1: same PCIe switch"
  check "hgx8: source is the XML" has "$t" "source: hwloc XML .*hgx8-2s-4sw.xml; 8 GPU\(s\)"
  cat "$t"
  ;;

softverbs)
  # sv_run exported SYSFS_PATH, RDMAV_DRIVERS and RINGWAY_SYSFS_ROOT; keep them
  sv=(RINGWAY_SYSFS_ROOT="${RINGWAY_SYSFS_ROOT:-}" LD_LIBRARY_PATH="$plugdir"
      NCCL_NET_PLUGIN=ringway NCCL_NET=ringway NCCL_NET_PLUGIN_REF_COUNT=1)
  run sv "${sv[@]}" RINGWAY_TRANSPORT=ib -- --selftest 2
  t=$out/sv.txt
  check "softverbs: exit 0 (got $(rc sv))" test "$(rc sv)" -eq 0
  check "softverbs: ib usable" has "$t" "ok   usable: yes, library libibverbs.so.1"
  check "softverbs: sv_roce0 port ACTIVE with RoCE v2 GIDs" has "$t" "port: sv_roce0 port 1: 4: ACTIVE, Ethernet, .*\[3\] 0000:0000:0000:0000:0000:ffff:0a0b:0001 \(RoCE v2\)"
  check "softverbs: sv_down0 DOWN" has "$t" "port: sv_down0 port 1: 1: DOWN"
  check "softverbs: the GID chosen" has "$t" "NET/IB: sv_roce0 port 1: RoCE, GID 3 ::ffff:10.11.0.1 \(RoCE v2\)"
  check "softverbs: GPUDirect stated" has "$t" "device: [0-9]: sv_roce0, 100000 Mbps.*, GPUDirect RDMA (off|by)"
  check "softverbs: GPUDirect reason" has "$t" "NET/IB: sv_roce0: GPUDirect RDMA (on|off)"
  check "softverbs: ib self-test" has "$t" "ib bandwidth: [0-9.]+ GB/s .*every byte checked"
  check "softverbs: forced ib is the choice" has "$t" "ok   RINGWAY_TRANSPORT: ib \(forced\)"

  run svdown "${sv[@]}" RINGWAY_TRANSPORT=ib RINGWAY_IB_HCA==sv_down0 -- --selftest 0
  t=$out/svdown.txt
  check "forced ib on a down port: exit 1 (got $(rc svdown))" test "$(rc svdown)" -eq 1
  check "forced ib on a down port: why" has "$t" "FAIL usable: no: .*sv_down0.*(DOWN|down)"

  cat "$out/sv.txt"
  ;;
*)
  echo "unknown mode $mode"; exit 2 ;;
esac

[[ $fail == 0 ]] && echo "doctor $mode: ok"
exit $fail
