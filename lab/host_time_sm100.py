"""Host time per call of the sm100 path, up to the driver call, on a machine without a B200:
`python lab/host_time_sm100.py [--problems gemv gemm dual_gemm group_gemm] [--calls 2000] [--json OUT]`.

The sm100 kernels cannot launch on an H100, but everything a call does before the launch can run
there: the submission's lookup of its prepared launch (tensor_key over the tensors it reads), or on
a miss the checks, the config choice, the compile (for sm_100a, no GPU needed) and the marshalling.
This script makes the submissions take their sm100 branch on the device at hand and swaps the two
calls that reach the driver for recorded no-ops:
  - launch_binding.checked_call (the DSL's plain call, taken once per prepared launch), and
  - the executor's C entry point (the DSL's compiled host code, which encodes the TMA descriptors
    and calls cuLaunchKernel), replaced by a Python function that records its argument array.
What the no-op leaves out is that entry point itself; on the sm90 path the same PreparedLaunch
calls the real one, and the evaluator's host figures include it.

Each problem's first benchmark case of the manifest; median us per call over `--calls` calls on one
input (the leaderboard's pattern) and rotating over 4 inputs. The tuples live on the GPU at hand (any
CUDA device: the checks want CUDA tensors). Prints a table; --json writes the figures.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import sys
import time
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")  # the sm100 gemv compiles for the arch in the env


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problems", nargs="+", default=["gemv", "gemm", "dual_gemm", "group_gemm"])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    from harness import problem as P
    from harness.worker import install_task_module
    from shared import device_facts
    from shared.cute import launch_binding

    install_task_module()  # group_gemm's submission starts with the leaderboard's `from task import ...`

    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else None
    if device is None:
        raise SystemExit("host_time_sm100: needs a CUDA device for real device addresses (any GPU)")
    device_facts._ARCH_OF_DEVICE[device] = "sm100"  # take the sm100 branch on this device
    recorded = []
    launch_binding.checked_call = lambda fn, fn_args: recorded.append(("checked", fn))

    class RecordingExecutor:
        """The executor's halves with the C entry point swapped for a recorder."""

        cuda_result = None

        def __init__(self):
            self.jit_module = SimpleNamespace(capi_func=recorded.append)

        @staticmethod
        def _get_invoke_packed_args(exe_args):
            import ctypes

            return (ctypes.c_void_p * len(exe_args))(*exe_args)

    launch_binding._executor = lambda fn: RecordingExecutor()

    rows = []
    for name in args.problems:
        prob = P.load_problem(name)
        sub = importlib.import_module(f"problems.{name}.submission")
        case = dict(prob.benchmarks[0])
        datas = [prob.reference.generate_input(**{**case, "seed": case["seed"] + 42 * i}, device=device)
                 for i in range(4)]
        t0 = time.perf_counter()
        for d in datas:  # prepare (checks, compile, marshal) and the first, checked call
            sub.custom_kernel(d)
            sub.custom_kernel(d)
        first_s = time.perf_counter() - t0
        entries = sum(1 for r in recorded if not isinstance(r, tuple))
        assert entries >= 4, f"{name}: the sm100 launch was not reached ({recorded[-3:]})"
        calls = [lambda d=d, f=sub.custom_kernel: f(d) for d in datas]
        same, rot = _median_us(calls[:1], args.calls), _median_us(calls, args.calls)
        rows.append({"problem": name, "case": P.describe_case(case), "host_us": same, "host_rotating_us": rot,
                     "prepare_s": first_s / 4})
        recorded.clear()

    cpu = platform.processor() or platform.machine()
    print(f"sm100 path, launch swapped for a recorded no-op; host {platform.node()} ({cpu}), "
          f"torch {torch.__version__}, GPU {torch.cuda.get_device_name()}")
    print(f"{'problem':<10} {'case':<40} {'same us':>8} {'rotating us':>12} {'first call s':>13}")
    for r in rows:
        print(f"{r['problem']:<10} {r['case']:<40} {r['host_us']:>8.2f} {r['host_rotating_us']:>12.2f} "
              f"{r['prepare_s']:>13.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"what": "sm100 host path up to the driver call (recorded no-op)", "rows": rows,
                       "torch": torch.__version__, "device": torch.cuda.get_device_name(),
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, f, indent=1)
    return 0


def _median_us(calls, n: int) -> float:
    """Median us of one call, taking `calls` in turn."""
    times = []
    for i in range(n):
        call = calls[i % len(calls)]
        t = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1e3


if __name__ == "__main__":
    raise SystemExit(main())
