"""The work the sm90 GEMM family's chosen configs do on each benchmark case, counted from the choosers
and the grouped schedule (no GPU, no CuTe DSL): how far each shape's tiling is from doing every
multiply once and decoding every FP4 value once.

    python -m scripts.sm90_work [gemm dual_gemm group_gemm] [--sms 132]

Per case: the config the submission picks, its CTAs (a grouped CTA runs a list of tiles), and, for the
busiest CTA against an ideal CTA that does 1/sms of the real work:
- MMA: the multiplies its wgmmas issue (a partial S tile is computed whole, or its first half where the
  config has half_s_tiles) over real M*N*K / sms (dual: twice N);
- decode: the FP4 values it decodes over (every operand's values once) / sms. The S side is decoded
  into shared memory by the decoder warps, the R side into registers by the consumers (sm90_gemm.py):
  each S tile is decoded once per R tile it meets and each R tile once per S tile, so the smaller the
  tile, the more often a value is decoded. Grouped tiles skip the S rows past M; the GEMMs' do not.
- S / R decodes: how often each value of the S side and of the R side is decoded, on average.
A ratio of 1.0 is what a perfectly spread grid of tiles covering whole operands would do; the
profiles (scripts/profile_sm90.py) say which of the two the time follows.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # `python scripts/sm90_work.py` as well as `python -m scripts.sm90_work`
    sys.path.insert(0, str(REPO))

from harness.problem import load_problem  # noqa: E402
from harness.text_table import plain_table  # noqa: E402
from shared.devices import H100_SM_COUNT  # noqa: E402

PROBLEMS = ("gemm", "dual_gemm", "group_gemm")


@dataclass(frozen=True)
class Tile:
    """One CTA's share of an output tile: rows of every S operand it decodes (the grouped tiles skip
    rows past M) and computes (a partial tile whole, or half of it), rows of every R operand, and its K."""
    s_decoded: int
    s_computed: int
    r_rows: int
    k: int

    def macs(self) -> int:
        return self.s_computed * self.r_rows * self.k

    def decodes(self) -> int:
        return (self.s_decoded + self.r_rows) * self.k


@dataclass(frozen=True)
class Work:
    config: str
    per_cta: list[list[Tile]]  # each CTA's tiles
    real_macs: int
    real_values: int  # FP4 values of every operand
    s_per_value: float  # how often an S-side value is decoded, on average
    r_per_value: float

    def busiest(self, cost) -> int:
        return max(sum(cost(t) for t in tiles) for tiles in self.per_cta)

    def ratios(self, sms: int) -> tuple[float, float]:
        """(MMA, decode) of the busiest CTA over an ideal CTA's 1/sms of the real work."""
        return (self.busiest(Tile.macs) / (self.real_macs / sms),
                self.busiest(Tile.decodes) / (self.real_values / sms))


def _named(config, candidates: dict) -> str:
    return next((name for name, c in candidates.items() if c == config), repr(config))


