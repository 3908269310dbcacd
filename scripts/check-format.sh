#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every C/CUDA file git tracks must be as clang-format (.clang-format) writes
# it.  Usage: check-format.sh [--fix]   (--fix rewrites the files in place)
# Fails, naming the files, when one differs; CI runs it (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format}
command -v "$cf" >/dev/null || { echo "check-format: $cf not found (scripts/install-deps.sh lint)" >&2; exit 2; }

mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh')
if [[ ${1:-} == --fix ]]; then
  "$cf" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} of ${#files[@]} files differ from .clang-format ($($cf --version | head -1)):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "check-format: run scripts/check-format.sh --fix (or make format)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files ok"
