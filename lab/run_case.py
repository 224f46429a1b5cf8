"""Call one problem's submission on one case a few times, for a profiler or a sanitizer to watch:

    ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:kernel_cutlass \\
        python lab/run_case.py dual_gemm m=256 n=4096 k=7168

The first call compiles; every call gets fresh leaderboard data of the case (seed 1111)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str]) -> int:
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        print(__doc__, file=sys.stderr)
        return 2
    problem = argv[0]
    case = {"l": 1, "seed": 1111} | {k: int(v) for k, v in (a.split("=", 1) for a in argv[1:])}
    ref = importlib.import_module(f"problems.{problem}.reference")
    sub = importlib.import_module(f"problems.{problem}.submission")
    for _ in range(3):
        sub.custom_kernel(ref.generate_input(**case, device="cuda"))
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
