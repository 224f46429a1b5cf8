"""Build and load host_check_source.py's C++ (host_check.py's compiled check) with
torch.utils.cpp_extension.load_inline.

Built once per environment: the library goes to a folder of torch's extension cache (TORCH_EXTENSIONS_DIR,
default ~/.cache/torch_extensions) named after the torch version, the Python and where that torch is
installed. So a new torch never loads a library built against another one's C++ ABI, and two environments
(nox's test and bench sessions, a CI checkout beside a working one) do not rebuild it in turn: the build
files name their environment's include paths, so a folder they shared was rebuilt whenever the other one
had used it. Later processes load it in milliseconds. Needs a C++ compiler, ninja and torch's headers (in
its wheel). A packaged file builds it the same way, in the runner's compile step (`python3 submission.py`,
which the packager's `__main__` block turns into this build) or else at its first call.

Concurrent first builds (pytest-xdist workers) wait on torch's lock file in that folder. torch waits
on that file forever, and a build that was killed leaves it behind, so a lock older than any build
takes is removed first.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import time
from pathlib import Path

import torch

NAME = "nvfp4_host_check"
STALE_LOCK_S = 300.0  # a build takes 20-60 s; a lock this old was left by a killed one


def build_directory() -> Path:
    root = os.environ.get("TORCH_EXTENSIONS_DIR") or Path.home() / ".cache" / "torch_extensions"
    where = hashlib.sha256(str(Path(torch.__file__).resolve().parent).encode()).hexdigest()[:8]
    tag = f"{NAME}-torch{torch.__version__}-py{sys.version_info.major}{sys.version_info.minor}-{where}"
    tag = tag.replace("+", "_")
    return Path(root) / tag


def clear_stale_lock(folder: Path, stale_s: float = STALE_LOCK_S, poll_s: float = 0.5) -> None:
    """Wait while another process builds (its lock is fresh); remove a lock older than `stale_s`."""
    lock = folder / "lock"
    while True:
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return
        if age > stale_s:
            lock.unlink(missing_ok=True)
            return
        time.sleep(poll_s)


def compiled():
    """The compiled module (Watch, identity_key); raises (the caller falls back to Python) where it
    cannot be built."""
    from torch.utils import cpp_extension

    from shared.cute.host_check_source import SOURCE

    folder = build_directory()
    folder.mkdir(parents=True, exist_ok=True)
    clear_stale_lock(folder)
    if not any(folder.glob(f"{NAME}*.so")):
        print(f"nvfp4: building the compiled host check once for this torch (~30 s): {folder}",
              file=sys.stderr, flush=True)
    # SOURCE includes the two torch headers it needs; load_inline would put torch/extension.h (all of
    # torch's C++ API) before it, which doubles the build (48 s against 28 s on a 2-core machine).
    light = "no_implicit_headers" in inspect.signature(cpp_extension.load_inline).parameters
    return cpp_extension.load_inline(name=NAME, cpp_sources=[SOURCE], build_directory=str(folder),
                                     extra_cflags=["-O2"], verbose=False,
                                     **({"no_implicit_headers": True} if light else {}))
