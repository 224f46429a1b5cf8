"""Host time per call with the GPU idle, for any checkout of this repository (an A/B of two commits
in one lease): `python lab/idle_probe.py ROOT [PROBLEM ...] [--packaged] [--calls N]`.

ROOT is a checkout (this one: `.`); its submissions (or, with --packaged, the single files its packager
writes) are called on each benchmark case, each call after a `torch.cuda.synchronize()`, and the
median microseconds until the call returns are printed per case. Nothing of this checkout is
imported from ROOT's side: the probe needs only torch and the checkout's own modules.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path


def task_module() -> None:
    """The leaderboard's task.py that group_gemm's submission imports (type names only)."""
    task = types.ModuleType("task")
    task.input_t = task.output_t = object
    sys.modules.setdefault("task", task)


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def idle_us(call, n: int) -> float:
    import torch

    for _ in range(3):
        call()
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - t)
    torch.cuda.synchronize()
    return sorted(times)[n // 2] / 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("problems", nargs="*", default=["gemv", "gemm", "dual_gemm", "group_gemm"])
    ap.add_argument("--packaged", action="store_true", help="the packaged single files instead")
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args(argv)
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    task_module()
    import torch
    import yaml

    small = torch.zeros(16, device="cuda")
    print(f"{'empty torch op':<44}{idle_us(lambda: small.add_(1.0), args.calls):>8.2f}", flush=True)
    for problem in args.problems:
        # the reference first: a bundle enters its modules under their real names where those are free
        ref = importlib.import_module(f"problems.{problem}.reference")
        if args.packaged:
            out = Path(tempfile.mkdtemp()) / "submission.py"
            pkg = "harness.package" if (root / "harness" / "package.py").exists() else "shared.package"
            subprocess.run([sys.executable, "-m", pkg, problem, "-o", str(out)], cwd=root, check=True,
                           capture_output=True)
            sub = load(out, f"probe_{problem}")
        else:
            sub = importlib.import_module(f"problems.{problem}.submission")
        manifest = yaml.safe_load((root / "problems" / problem / "manifest.yaml").read_text())
        for case in manifest["benchmarks"]:
            data = ref.generate_input(**case, device="cuda")
            label = " ".join(f"{k}={v}" for k, v in case.items() if k != "seed")[:34]
            print(f"{problem:<10}{label:<34}{idle_us(lambda d=data, s=sub: s.custom_kernel(d), args.calls):>8.2f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
