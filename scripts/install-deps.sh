#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages ringway needs, if any are missing.
#   install-deps.sh          build + test packages
#   install-deps.sh bench    also the comparison tools used by bench/
#   install-deps.sh fuzz     also clang and its libFuzzer runtime (make fuzz)
#   install-deps.sh lint     also clang-format (scripts/check-format.sh, CI)
#   install-deps.sh torch    also PyPI's torch in a cached venv (ringway_torch,
#                            tests/python): $TORCH_VENV, default
#                            ~/.cache/ringway/venv; made once, reused after
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
if [[ ${1:-} == torch ]]; then
  # A C++ compiler for the extension; python3-venv/-dev only where python3
  # is Debian's (a python3 of its own, e.g. pyenv's, has both).
  pkgs+=(g++)
  if [[ $(command -v python3 || true) == /usr/bin/python3 ]]; then
    pkgs+=(python3-venv python3-dev)
  fi
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
# The torch venv: outside the clone (several GB; kept between runs and
# clones), made once.  TORCH_VERSION pins the wheel (PyPI's, with its CUDA
# dependencies: about 5.4 GB, 1.5 min here).
torch_venv() {
  local home=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
  local ours=${XDG_CACHE_HOME:-$home/.cache}/ringway/venv
  local venv=${TORCH_VENV:-$ours}
  local want=${TORCH_VERSION:-2.15.0}
  if "$venv/bin/python" -c 'import torch' >/dev/null 2>&1; then
    return 0
  fi
  # a folder is replaced only when it is ours: the cache's, or one this
  # script made (marked); a TORCH_VENV the user made is never deleted
  if [[ -e $venv && $venv != "$ours" && ! -e $venv/.ringway-venv ]]; then
    echo "ringway: TORCH_VENV=$venv exists but has no torch, and this script did not make it: install torch there or name another folder" >&2
    return 1
  fi
  echo "ringway: installing torch $want into $venv (once; reused after)"
  local t0=$SECONDS
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  : >"$venv/.ringway-venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade pip setuptools wheel
  "$venv/bin/pip" install --quiet --disable-pip-version-check "torch==$want" numpy
  "$venv/bin/python" -c 'import torch; print("ringway: torch", torch.__version__, "in", torch.__file__)'
  echo "ringway: torch installed in $((SECONDS - t0)) s"
}

if ((${#missing[@]} == 0)); then
  [[ ${1:-} == torch ]] && torch_venv
  exit 0
fi

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
[[ ${1:-} == torch ]] && torch_venv
exit 0