def gemm_family_work(problem: str, m: int, n: int, k: int, sms: int = H100_SM_COUNT) -> Work:
    """The GEMM's or dual GEMM's chosen config on one shape: one tile per CTA on sm90_gemm._roles' grid,
    or with dealt K tiles each CTA's segments (sm90_deal_k.segments) on one CTA per SM; with share_s a pair
    of CTAs decodes each S tile once, the first CTA the larger part (Sm90Config.decoded_rows)."""
    if problem == "gemm":
        from problems.gemm.config import SM90_CANDIDATES, choose_sm90
        num_b = 1
    else:
        from problems.dual_gemm.config import SM90_CANDIDATES, choose_sm90
        num_b = 2
    cfg = choose_sm90(m, n, k)
    s_total, r_total = (n, m) if cfg.swap_ab else (m, n)
    ns, nr = (num_b, 1) if cfg.swap_ab else (1, num_b)  # operands on each side
    rows_s, rows_r = cfg.smem_rows, cfg.reg_rows * cfg.r_tiles
    grid_s, grid_r = -(-s_total // rows_s), r_total // rows_r
    tile = Tile(cfg.decoded_rows * ns, rows_s * ns, rows_r * nr, k // cfg.splits)
    per_cta = [[tile]] * (grid_s * grid_r * cfg.splits)
    if cfg.deal_k:
        from shared.cute.sm90_deal_k import ctas_for, segments

        deal = segments(grid_s * grid_r, k // 256, ctas_for(cfg, m, n, k, sms))
        per_cta = [[Tile(tile.s_decoded, tile.s_computed, tile.r_rows, own * 256) for *_, own, _ in mine]
                   for mine in deal]
    # an S tile is decoded once per R tile it meets (its padding too), an R tile once per S tile
    s_decodes = grid_r // 2 if cfg.share_s else grid_r  # the R tiles whose CTAs each decode the S tile
    return Work(_named(cfg, SM90_CANDIDATES), per_cta,
                m * n * k * num_b, (m + n * num_b) * k, s_decodes * grid_s * rows_s / s_total, float(grid_s))


def group_gemm_work(sizes: tuple, sms: int) -> Work:
    """The grouped GEMM's chosen config and schedule on one shape set (kernel_sm90.prepare's, order
    long_first): 128-row A tiles (S, rows past M not decoded), 128-row B tiles (R), pairs or singles;
    a split config's cluster runs one tile, each CTA half of its K."""
    from problems.group_gemm import config as C
    from problems.group_gemm import kernel_sm90 as K

    order = "long_first"
    cfg = K.choose_config(sizes, order, sms)
    # a split config runs every tile a pair, one per cluster (kernel_sm90.prepare)
    lists = K.cta_tiles(sizes, order, sms // cfg.splits, cfg.r_tiles, K.ALL_PAIRS if cfg.splits > 1 else None)

    def tile(g, i, held):
        rows = min(K.TILE, sizes[g][0] - i * K.TILE)
        # half_s_tiles: a tile of every R tile with at most half its A rows runs wgmmas of half the N
        half = cfg.half_s_tiles and held == cfg.r_tiles and 2 * rows <= K.TILE
        return Tile(rows, K.TILE // 2 if half else K.TILE, held * K.TILE, sizes[g][2] // cfg.splits)

    per_cluster = [[tile(g, i, held) for g, i, _, held in tiles] for tiles in lists]
    every = [t for tiles in per_cluster for t in tiles]  # per CTA of a cluster: splits of them
    s_values, r_values = sum(m * k for m, _, k, _ in sizes), sum(n * k for _, n, k, _ in sizes)
    names = {"SM90": C.SM90, "SM90_PAIRS": C.SM90_PAIRS, "SM90_PAIRS_SPLIT": C.SM90_PAIRS_SPLIT}
    return Work(_named(cfg, names), [ts for ts in per_cluster for _ in range(cfg.splits)],
                sum(m * n * k for m, n, k, _ in sizes), s_values + r_values,
                sum(t.s_decoded * t.k for t in every) * cfg.splits / s_values,
                sum(t.r_rows * t.k for t in every) * cfg.splits / r_values)


def case_label(problem: str, case: dict) -> str:
    if problem == "group_gemm":
        return f"{case['g']} groups, n {case['n'][0]}, k {case['k'][0]}, m {'/'.join(map(str, case['m']))}"
    return f"{case['m']}x{case['n']}x{case['k']}"


def rows_for(problem: str, sms: int) -> list[list[str]]:
    rows = []
    for case in load_problem(problem).benchmarks:
        if problem == "group_gemm":
            work = group_gemm_work(tuple((m, n, k, 1) for m, n, k in zip(case["m"], case["n"], case["k"])), sms)
        else:
            work = gemm_family_work(problem, case["m"], case["n"], case["k"], sms)
        mma, decode = work.ratios(sms)
        rows.append([problem, case_label(problem, case), work.config, str(len(work.per_cta)),
                     str(max(map(len, work.per_cta))), f"{mma:.2f}", f"{decode:.2f}",
                     f"{work.s_per_value:.1f}", f"{work.r_per_value:.1f}"])
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.sm90_work", description=__doc__.split("\n\n")[0])
    p.add_argument("problems", nargs="*", help=f"of {', '.join(PROBLEMS)} (default: all three)")
    p.add_argument("--sms", type=int, default=H100_SM_COUNT, help="SMs of the GPU (default: the H100's 132)")
    args = p.parse_args(argv)
    unknown = [x for x in args.problems if x not in PROBLEMS]
    if unknown:
        p.error(f"unknown problem {unknown[0]!r}: expected one of {', '.join(PROBLEMS)}")
    head = ["problem", "case", "config", "CTAs", "tiles / CTA", "MMA / ideal", "decode / ideal",
            "S decodes / value", "R decodes / value"]
    rows = [row for problem in args.problems or PROBLEMS for row in rows_for(problem, args.sms)]
    print("\n".join(plain_table(head, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
