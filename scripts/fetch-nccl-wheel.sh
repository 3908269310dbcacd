#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fetch NCCL's PyPI wheel (nvidia-nccl-cu13) into a cache outside the
# repository and unpack its libnccl.so.2, for the versions test
# (tests/doctor/nccl_versions.sh) and `ringway-doctor --nccl`.
# Usage: fetch-nccl-wheel.sh CACHE_DIR VERSION
# Leaves CACHE_DIR/nccl-VERSION/libnccl.so.2; does nothing when it is there.
set -eu
cache=$1 version=$2
dest=$cache/nccl-$version
if [[ -s $dest/libnccl.so.2 ]]; then
  echo "fetch-nccl-wheel: $dest/libnccl.so.2 already there"
  exit 0
fi
mkdir -p "$cache/wheels" "$dest"
python3 -m pip download --no-deps --only-binary=:all: "nvidia-nccl-cu13==$version" -d "$cache/wheels"
wheel=$(ls "$cache/wheels"/nvidia_nccl_cu13-"$version"-*.whl | head -1)
python3 - "$wheel" "$dest" <<'PY'
import shutil, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z, z.open("nvidia/nccl/lib/libnccl.so.2") as src, \
        open(dest + "/libnccl.so.2.part", "wb") as out:
    shutil.copyfileobj(src, out)
PY
mv "$dest/libnccl.so.2.part" "$dest/libnccl.so.2"
echo "fetch-nccl-wheel: $dest/libnccl.so.2 from $(basename "$wheel")"
