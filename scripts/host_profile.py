"""Where a submission's host time per call goes, on a GPU: `python scripts/host_profile.py [PROBLEM ...]`.

For each problem's first benchmark case, on the submission's fast path: the median host us (GPU kept
busy, shared.timing.host_us_per_call) of the whole custom_kernel call and of its parts: the device
lookup, tensor_key over the tensors the kernel reads, the cache lookup, and the prepared launch (the
DSL's compiled host code: TMA descriptors and the driver's launch).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from shared import problem as P  # noqa: E402
from shared import timing as T  # noqa: E402
from shared.cute import runtime  # noqa: E402
from shared.worker import install_task_module  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("problems", nargs="*", default=["gemv", "gemm", "dual_gemm", "group_gemm"])
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--rotate", type=int, nargs="+", default=[1], help="inputs to rotate over (each a run)")
    args = p.parse_args(argv)
    install_task_module()
    print(f"{'problem':<10}{'part':<28}" + "".join(f"{f'rot {r}':>9}" for r in args.rotate))
    for name in args.problems:
        inputs = [parts_of(name, seed) for seed in range(max(args.rotate))]
        for part in inputs[0]:
            cells = []
            for r in args.rotate:
                us, busy = T.host_us_per_call([parts[part] for parts in inputs[:r]], n=args.calls)
                cells.append(f"{us:>8.2f}{' ' if busy else '*'}")
            print(f"{name:<10}{part:<28}" + "".join(cells))
    print("(us: median host time per call, rotating over that many inputs; * the GPU went idle)")
    return 0


def parts_of(name: str, seed: int) -> dict:
    """The whole call and its parts, as zero-argument callables, on a warmed-up input."""
    prob = P.load_problem(name)
    sub = importlib.import_module(f"problems.{name}.submission")
    case = dict(prob.benchmarks[0])
    data = prob.reference.generate_input(**{**case, "seed": case["seed"] + 42 * seed}, device="cuda")
    for _ in range(3):
        sub.custom_kernel(data)
    torch.cuda.synchronize()
    small = torch.zeros(16, device="cuda")
    if name == "group_gemm":  # lists of groups: the identity of every group's tensors, then the launch
        _, ident = sub._identity(data)
        return {
            "torch: small add_ (scale)": lambda: small.add_(1.0),
            "custom_kernel": lambda: sub.custom_kernel(data),
            "_kernel_tensors(data)": lambda: sub._kernel_tensors(data),
            "_identity(data)": lambda: sub._identity(data),
            "by_identity.get(ident)": lambda: sub._prepared.by_identity.get(ident),
            "prepared launch": sub._prepared.by_identity[ident][0],
        }
    dev = data[0].device
    reads = [data[i] for i in sub._READS[runtime.device_arch(dev)]]
    key = runtime.tensor_key(reads)
    ident = runtime.identity_key(data)
    return {
        "torch: small add_ (scale)": lambda: small.add_(1.0),
        "custom_kernel": lambda: sub.custom_kernel(data),
        "identity_key(data)": lambda: runtime.identity_key(data),
        "by_identity.get(ident)": lambda: sub._prepared.by_identity.get(ident),
        "data[0].device": lambda: data[0].device,
        "device_arch(device)": lambda: runtime.device_arch(dev),
        "tensor_key(reads)": lambda: runtime.tensor_key(reads),
        "cache.get(key)": lambda: sub._prepared.get(key),
        "prepared launch": sub._prepared.get(key),
    }


if __name__ == "__main__":
    raise SystemExit(main())
