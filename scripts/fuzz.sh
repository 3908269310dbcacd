#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run every libFuzzer target of a RINGWAY_FUZZ=ON build for a while each.
#   fuzz.sh <build dir> [seconds per target, default 60]
# Each target gets two corpus folders: first <build>/fuzz-corpus/<name>, where
# libFuzzer writes the inputs it finds (kept between runs, so a long run
# builds on the last), then its seed folder in the repository, which libFuzzer
# only reads.  A crash, leak, sanitizer report or input slower than 30 s fails
# the target: the input is saved under <build>/fuzz-artifacts/<name>/ and this
# script exits 1 once the other targets have run.
set -uo pipefail

build=${1:?usage: fuzz.sh <build dir> [seconds]}
secs=${2:-60}
list=$build/fuzzers.txt
if [[ ! $secs =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: seconds must be a positive integer, not '$secs'" >&2
  exit 2
fi
if [[ ! -s $list ]]; then
  echo "fuzz: no $list: configure $build with -DRINGWAY_FUZZ=ON (make fuzz)" >&2
  exit 2
fi

failed=()
n=0
while IFS=$'\t' read -r name bin seeds; do
  [[ -z $name ]] && continue
  n=$((n + 1))
  scratch=$build/fuzz-corpus/$name
  artifacts=$build/fuzz-artifacts/$name
  log=$build/fuzz-$name.log
  mkdir -p "$scratch" "$artifacts"
  if [[ ! -x $bin || ! -d $seeds ]]; then
    echo "fuzz: $name: $bin or its seeds $seeds are missing (cmake --build $build --target fuzzers)" >&2
    failed+=("$name")
    continue
  fi
  echo "fuzz: $name for ${secs} s (seeds $seeds, new inputs in $scratch, log $log)"
  "$bin" -max_total_time="$secs" -timeout=30 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$scratch" "$seeds" >"$log" 2>&1
  rc=$?
  grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done )' "$log" | sed 's/^/  /'
  if ((rc != 0)); then
    echo "fuzz: $name FAILED (exit $rc); the end of $log:" >&2
    tail -n 40 "$log" >&2
    find "$artifacts" -type f -printf '  artifact: %p\n' >&2
    failed+=("$name")
  fi
done <"$list"

if ((n == 0)); then
  echo "fuzz: $list lists no targets" >&2
  exit 2
fi
if ((${#failed[@]})); then
  echo "fuzz: ${#failed[@]} of $n targets failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: $n targets, ${secs} s each: no finding"
