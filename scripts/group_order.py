"""Time the sm90 grouped GEMM's tile orders (problems/group_gemm/kernel_sm90.py, tile_table), its grid
of one CTA per tile (`per_tile`) and candidate configs on the manifest's benchmark cases, each launch
after an L2 flush, CUDA events around the launch alone.

    python scripts/group_order.py [--samples 30] [--configs] [--only NAME ...]   (an H100, CuTe DSL importable)

Prints one line per case: the median us of each variant; the results README keeps the runs.
"""

import argparse
import os
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from harness.problem import load_problem  # noqa: E402
from harness.progress import Progress  # noqa: E402
from harness.timing import Clock  # noqa: E402
from problems.group_gemm import kernel_sm90 as K  # noqa: E402

CANDIDATES = {  # smaller decoded-A batches free shared memory for deeper packed rings
    "b2_s4_st3": dict(a_batch=2, a_slots=4, stages=3),
    "b2_s4_st4": dict(a_batch=2, a_slots=4, stages=4),
    "b2_s6_st3": dict(a_batch=2, a_slots=6, stages=3),
    "cwg_regs216": dict(consumer_regs=216, producer_regs=40),
}

PER_TILE = 1 << 30  # a grid above the tile count: one CTA per tile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--configs", action="store_true", help="also time candidate configs (long_first order)")
    ap.add_argument("--only", nargs="+", help="time only these orders / candidate configs")
    args = ap.parse_args()
    variants = {o: (o, K.SM90, None) for o in K.ORDERS}
    # the grid of one CTA per tile (the hardware hands the next tile to the first SM that frees up,
    # each CTA fills its pipeline anew) against the default, one CTA per SM running several tiles
    variants["per_tile"] = ("long_first", K.SM90, PER_TILE)
    if args.configs or args.only:
        variants |= {name: ("long_first", replace(K.SM90, **kw), None) for name, kw in CANDIDATES.items()}
    if args.only:
        variants = {v: variants[v] for v in args.only}
    problem = load_problem("group_gemm")
    clock = Clock("cuda", 1 << 30)
    print("case" + "".join(f"{v:>14}" for v in variants))
    progress = Progress("group_gemm tile orders", len(problem.benchmarks))
    for i, spec in enumerate(problem.benchmarks):
        progress.step(i + 1, f"g={spec['g']}")
        data = problem.reference.generate_input(m=spec["m"], n=spec["n"], k=spec["k"], g=spec["g"],
                                                seed=spec["seed"], device="cuda")
        sizes = [tuple(s) for s in data[3]]
        launches = {v: K.prepare(data, sizes, o, cfg, ctas) for v, (o, cfg, ctas) in variants.items()}
        times = {v: [] for v in variants}
        for _ in range(args.samples):
            for o, launch in launches.items():  # interleaved: drifting clocks hit every order alike
                clock.sync()
                clock.flush()
                times[o].append(clock.time_ns(launch)[0] / 1e3)
        print(f"{i:<4}" + "".join(f"{statistics.median(times[v]):14.1f}" for v in variants), flush=True)
    progress.done()


if __name__ == "__main__":
    main()
