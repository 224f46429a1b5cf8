"""Where a submission's host time per call goes, on a GPU: `python lab/host_profile.py [PROBLEM ...]
[--rotate 1 4] [--cases all] [--json OUT]`.

For each problem's first benchmark case (group_gemm: also 16 groups, the second case's groups twice), on
the submission's fast path: the median host us (GPU kept busy, harness.timing.host_us_per_call) of the
whole custom_kernel call and of its parts: the check that the same tuple is unchanged
(PreparedCalls.seen: shared/cute/host_check.py, compiled or Python, whichever runs), the Python
check's reads alone (version and address of the kernel's tensors), the identity key a new tuple of the
same tensors is looked up by, and the prepared launch (the DSL's compiled host code: TMA descriptors
and the driver's launch). Three scales come first: a small torch op, the driver's launch of an empty
kernel (cuda-python cuLaunchKernel), and the DSL's launch of a near-empty kernel.
The `idle` column is the same median with the GPU idle (a synchronize before each call, one input): what
a caller that synchronizes between calls pays. `--waits W ...` adds a column per W: idle as well, but the
synchronize first waits out a GPU spin of W us, as it waits out a kernel of that length; a part that
launches waits out its own kernel too. A host that idled longer runs the next call slower, and an
empty op measured right after a synchronize never waited: these columns show how much of a call's idle
figure is that wait.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from harness import problem as P  # noqa: E402
from harness import timing as T  # noqa: E402
from harness.worker import install_task_module  # noqa: E402
from shared import call_cache  # noqa: E402
from shared.cute import host_check  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("problems", nargs="*", default=["gemv", "gemm", "dual_gemm", "group_gemm"])
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--rotate", type=int, nargs="+", default=[1, 4], help="inputs to rotate over (each a column)")
    p.add_argument("--cases", choices=("first", "all"), default="first", help="benchmark cases per problem")
    p.add_argument("--waits", type=float, nargs="*", default=[], help="GPU spin in us before each idle call (columns)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    install_task_module()
    rows = []
    print(f"{'case':<26}{'part':<34}" + "".join(f"{f'rot {r}':>9}" for r in args.rotate) + f"{'idle':>9}"
          + "".join(f"{f'after {w:g}':>11}" for w in args.waits), flush=True)

    def measure(case: str, parts_per_input: list[dict]) -> None:
        for part in parts_per_input[0]:
            cells = {}
            for r in args.rotate:
                cells[r], busy = T.host_us_per_call([parts[part] for parts in parts_per_input[:r]], n=args.calls)
            call = parts_per_input[0][part]
            idle = T.host_idle_us([call], n=args.calls)
            after = {w: T.host_idle_us([call], n=args.calls, sync=spin_then_sync(w)) for w in args.waits}
            rows.append({"case": case, "part": part, "us": cells, "idle_us": idle, "idle_after_spin_us": after})
            print(f"{case:<26}{part:<34}" + "".join(f"{cells[r]:>9.2f}" for r in args.rotate) + f"{idle:>9.2f}"
                  + "".join(f"{after[w]:>11.2f}" for w in args.waits), flush=True)

    measure("scale", [scales()] * max(args.rotate))
    for name in args.problems:
        prob = P.load_problem(name)
        chosen = prob.benchmarks if args.cases == "all" else prob.benchmarks[:1]
        cases = {f"{name} {label_of(c)}": dict(c) for c in chosen}
        if name == "group_gemm":
            g = dict(prob.benchmarks[1])
            cases[f"{name} g=16"] = {**g, "m": g["m"] * 2, "n": g["n"] * 2, "k": g["k"] * 2, "g": 16}
        for label, case in cases.items():
            measure(label, [parts_of(name, case, seed) for seed in range(max(args.rotate))])
    print("(us: median host time per call with the GPU kept busy, rotating over that many inputs)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "host": platform.node(), "torch": torch.__version__,
                       "python": platform.python_version(), "rows": rows}, f, indent=1)
    return 0


def spin_then_sync(wait_us: float):
    """A synchronize that first waits out a GPU spin of `wait_us` (none for 0)."""
    cycles = int(wait_us * T._sleep_cycles_per_ms() / 1e3)

    def sync() -> None:
        if cycles:
            torch.cuda._sleep(cycles)
        torch.cuda.synchronize()

    return sync


def label_of(case: dict) -> str:
    return f"g={case['g']}" if "g" in case else "x".join(str(case[k]) for k in ("m", "n", "k") if k in case)


def scales() -> dict:
    """A small torch op, and the driver's launch of an empty kernel through cuda-python."""
    from cuda.bindings import driver

    small = torch.zeros(16, device="cuda")
    ptx = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry empty() { ret; }\n"
    err, module = driver.cuModuleLoadData(ptx)
    err2, fn = driver.cuModuleGetFunction(module, b"empty")
    if err or err2:
        raise RuntimeError(f"loading the empty kernel: {err} {err2}")
    out = {"torch: small add_": lambda: small.add_(1.0),
           "driver: empty kernel launch": lambda: driver.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0)}
    try:  # the DSL's launch of a near-empty kernel, bound as the submissions bind theirs
        from scripts.launch_floor import cute_empty

        out["cute: empty kernel, prepared"] = cute_empty()
    except ImportError:
        pass
    return out




def parts_of(name: str, case: dict, seed: int) -> dict:
    """The whole call and its parts, as zero-argument callables, on a warmed-up input."""
    prob = P.load_problem(name)
    sub = importlib.import_module(f"problems.{name}.submission")
    data = prob.reference.generate_input(**{**case, "seed": case["seed"] + 42 * seed}, device="cuda")
    for _ in range(3):
        sub.custom_kernel(data)
    torch.cuda.synchronize()
    dispatch = getattr(sub, "_dispatch", sub.custom_kernel)  # group_gemm wraps its Dispatch in a function
    seen = dispatch.prepared.seen(data)
    if seen is None:
        raise RuntimeError(f"{name}: the call was not remembered (no kernel takes it on this GPU?)")
    tensors = seen.tensors
    return {
        "custom_kernel": lambda: sub.custom_kernel(data),
        "seen(data): unchanged?": lambda: dispatch.prepared.seen(data),
        f"Python version+address ({len(tensors)} tensors)": lambda: host_check.tensor_state(tensors),
        "identity key (a new tuple)": lambda: (call_cache.identity_key(dispatch.tensors(data)), dispatch.sizes(data)),
        "prepared launch": seen.call,
    }


if __name__ == "__main__":
    raise SystemExit(main())
