#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The plugin's dynamic symbol table defines the ncclNetPlugin_vN /
# ncclCollNetPlugin_vN data objects and nothing else, and has every
# ncclNetPlugin_v6..v12.  Usage: check_exports.sh <libnccl-net-ringway.so>
set -euo pipefail
so=${1:?usage: check_exports.sh <libnccl-net-ringway.so>}
[[ -r $so ]] || { echo "exports: cannot read $so"; exit 2; }

# "<value> <type> <name>" for every defined dynamic symbol.
table=$(nm -D --defined-only "$so")
fail=0
while read -r _ type name; do
  [[ -z ${name:-} ]] && continue
  if [[ ! $name =~ ^nccl(Coll)?NetPlugin_v[0-9]+$ ]]; then
    echo "exports: $name ($type) leaks out of the plugin"
    fail=1
  elif [[ ! $type =~ ^[DRB]$ ]]; then
    echo "exports: $name has type $type: NCCL dlsym()s a data object"
    fail=1
  fi
done <<<"$table"

for v in 6 7 8 9 10 11 12; do
  if ! grep -qE " ncclNetPlugin_v$v\$" <<<"$table"; then
    echo "exports: ncclNetPlugin_v$v is missing"
    fail=1
  fi
done

[[ $fail == 0 ]] && echo "exports: ok ($(wc -l <<<"$table") symbols)"
exit $fail
