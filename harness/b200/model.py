"""The B200 time model of the sm100 kernels, calibrated (what `python -m scripts.b200 --model` prints).

The B200 session (harness/b200/session.py) compares each measured case with it.

Every figure here is a model, not a measurement: nothing in this repository has run on a B200.

    t = max(DRAM bytes / BW, busiest CTA's K steps x step time + reduction) + FIXED

- BW and the FP4 rate: the B200's "realistic SOL" that a top entrant measured (docs/b200-entries.yaml,
  `ceilings`: 5.91 TB/s, 5797 TFLOP/s), not the datasheet's 8 TB/s and 9 PFLOP/s.
- Step time: one 256-deep K step of a 128 x tile_n (x num_b) MMA tile at the per-SM FP4 rate, scaled by
  the shared-memory operand factor `smem_efficiency`: the MMA reads 128 rows of A and tile_n / (CTAs
  per MMA) rows of B from shared memory per K step, and runs at full rate from 64 multiply-adds per row
  read (a 128 x 128 one-CTA tile) up. A 128 x 64 one-CTA tile: 2/3; a 2-CTA pair with 64-wide N: 0.8.
- FIXED: the per-call cost the entries' figures show beyond max(DRAM, MMA): launch and host call
  under the leaderboard's flush-then-time loop, pipeline fill, the last tile's epilogue. Fitted, as
  the median of (entry - max(DRAM, MMA)) over the calibration points (entries whose technique is one
  of ours, docs/b200-entries.yaml `ours`); the spread of those residuals is each case's range. The
  launch floor measured by scripts/launch_floor.py (results/launch-floor/*.json, where committed) is
  the part of FIXED that a near-empty kernel already costs, and the lowest the range may go.

Per-variant estimates (`core(problem, variant, case)`), written from the technique:
  gemm splitk_swap  N on the MMA's 128-row side, M on its N side (64 or 128), K split over a cluster of
                    `splits` CTAs, as the variant's chooser picks them (choose_sm100_splitk); the FP32
                    partials' exchange at DSMEM_BYTES_PER_S per SM plus one cluster barrier (assumptions);
  dual_gemm cta2    cta_group::2 pairs: each CTA loads half of each B tile (smem_efficiency with 2 CTAs
                    per MMA), the 256-row MMA over the pair; the tile the variant's chooser picks
                    (choose_sm100_cta2);
  group_gemm msorted the schedule with the groups by descending M (schedule_sm100.estimated_cost's order);
  group_gemm cta2   A and B swapped on CTA pairs (choose_sm100_cta2): each group's N on the pair's 256
                    rows, its M on the MMA's N side (tile_n, tails padded), the busiest pair's K steps in
                    schedule_sm100.pair_schedule, each SM at smem_efficiency(tile_n, 2).
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from pathlib import Path

import yaml

from shared.devices import B200_SM_COUNT

ROOT = Path(__file__).resolve().parents[2]

ENTRIES = ROOT / "docs" / "b200-entries.yaml"
LAUNCH_FLOOR_DIR = ROOT / "results" / "launch-floor"
SMS = B200_SM_COUNT
K_STEP = 256
TILE_M = 128
CONSERVATIVE = "conservative"
# Assumptions of the split-K estimate (no source; they move the gemm splitk_swap figures by < 0.6 us):
DSMEM_BYTES_PER_S = 200e9  # per SM, the FP32 partials' exchange
CLUSTER_SYNC_US = 0.5  # the reduction's cluster barrier(s)


@functools.cache
def entries() -> dict:
    return yaml.safe_load(ENTRIES.read_text())


def hbm_bytes_per_s() -> float:
    return float(entries()["ceilings"]["hbm_bytes_per_s"])


def sm_flops() -> float:
    return float(entries()["ceilings"]["fp4_flops"]) / SMS


def operand_bytes(m: int, n: int, k: int, num_b: int = 1) -> dict:
    """Bytes of one (batch of a) problem by operand: packed FP4 A and B, their E4M3 scales, fp16 C."""
    return {"A": m * k // 2, "SFA": m * k // 16, "B": num_b * n * k // 2, "SFB": num_b * n * k // 16, "C": 2 * m * n}


def smem_efficiency(tile_n: int, ctas_per_mma: int = 1) -> float:
    """MMA rate over the peak: multiply-adds per shared-memory row read, against a one-CTA 128 x 128 tile's 64."""
    rows_read = TILE_M + tile_n / ctas_per_mma
    return min(1.0, TILE_M * tile_n / rows_read / 64)


