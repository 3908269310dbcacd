# SPDX-License-Identifier: Apache-2.0
"""ringway_torch: ringway as a torch.distributed backend.

    pip install ./python    # against the torch installed in this environment

The C++ extension is built against the installed torch and libringway:
LIBRINGWAY_DIR (a folder holding libringway.so.0, e.g. build/coll), else the
repository's build/coll, else pkg-config's ringway.  libringway.so.0 is copied
next to the extension (found through $ORIGIN), so the installed package needs
nothing else.
"""
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _import_torch():
    """torch from this interpreter's own site-packages, also inside pip's
    isolated build environment (which hides them)."""
    try:
        import torch  # noqa: F401
        return
    except ImportError:
        pass
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    out = subprocess.run(
        [sys.executable, "-S", "-c",
         "import site, sys; site.main(); import torch, os; "
         "print(os.path.dirname(os.path.dirname(torch.__file__)))"],
        env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit("ringway_torch: torch is not installed for " + sys.executable +
                 " (scripts/install-deps.sh torch makes a venv with it)")
    sys.path.append(out.stdout.strip().splitlines()[-1])


def _libringway():
    """(include dir, lib dir) of libringway."""
    cands = []
    if os.environ.get("LIBRINGWAY_DIR"):
        cands.append(os.environ["LIBRINGWAY_DIR"])
    cands.append(os.path.join(REPO, "build", "coll"))
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "ringway"],
                                capture_output=True, text=True, check=True).stdout.strip()
        cands.append(libdir)
    except (OSError, subprocess.CalledProcessError):
        pass
    for d in cands:
        if glob.glob(os.path.join(d, "libringway.so.*")):
            inc = os.path.join(REPO, "include")
            if not os.path.exists(os.path.join(inc, "ringway.h")):
                inc = os.path.join(os.path.dirname(d), "include")
            return inc, os.path.abspath(d)
    sys.exit("ringway_torch: libringway.so not found in " + ", ".join(cands) +
             " (build it: make build, or set LIBRINGWAY_DIR)")


_import_torch()
from setuptools import setup  # noqa: E402
from torch.utils.cpp_extension import BuildExtension, CppExtension  # noqa: E402

INC, LIBDIR = _libringway()


def _torch_features():
    """-D flags for the c10d virtuals and OpType names this torch has: they
    came and went between releases (torch 2.11's Work has no getTimeout, its
    Backend no all_gather_single, its OpType no *_TENSOR_COALESCED)."""
    from torch.utils.cpp_extension import include_paths

    text = {}
    for name in ("Work.hpp", "Backend.hpp"):
        for inc in include_paths():
            f = os.path.join(inc, "torch", "csrc", "distributed", "c10d", name)
            if os.path.exists(f):
                with open(f, encoding="utf-8", errors="replace") as fh:
                    text[name] = fh.read()
                break
    work, backend = text.get("Work.hpp", ""), text.get("Backend.hpp", "")
    checks = {
        "RW_TORCH_WORK_TIMEOUT": "getTimeout(" in work,
        "RW_TORCH_ALL_GATHER_SINGLE": "all_gather_single(" in backend,
        "RW_TORCH_REDUCE_SCATTER_SINGLE": "reduce_scatter_single(" in backend,
        "RW_TORCH_OP_ALLGATHER_INTO_TENSOR_COALESCED": "ALLGATHER_INTO_TENSOR_COALESCED" in work,
        "RW_TORCH_OP_REDUCE_SCATTER_TENSOR_COALESCED": "REDUCE_SCATTER_TENSOR_COALESCED" in work,
    }
    return ["-D%s=1" % k for k, have in checks.items() if have]


class Build(BuildExtension):
    """Build the extension, then put libringway.so.0 beside it."""

    def run(self):
        super().run()
        soname = "libringway.so.0"
        real = os.path.realpath(os.path.join(LIBDIR, soname))
        for ext in self.extensions:
            dst = os.path.dirname(self.get_ext_fullpath(ext.name))
            shutil.copyfile(real, os.path.join(dst, soname))


setup(
    name="ringway_torch",
    version="0.1.0",
    description="ringway's ring allreduce engine as a torch.distributed backend",
    packages=["ringway_torch"],
    ext_modules=[
        CppExtension(
            "ringway_torch._C",
            ["ringway_torch/csrc/backend.cpp"],
            include_dirs=[INC],
            library_dirs=[LIBDIR],
            libraries=[":libringway.so.0"],
            extra_compile_args=["-O2"] + _torch_features(),
            extra_link_args=["-Wl,-rpath,$ORIGIN"],
        )
    ],
    cmdclass={"build_ext": Build},
    python_requires=">=3.9",
)
