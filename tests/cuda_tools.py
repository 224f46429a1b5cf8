"""Locating the CUDA binary tools (cuobjdump, nvdisasm) for the SASS checks of the CPU tier: on PATH,
or inside the pip wheels nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm (nvidia/cu*/bin)."""

from __future__ import annotations

import glob
import os
import shutil


def find_tool(name: str) -> str | None:
    path = shutil.which(name)
    if path:
        return path
    try:
        import nvidia
    except ImportError:
        return None
    for root in nvidia.__path__:
        hits = sorted(glob.glob(os.path.join(root, "*", "bin", name)))
        if hits:
            return hits[-1]
    return None
