#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Version facts, checked against real NCCL builds: every ncclNetPlugin_vN /
# ncclCollNetPlugin_vN name a libnccl.so.2 asks for (literal strings in it:
# NCCL dlsym()s them) is exported by the plugin (nm -D), and
# ringway-doctor --nccl reports the version and the ABI that NCCL binds.
# Usage: nccl_versions.sh <libnccl-net-ringway.so> <ringway-doctor> WHICH [CACHE_DIR VERSION]
#   WHICH installed: the libnccl.so.2 the loader finds (or /usr/local/cuda's)
#   WHICH wheel:     CACHE_DIR/nccl-VERSION/libnccl.so.2 (make test-nccl-versions)
# Exit 77 (a CTest skip) when that library is not on this machine.
set -u
plugin=$1 doctor=$2 which=$3 cache=${4:-} version=${5:-}
fail=0

case $which in
installed)
  lib=$(ldconfig -p 2>/dev/null | sed -n 's/.*libnccl\.so\.2 .*=> //p' | head -1)
  for c in /usr/local/cuda/lib64/libnccl.so.2 /usr/local/cuda/lib/libnccl.so.2; do
    [[ -z $lib && -r $c ]] && lib=$c
  done
  if [[ -z $lib ]]; then
    echo "SKIP: no libnccl.so.2 installed here"
    exit 77
  fi
  ;;
wheel)
  lib=$cache/nccl-$version/libnccl.so.2
  if [[ ! -r $lib ]]; then
    echo "SKIP: $lib absent; \`make test-nccl-versions\` fetches nvidia-nccl-cu13==$version"
    exit 77
  fi
  ;;
*)
  echo "usage: $0 <plugin> <doctor> installed|wheel [CACHE_DIR VERSION]"; exit 2 ;;
esac

asks=$(strings -n 8 "$lib" | grep -E '^nccl(Coll)?NetPlugin_v[0-9]+$' | sort -u)
exports=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -E '^nccl(Coll)?NetPlugin_v[0-9]+$' | sort -u)
echo "$lib asks for: $(echo $asks)"
echo "$plugin exports: $(echo $exports)"
if [[ -z $asks ]]; then
  echo "FAIL: no ncclNetPlugin_vN string in $lib"
  fail=1
fi
for name in $asks; do
  if ! grep -qx "$name" <<<"$exports"; then
    echo "FAIL: $lib asks for $name, which ringway does not export"
    fail=1
  fi
done

# the doctor agrees: NCCL's version, and the highest net version both sides have
top=$(sed -n 's/^ncclNetPlugin_v\([0-9]*\)$/\1/p' <<<"$asks" | sort -n | tail -1)
out=$(env -u NCCL_NET LD_LIBRARY_PATH="$(dirname "$plugin")" NCCL_NET_PLUGIN=ringway \
  "$doctor" --nccl "$lib" --selftest 0)
echo "$out" | sed -n '/NCCL on this machine/,/^$/p'
if ! grep -qE "version: NCCL 2\.[0-9]+\.[0-9]+ \(ncclGetVersion [0-9]+\) at " <<<"$out"; then
  echo "FAIL: ringway-doctor --nccl $lib gave no version"
  fail=1
fi
if ! grep -q "will bind ringway's ncclNetPlugin_v$top" <<<"$out"; then
  echo "FAIL: ringway-doctor does not say NCCL binds v$top"
  fail=1
fi
if [[ $which == wheel ]] && ! grep -q "version: NCCL $version " <<<"$out"; then
  echo "FAIL: the wheel's ncclGetVersion is not $version"
  fail=1
fi

[[ $fail == 0 ]] && echo "nccl versions ($which): ok"
exit $fail
