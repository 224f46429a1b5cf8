"""Time the sm90 grouped GEMM's tile orders (problems/group_gemm/kernel_sm90.py, tile_table) on the
manifest's benchmark cases, each launch after an L2 flush, CUDA events around the launch alone.

    python scripts/group_order.py [--samples 30]      (an H100, CuTe DSL importable)

Prints one line per case: the median us of each order; the results README keeps the runs.
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from problems.group_gemm import kernel_sm90 as K  # noqa: E402
from shared.problem import load_problem  # noqa: E402
from shared.timing import Clock  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=30)
    args = ap.parse_args()
    problem = load_problem("group_gemm")
    clock = Clock("cuda", 1 << 30)
    print("case" + "".join(f"{o:>14}" for o in K.ORDERS))
    for i, spec in enumerate(problem.benchmarks):
        data = problem.reference.generate_input(m=spec["m"], n=spec["n"], k=spec["k"], g=spec["g"],
                                                seed=spec["seed"], device="cuda")
        sizes = [tuple(s) for s in data[3]]
        launches = {o: K.prepare(data, sizes, o) for o in K.ORDERS}
        times = {o: [] for o in K.ORDERS}
        for _ in range(args.samples):
            for o, launch in launches.items():  # interleaved: drifting clocks hit every order alike
                clock.sync()
                clock.flush()
                times[o].append(clock.time_ns(launch)[0] / 1e3)
        print(f"{i}" + "".join(f"{statistics.median(times[o]):14.1f}" for o in K.ORDERS), flush=True)


if __name__ == "__main__":
    main()
