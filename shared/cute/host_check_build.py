"""Build and load host_check.cpp (host_check.py's compiled check) with torch.utils.cpp_extension.

Built once per machine and torch build: the library goes to a folder of torch's extension cache
(TORCH_EXTENSIONS_DIR, default ~/.cache/torch_extensions) named after the torch version and Python,
so that a new torch never loads a library built against another one's C++ ABI; later processes load
it in milliseconds. Needs a C++ compiler, ninja and torch's headers (in its wheel). Concurrent first
builds (pytest-xdist workers) wait on torch's lock file in that folder.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

NAME = "nvfp4_host_check"
SOURCE = Path(__file__).with_name("host_check.cpp")


def build_directory() -> Path:
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or Path.home() / ".cache" / "torch_extensions"
    tag = f"{NAME}-torch{torch.__version__}-py{sys.version_info.major}{sys.version_info.minor}".replace("+", "_")
    return Path(root) / tag


def compiled():
    """The compiled module (Watch, identity_key); raises (the caller falls back to Python) where it
    cannot be built."""
    from torch.utils import cpp_extension

    folder = build_directory()
    folder.mkdir(parents=True, exist_ok=True)
    if not any(folder.glob(f"{NAME}*.so")):
        print(f"nvfp4: building the compiled host check once for this torch (~30 s): {folder}",
              file=sys.stderr, flush=True)
    module = cpp_extension.load(name=NAME, sources=[str(SOURCE)], build_directory=str(folder),
                                extra_cflags=["-O2"], verbose=False)
    return module