def tiled(parts: dict, flops: int, tiles: int, k_steps: int, tile_n: int, num_b: int, ctas_per_mma: int = 1,
          reduce_us: float = 0.0, what: str = "") -> dict:
    """A GEMM-family estimate without FIXED: `k_steps` = the busiest CTA's K steps over all its tiles."""
    bytes_ = sum(parts.values())
    eff = smem_efficiency(tile_n, ctas_per_mma)
    step_us = 2 * TILE_M * tile_n * K_STEP * num_b / (sm_flops() * eff) * 1e6
    dram_us = bytes_ / hbm_bytes_per_s() * 1e6
    mma_us = k_steps * step_us + reduce_us
    return {"bytes": bytes_, "parts": parts, "flops": flops, "tile_n": tile_n, "tiles": tiles,
            "waves": math.ceil(tiles / SMS), "k_steps": k_steps, "step_us": step_us, "efficiency": eff,
            "dram_us": dram_us, "mma_us": mma_us, "core_us": max(dram_us, mma_us),
            "bound": "DRAM" if dram_us >= mma_us else "MMA", "what": what}


# ------------------------------------------------------------------------------------ per technique
def gemv_core(m: int, k: int, l: int) -> dict:
    """CUDA cores streaming A and SFA once: DRAM-bound."""
    parts = {"A": m * k // 2 * l, "SFA": m * k // 16 * l, "b": (k // 2 + k // 16) * l, "C": 2 * m * l}
    bytes_ = sum(parts.values())
    dram_us = bytes_ / hbm_bytes_per_s() * 1e6
    return {"bytes": bytes_, "parts": parts, "flops": 2 * m * k * l, "dram_us": dram_us, "mma_us": 0.0,
            "core_us": dram_us, "bound": "DRAM", "what": "CUDA cores, A streamed once"}


def gemm_like_core(m: int, n: int, k: int, l: int, num_b: int, tile_n: int, ctas_per_mma: int = 1) -> dict:
    parts = {name: b * l for name, b in operand_bytes(m, n, k, num_b).items()}
    tiles = (m // TILE_M) * (n // tile_n) * l
    what = f"128 x {tile_n} tiles" + (", 2-CTA pairs" if ctas_per_mma == 2 else "")
    return tiled(parts, 2 * m * n * k * l * num_b, tiles, math.ceil(tiles / SMS) * (k // K_STEP), tile_n, num_b,
                 ctas_per_mma, what=what)


def gemm_splitk_swap_core(m: int, n: int, k: int, l: int) -> dict | None:
    """N on the MMA's 128-row side, M (64 or 128 wide) on its N side, K split over a cluster, with the
    split and tile the variant's chooser picks (problems/gemm/config.py choose_sm100_splitk); None where
    it does not apply. Each CTA of a cluster receives (splits - 1) / splits of a 128 x tile FP32 partial."""
    from problems.gemm.config import choose_sm100_splitk

    cfg = choose_sm100_splitk(m, n, k, l, SMS)
    if cfg is None:
        return None
    parts = {name: b * l for name, b in operand_bytes(m, n, k).items()}
    splits, mma_n = cfg.splits, cfg.tile_n
    ctas = (n // TILE_M) * (m // mma_n) * l * splits
    partial = TILE_M * mma_n * 4 * (splits - 1) / splits
    reduce_us = partial / DSMEM_BYTES_PER_S * 1e6 + CLUSTER_SYNC_US
    e = tiled(parts, 2 * m * n * k * l, ctas, -(-(k // K_STEP) // splits), mma_n, 1, reduce_us=reduce_us,
              what=f"swapped 128 x {mma_n} tiles, K split {splits} ways")
    e["splits"] = splits
    return e


def group_core(ms, ns, ks, variant: str = CONSERVATIVE) -> dict | None:
    """One persistent launch over every group's tiles: all groups' bytes against the busiest CTA's K
    steps in the variant's schedule (problems/group_gemm/schedule_sm100.py)."""
    from problems.group_gemm.config import choose_sm100, choose_sm100_msorted
    from problems.group_gemm.order import group_rank
    from problems.group_gemm.schedule_sm100 import schedule

    sizes = [(m, n, k, 1) for m, n, k in zip(ms, ns, ks)]
    cfg = (choose_sm100 if variant == CONSERVATIVE else choose_sm100_msorted)(sizes, SMS)
    if cfg is None:
        return None
    parts = {name: sum(operand_bytes(m, n, k)[name] for m, n, k, _ in sizes) for name in ("A", "SFA", "B", "SFB", "C")}
    work = schedule(sizes, cfg.tile_n, SMS, group_rank(sizes, cfg.order))
    busiest = max((sum(sizes[g][2] // K_STEP for g, _, _ in tiles) for tiles in work), default=0)
    e = tiled(parts, sum(2 * m * n * k for m, n, k, _ in sizes), sum(map(len, work)), busiest, cfg.tile_n, 1,
              what=f"128 x {cfg.tile_n} tiles, groups in {cfg.order} order")
    return e


def group_cta2_core(ms, ns, ks) -> dict | None:
    """The swapped pair schedule (problems/group_gemm/schedule_sm100.py pair_schedule) with the tile the
    variant's chooser picks: all groups' bytes against the busiest pair's K steps, each SM computing 128
    rows of N x tile_n rows of M (padded past M); None where the variant does not apply."""
    from problems.group_gemm.config import choose_sm100_cta2
    from problems.group_gemm.schedule_sm100 import pair_schedule

    sizes = [(m, n, k, 1) for m, n, k in zip(ms, ns, ks)]
    cfg = choose_sm100_cta2(sizes, SMS)
    if cfg is None:
        return None
    parts = {name: sum(operand_bytes(m, n, k)[name] for m, n, k, _ in sizes) for name in ("A", "SFA", "B", "SFB", "C")}
    work = pair_schedule(sizes, cfg.tile_n, SMS)
    busiest = max((sum(sizes[g][2] // K_STEP for g, _, _ in tiles) for tiles in work), default=0)
    return tiled(parts, sum(2 * m * n * k for m, n, k, _ in sizes), 2 * sum(map(len, work)), busiest, cfg.tile_n, 1,
                 ctas_per_mma=2, what=f"swapped N 256 x M {cfg.tile_n} tiles, 2-CTA pairs")


def core(problem: str, variant: str, case: dict) -> dict | None:
    """The estimate hook: the model of `variant` (a name in SM100_VARIANTS, or a technique this model
    knows) on one benchmark case, without FIXED; None where the model has none or it does not apply."""
    if problem == "gemv":
        return gemv_core(case["m"], case["k"], case["l"]) if variant == CONSERVATIVE else None
    if problem == "group_gemm":
        if variant == "cta2":
            return group_cta2_core(case["m"], case["n"], case["k"])
        return group_core(case["m"], case["n"], case["k"], variant) if variant in (CONSERVATIVE, "msorted") else None
    m, n, k, l = (case[x] for x in ("m", "n", "k", "l"))
    if problem == "gemm":
        from problems.gemm.config import choose_sm100

        if variant == CONSERVATIVE:
            return gemm_like_core(m, n, k, l, 1, choose_sm100(m, n, k, l, SMS).tile_n)
        return gemm_splitk_swap_core(m, n, k, l) if variant == "splitk_swap" else None
    from problems.dual_gemm.config import choose_sm100, choose_sm100_cta2

    if variant == CONSERVATIVE:
        return gemm_like_core(m, n, k, l, 2, choose_sm100(m, n, k, l, SMS).tile_n)
    if variant != "cta2":
        return None
    cfg = choose_sm100_cta2(m, n, k, l, SMS)
    return None if cfg is None else gemm_like_core(m, n, k, l, 2, cfg.tile_n, ctas_per_mma=2)


MODELLED = {"gemv": (CONSERVATIVE,), "gemm": (CONSERVATIVE, "splitk_swap"), "dual_gemm": (CONSERVATIVE, "cta2"),
            "group_gemm": (CONSERVATIVE, "msorted", "cta2")}


# ------------------------------------------------------------------------------------ calibration
def manifest(problem: str) -> dict:
    return yaml.safe_load((ROOT / "problems" / problem / "manifest.yaml").read_text())


def benchmark_cases(problem: str) -> list[dict]:
    return manifest(problem)["benchmarks"]


def launch_floor(directory: Path | None = None) -> dict | None:
    """The newest committed launch-floor measurement (scripts/launch_floor.py) from a GPU: its file, device
    and the near-empty CuTe kernel's flushed mean (the torch op's where the kernel was skipped)."""
    directory = directory or LAUNCH_FLOOR_DIR
    found = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        doc = json.loads(path.read_text())
        ms = doc.get("measurements") or {}
        name = "cute_empty" if "cute_empty" in ms else "torch_add" if "torch_add" in ms else None
        if name and not str(doc.get("device", "cpu")).startswith("cpu"):
            found.append((doc.get("date") or "", path, doc, name))
    if not found:
        return None
    date, path, doc, name = max(found, key=lambda f: (f[0], f[1].name))
    return {"file": path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path),
            "device": doc.get("device"), "date": date, "kernel": name, "us": flushed_mean_us(doc, name)}


def flushed_mean_us(doc: dict, name: str) -> float:
    return float(doc["measurements"][name]["flush"]["mean"])


@functools.cache
def calibration() -> dict:
    """The calibration points (entries with `ours`), FIXED (median residual), the residuals' spread and
    how well one FIXED fits them (rms and worst error), and the launch floor where one is committed."""
    points = []
    for problem, items in entries()["entries"].items():
        cases = benchmark_cases(problem)
        for entry in items:
            if not entry.get("ours"):
                continue
            for i, (case, us) in enumerate(zip(cases, entry["us"])):
                c = core(problem, entry["ours"], case)
                if c is not None:
                    points.append({"problem": problem, "entry": entry["name"], "variant": entry["ours"], "case": i,
                                   "entry_us": us, "core_us": c["core_us"], "residual_us": us - c["core_us"]})
    residuals = [p["residual_us"] for p in points]
    fixed = statistics.median(residuals)
    errors = [p["core_us"] + fixed - p["entry_us"] for p in points]
    floor = launch_floor()
    low = min(residuals) if floor is None else max(min(residuals), floor["us"])
    return {"points": points, "fixed_us": fixed, "low_us": low, "high_us": max(residuals),
            "rms_us": math.sqrt(sum(e * e for e in errors) / len(errors)), "worst_us": max(map(abs, errors)),
            "launch_floor": floor}


def expected(problem: str, case: dict, variant: str = CONSERVATIVE) -> dict | None:
    """The model's time of `variant` on `case`: core + FIXED, with the range from the residuals' spread."""
    c = core(problem, variant, case)
    if c is None:
        return None
    cal = calibration()
    return {**c, "fixed_us": cal["fixed_us"], "expected_us": c["core_us"] + cal["fixed_us"],
            "range_us": (c["core_us"] + cal["low_us"], c["core_us"] + cal["high_us"])}


def best_entries(problem: str) -> tuple[dict | None, dict]:
    """(the write-up's fastest entry, {our variant: the entry with its technique})."""
    items = entries()["entries"].get(problem, [])
    return next((e for e in items if e.get("best")), None), {e["ours"]: e for e in items if e.get("ours")}


def faster_than_entry(problem: str, variant: str, i: int, e: dict, entry: dict) -> str | None:
    """Why the model comes out faster than the entry with the same technique on case i (None if it does not)."""
    ref = entry["us"][i]
    if e["expected_us"] >= ref:
        return None
    fixed = e["fixed_us"]
    if e["bound"] == "DRAM":
        reached = e["bytes"] / max(ref - fixed, 1e-9) / 1e6
        why = (f"DRAM-bound in the model, which streams at the measured {hbm_bytes_per_s() / 1e12:.2f} TB/s from "
               f"the first byte to the last; after the fitted fixed cost {entry['name']} moves the bytes at "
               f"{reached:.2f} TB/s")
    else:
        share = e["mma_us"] / max(ref - fixed, 1e-9)
        why = (f"MMA-bound in the model, which assumes no stall between K steps (TMA latency hidden, no barrier "
               f"waits) at the measured FP4 rate x {e.get('efficiency', 1):.2f}; after the fitted fixed cost "
               f"{entry['name']}'s mainloop runs at {share:.2f} of that")
    return f"{problem} case {i} {variant}: model {e['expected_us']:.2f} us < {entry['name']} {ref} us: {why}"


def calibration_lines() -> list[str]:
    cal = calibration()
    floor = cal["launch_floor"]
    lines = [f"calibration: BW {hbm_bytes_per_s() / 1e12:.2f} TB/s and FP4 {sm_flops() * SMS / 1e15:.2f} PFLOP/s "
             f"(measured on a B200 by the entrant, {entries()['ceilings']['source']})",
             f"calibration: FIXED = {cal['fixed_us']:.2f} us per call, the median of {len(cal['points'])} residuals "
             f"(entry - max(DRAM, MMA)) of the entries with our techniques (docs/b200-entries.yaml); residuals "
             f"{min(p['residual_us'] for p in cal['points']):.2f} .. {cal['high_us']:.2f} us",
             f"calibration: with one FIXED the model reproduces those {len(cal['points'])} figures to "
             f"{cal['rms_us']:.2f} us rms, {cal['worst_us']:.2f} us at worst; each case's range is core + "
             f"[{cal['low_us']:.2f}, {cal['high_us']:.2f}] us"]
    if floor is None:
        lines.append(f"launch floor: uncalibrated (no results/launch-floor/*.json), FIXED = {cal['fixed_us']:.2f} us "
                     "from the entries alone (`python -m scripts.launch_floor --out results/launch-floor/NAME.json`)")
    else:
        lines.append(f"launch floor: {floor['us']:.2f} us ({floor['kernel']} in the flushed loop, {floor['device']}, "
                     f"{floor['file']}); of FIXED = {cal['fixed_us']:.2f} us the rest is pipeline fill, the last "
                     "epilogue and the host call")
    return lines
