"""What `python -m scripts.b200 --model` prints: the calibration, the model's estimate per benchmark case
(bytes, DRAM and MMA time, the range, the SOL) and, per problem, the conservative kernel and every
variant next to the B200 entries with the same technique. Every time of ours is labelled "model"."""

from __future__ import annotations

import math

from harness.b200 import PROBLEMS
from harness.b200 import model as M
from harness.b200.variants import variant_registry
from shared.devices import B200_SM_COUNT


def expected_us(problem: str, case: dict) -> dict:
    """The model's estimate of the conservative kernel on one benchmark case."""
    return M.expected(problem, case, M.CONSERVATIVE)


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values))


def tiling_line(e: dict) -> str:
    """How a GEMM-family estimate comes about: tiles, waves, the K steps of the busiest CTA and what
    one step costs, the bytes by operand, the FLOPs."""
    parts = " + ".join(f"{name} {b / 1e6:.1f}" for name, b in e["parts"].items())
    waves = f"{e['waves']} wave" + ("s" if e["waves"] > 1 else "")
    return (f"    128 x {e['tile_n']} tiles: {e['tiles']} ({waves}), busiest CTA {e['k_steps']} K steps x "
            f"{e['step_us']:.3f} us; bytes {parts} MB; {e['flops'] / 1e9:.1f} GFLOP")


def model_table() -> str:
    """The calibration; one line per benchmark case (bytes, DRAM and MMA time, expected time and range,
    SOL), the GEMM family's tiling under it, per problem the geomean against the SOL's; then per problem
    the conservative kernel and each variant next to the entries (`variant_tables`)."""
    lines = [*M.calibration_lines(), ""]
    for problem in PROBLEMS:
        sol = M.manifest(problem)["speed_of_light_b200_us"]
        expected = []
        for case, s in zip(M.benchmark_cases(problem), sol):
            e = expected_us(problem, case)
            expected.append(e["expected_us"])
            shape = " ".join(f"{k}={v}" for k, v in case.items() if k != "seed")
            lo, hi = e["range_us"]
            lines.append(f"{problem:9} {shape:28} {e['bytes'] / 1e6:7.1f} MB  dram {e['dram_us']:6.2f} us  "
                         f"mma {e.get('mma_us', 0):6.2f} us  expected {e['expected_us']:6.2f} us "
                         f"[{lo:.1f}, {hi:.1f}]  SOL {s:6.3f} us")
            if "tiles" in e:
                lines.append(tiling_line(e))
        mean, mean_sol = geomean(expected), geomean(sol[: len(expected)])
        lines.append(f"{problem:9} geomean: expected {mean:.2f} us, SOL {mean_sol:.3f} us ({mean / mean_sol:.2f}x)")
    lines += ["", *variant_tables()]
    return "\n".join(lines)


def registered(problem: str) -> dict:
    try:
        return variant_registry(problem)
    except (ImportError, AttributeError):
        return {}


def variant_tables() -> list[str]:
    """Per problem: each case's modelled time of the conservative kernel and of every variant (registered
    in config.py SM100_VARIANTS or modelled from its technique), next to the entry with the same technique
    and the write-up's fastest; then every case where the model is faster than the same-technique entry,
    with the reason. Every time of ours is labelled "model"."""
    from shared.sm100_variants import case_shape, chooser_args

    lines, faster = [], []
    for problem in PROBLEMS:
        reg = registered(problem)
        names = list(dict.fromkeys([*reg, *M.MODELLED[problem]]))
        best, same = M.best_entries(problem)
        lines.append(f"{problem}: model us per case [range]; entries measured on a B200 by their author")
        header = ["case"] + [f"{n} (model)" + ("" if n in reg else " [not registered]") for n in names]
        header += [f"{e['name']} (entry, = {v})" for v, e in same.items()]
        if best is not None:
            header.append(f"{best['name']} (best entry)")
        lines.append(" | ".join(header))
        for i, case in enumerate(M.benchmark_cases(problem)):
            shape = case_shape(problem, case)
            row = [f"{i}"]
            for name in names:
                variant = reg.get(name)
                if variant is not None and variant.choose(*chooser_args(problem, shape, B200_SM_COUNT)) is None:
                    row.append("n/a (does not apply)")
                    continue
                e = M.expected(problem, case, name)
                if e is None:
                    row.append("no estimate")
                    continue
                lo, hi = e["range_us"]
                row.append(f"{e['expected_us']:.2f} [{lo:.1f}, {hi:.1f}] {e['bound']}")
                if name in same:
                    why = M.faster_than_entry(problem, name, i, e, same[name])
                    if why:
                        faster.append(why)
            row += [f"{e['us'][i]}" for e in same.values()]
            if best is not None:
                row.append(f"{best['us'][i]}")
            lines.append(" | ".join(row))
        lines.append("")
    lines.append("model faster than the entry with the same technique:" + ("" if faster else " none"))
    lines += [f"  {w}" for w in faster]
    return lines
