#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when a module includes a header from a layer above it, when anything
# but common/ reads the environment, or when ncclResult_t leaks out of
# plugin/ and abi/.  Usage: check_layers.sh <source root>
set -u
root=${1:-.}
cd "$root" || exit 2
fail=0

# layer -> folders it may include (besides itself)
declare -A allowed=(
  [common]=""
  [abi]=""
  [topo]="common"
  [gpu]="common"
  [kernels]="common gpu"
  [transport]="common topo gpu kernels"
  [coll]="common topo gpu kernels transport include"
  [plugin]="common topo gpu kernels transport coll abi include"
  [tools]="common topo gpu kernels transport coll abi include"
  [include]=""
)
for layer in "${!allowed[@]}"; do
  [[ -d $layer ]] || continue
  while IFS=: read -r file _ inc; do
    dir=${inc#*\"}; dir=${dir%%/*}
    [[ $dir == "$layer" ]] && continue
    [[ " ${allowed[$layer]} " == *" $dir "* ]] && continue
    # headers next to the file (no folder) are fine
    [[ $inc != *\"*/*\"* ]] && continue
    echo "layering: $file includes \"${inc#*\"}: $layer may not reach $dir"
    fail=1
  done < <(grep -rn --include='*.[ch]' --include='*.cu' --include='*.cuh' -E '^#include +"' "$layer" 2>/dev/null)
done

if grep -rn --include='*.[ch]' --include='*.cu' -E '\bgetenv *\(' . --exclude-dir='build*' --exclude-dir=tests \
     | grep -v '^./common/' | grep -q .; then
  grep -rn --include='*.[ch]' --include='*.cu' -E '\bgetenv *\(' . --exclude-dir='build*' --exclude-dir=tests | grep -v '^./common/'
  echo "layering: getenv outside common/ (use the parameter registry or rw_env_get)"
  fail=1
fi

if grep -rn --include='*.[ch]' -E '\brw_env_get *\(' . --exclude-dir='build*' --exclude-dir=tests \
   | grep -v '^./common/' | grep -q .; then
  grep -rn --include='*.[ch]' -E '\brw_env_get *\(' . --exclude-dir='build*' --exclude-dir=tests | grep -v '^./common/'
  echo "layering: rw_env_get outside common/ and tests/ (RINGWAY_* via the registry or struct rw_config, launcher variables via rw_launcher_get)"
  fail=1
fi

if grep -rn --include='*.[ch]' -E '\b(setenv|putenv|unsetenv) *\(' . --exclude-dir='build*' --exclude-dir=tests \
   | grep -q .; then
  grep -rn --include='*.[ch]' -E '\b(setenv|putenv|unsetenv) *\(' . --exclude-dir='build*' --exclude-dir=tests
  echo "layering: setenv/putenv outside tests/ (configure through rw_comm_init_config)"
  fail=1
fi

if grep -rln --include='*.[ch]' -E '\bnccl(Result_t|Success|SystemError)\b' common topo kernels transport coll include 2>/dev/null | grep -q .; then
  grep -rln --include='*.[ch]' -E '\bnccl(Result_t|Success|SystemError)\b' common topo kernels transport coll include
  echo "layering: ncclResult_t outside plugin/, abi/ and the ABI-level tools"
  fail=1
fi

if grep -rn --include='*.[ch]' -E '^#include +<(cuda|cuda_runtime|cuda_runtime_api|nvml)\.h>' \
     common topo kernels transport coll plugin tools include 2>/dev/null | grep -v '^topo/rw_topo_nvml\.c:' | grep -q .; then
  grep -rn --include='*.[ch]' -E '^#include +<(cuda|cuda_runtime|cuda_runtime_api|nvml)\.h>' \
     common topo kernels transport coll plugin tools include | grep -v '^topo/rw_topo_nvml\.c:'
  echo "layering: CUDA/NVML headers outside gpu/ (only gpu/ calls the CUDA runtime; kernels/ only reduces, in .cu files)"
  fail=1
fi

[[ $fail == 0 ]] && echo "layering: ok"
exit $fail
