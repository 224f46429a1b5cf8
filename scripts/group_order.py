"""Time the sm90 grouped GEMM's tile orders (problems/group_gemm/kernel_sm90.py, tile_table; the config
the submission chooses), its grid of one CTA per tile (`per_tile`), candidate configs and the pair
kernel's count of pair tiles on the manifest's benchmark cases, each launch after an L2 flush, CUDA
events around the launch alone; every variant's output is checked against the reference once per
case first (C poisoned).

    python scripts/group_order.py [--samples 30] [--configs] [--only NAME ...] [--pairs FRACTION ...]
    (an H100, CuTe DSL importable)

Prints one line per case: the median us of each variant; the results README keeps the runs.
"""

import argparse
import os
import statistics
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from harness.check import check_groups  # noqa: E402
from harness.problem import load_problem  # noqa: E402
from harness.progress import Progress  # noqa: E402
from harness.timing import Clock  # noqa: E402
from problems.group_gemm import kernel_sm90 as K  # noqa: E402
from problems.group_gemm.config import SM90, SM90_PAIRS  # noqa: E402

CANDIDATES = {  # smaller decoded-A batches free shared memory for deeper packed rings
    "b2_s4_st3": replace(SM90, a_batch=2, a_slots=4, stages=3),
    "b2_s4_st4": replace(SM90, a_batch=2, a_slots=4, stages=4),
    "b2_s6_st3": replace(SM90, a_batch=2, a_slots=6, stages=3),
    "cwg_regs216": replace(SM90, consumer_regs=216, producer_regs=40),
    # 11 decoder warps instead of 7 (640 threads start with 96 registers each: fewer for the consumers)
    "dwg3": replace(SM90, n_dwg=3, producer_regs=40, consumer_regs=176),
    "dwg3_p48": replace(SM90, n_dwg=3, producer_regs=48, consumer_regs=168),
    # pairs of 128-row B tiles per CTA, mixed with single ones (paired_table)
    "pairs": SM90_PAIRS,
    # where the time goes (wrong results, not checked): without the decoders' A decode, the consumers' B decode
    "skip_a": replace(SM90, debug_skip=1),
    "skip_b": replace(SM90, debug_skip=2),
    "pairs_skip_a": replace(SM90_PAIRS, debug_skip=1),
    "pairs_skip_b": replace(SM90_PAIRS, debug_skip=2),
}

PER_TILE = 1 << 30  # a grid above the tile count: one CTA per tile


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--configs", action="store_true", help="also time candidate configs (long_first order)")
    ap.add_argument("--only", nargs="+", help="time only these orders / candidate configs")
    ap.add_argument("--pairs", nargs="+", type=float, default=[],
                    help="also time the pair kernel keeping these fractions of its pair tiles whole (pairs_F)")
    args = ap.parse_args()
    variants = {o: dict(order=o) for o in K.ORDERS}  # K.prepare's arguments
    # the grid of one CTA per tile (the hardware hands the next tile to the first SM that frees up,
    # each CTA fills its pipeline anew) against the default, one CTA per SM running several tiles
    variants["per_tile"] = dict(ctas=PER_TILE)
    # the kernel of pairs of B tiles with every tile a pair, or none
    variants["pairs_all"] = dict(config=SM90_PAIRS, pairs=K.ALL_PAIRS)
    variants["pairs_none"] = dict(config=SM90_PAIRS, pairs=0)
    if args.configs or args.only:
        variants |= {name: dict(config=config) for name, config in CANDIDATES.items()}
    if args.only:
        variants = {v: variants[v] for v in args.only}
    problem = load_problem("group_gemm")
    clock = Clock("cuda", 1 << 30)
    progress = Progress("group_gemm tile orders", len(problem.benchmarks))
    for i, spec in enumerate(problem.benchmarks):
        progress.step(i + 1, f"g={spec['g']}")
        data = problem.reference.generate_input(m=spec["m"], n=spec["n"], k=spec["k"], g=spec["g"],
                                                seed=spec["seed"], device="cuda")
        sizes = [tuple(s) for s in data[3]]
        candidates = len(K.tile_table(sizes, "long_first", 2))
        for f in args.pairs:
            variants[f"pairs_{f:g}"] = dict(config=SM90_PAIRS, pairs=round(f * candidates))
        if i == 0:
            print("case" + "".join(f"{v:>14}" for v in variants))
        launches = {v: K.prepare(data, sizes, **kw) for v, kw in variants.items()}
        want = problem.reference.ref_kernel(([tuple(t.clone() for t in grp) for grp in data[0]], *data[1:]))
        for v, launch in launches.items():  # every variant checked once, C poisoned first
            if variants[v].get("config", SM90).debug_skip:
                continue
            for _, _, c in data[0]:
                c.fill_(float("nan"))
            launch()
            ok, msg = check_groups([c for _, _, c in data[0]], want, 1e-3, 1e-3)
            if not ok:
                raise SystemExit(f"case {i}, {v}: wrong result: {msg}")
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
