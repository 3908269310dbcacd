#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages ringway needs, if any are missing.
#   install-deps.sh          build + test packages
#   install-deps.sh bench    also the comparison tools used by bench/
#   install-deps.sh fuzz     also clang and its libFuzzer runtime (make fuzz)
#   install-deps.sh lint     also clang-format (scripts/check-format.sh, CI)
# As root it runs apt-get; otherwise it prints the exact command and fails.
set -euo pipefail

pkgs=(build-essential cmake ninja-build pkg-config libhwloc-dev libibverbs-dev
      ibverbs-providers libcmocka-dev)
if [[ ${1:-} == bench ]]; then
  pkgs+=(iperf3 hyperfine openmpi-bin libopenmpi-dev libgloo-dev g++)
fi
if [[ ${1:-} == fuzz ]]; then
  # libclang-rt-dev: the default clang's runtimes (libclang_rt.fuzzer, asan, ubsan);
  # Debian 12: libclang-rt-14-dev.
  pkgs+=(clang libclang-rt-dev)
fi
if [[ ${1:-} == lint ]]; then
  pkgs+=(clang-format)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
((${#missing[@]} == 0)) && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  echo "ringway: missing Debian packages: ${missing[*]}" >&2
  echo "ringway: run as root:  apt-get update && $cmd" >&2
  exit 1
fi
echo "ringway: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd
