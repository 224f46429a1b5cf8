"""Tuning choice of the grouped GEMM on sm90: one config for every group (one launch, one kernel).

Tiles of 128 rows of A x 128 rows of B (two consumer warpgroups): the reordered scales come in
blocks of 128 rows, one TMA box per block and K tile, and a B tile decoded into registers serves
twice the MMA work of the 64-row-B configs. Stages, slots and registers as the GEMM's 128-row
configs (problems/gemm/config.py). Tile orders measured: results/README.md.
"""

from dataclasses import replace

from problems.gemm.config import SM90_M128

# Chosen over decoded-A batches of 2 with deeper packed rings (5-13% slower) and 216 consumer registers
# (3-6% slower) on the four benchmark cases (H100, 2026-11-24; results/README.md). Each decoder thread keeps
# one row of A (Sm90Config.owned_rows; the pair kernels below inherit it): 140.5 / 75.9 / 32.0 / 16.2 us against
# 150.9 / 78.2 / 33.7 / 16.6 on the four cases in graph replay (H100, 2026-11-27; results/owned-rows/).
SM90 = replace(SM90_M128, n_cwg=2, consumer_regs=200, a_unroll=2, owned_rows=True)

# Pairs of 128-row B tiles per CTA (r_tiles=2), as the dual GEMM's SM90_WIDE has B1 and B2: the A tile
# the decoders decode serves 256 rows of B. Chosen where the schedule keeps pairs (kernel_sm90.choose_config):
# 157.1 / 88.5 us against 169.2 / 100.6 on the n 4096, k 7168 and n 7168, k 2048 cases (H100, 2026-11-27; the
# hand-offs' runs: results/TUNING.md). A pair tile with at most 64 rows of A runs wgmmas of half the N
# (Sm90Config.half_s_tiles), which needs 216 consumer registers (at 200 ptxas drains every wgmma group of the
# kernel): 78.9 us against 83.3 on the n 7168, k 2048 case, level on the n 4096, k 7168 case (H100, 2026-11-27;
# results/README.md). The second B ring leaves room for 4 decoded A slots, which both sides step once per K tile
# (sm90_gemm.py, ring_by_k_tile), published two sub-tiles at a time (a batch must be smaller than the ring), and
# a third packed stage of A: faster on both many-tile cases than 7 slots filled a whole stage per hand-off with
# two stages of A (H200, 2026-11-28; the runs: results/TUNING.md, eighteenth session).
SM90_PAIRS = replace(SM90, r_tiles=2, a_slots=4, a_batch=2, a_stages=3, consumer_regs=216, producer_regs=40,
                     half_s_tiles=True)

# SM90_PAIRS with each pair tile's K tiles split over a cluster of 2 CTAs (the second one's sums added
# through distributed shared memory, as the GEMM's split configs do): where every tile a pair fits one
# wave of clusters, a CTA decodes half of one A tile and of two B tiles instead of all of one A and one B
# tile. Its registers are the ones at which ptxas neither serializes the wgmma pipeline nor spills the
# decoders (checked in the tests; the others tried: results/TUNING.md). Chosen for one-wave shape sets
# with at least 16 K tiles (kernel_sm90.choose_config): 37.7 us against the single-tile kernel's 39.8 on
# the n 3072, k 4096 case, 24.0 against 20.3 with 6 K tiles (H100, 2026-11-27; results/TUNING.md). Without the
# half-width tiles: in one wave they only end some clusters early, and with them ptxas spills 12 bytes. Its
# decoders hand over two sub-tiles at a time (each CTA has only 8 K tiles, and the first wgmma waits for the first
# hand-off): 32.26 / 32.24 us against 32.85 / 32.80 with whole stages on that case (graph replay; H100, 2026-11-27;
# results/TUNING.md). Its rings stay 7 decoded slots and two packed stages of A: four slots, with or without the
# third stage, were level or slower on that case (H200, 2026-11-28; results/TUNING.md, eighteenth session).
SM90_PAIRS_SPLIT = replace(SM90_PAIRS, splits=2, half_s_tiles=False, a_slots=7, a_stages=None)
SPLIT_MIN_K_TILES = 16


# ---------------------------------------------------------------------------------------- sm100 (B200)
from dataclasses import dataclass, field  # noqa: E402

from problems.group_gemm.order import group_rank  # noqa: E402
from problems.group_gemm.schedule_sm100 import estimated_cost, pair_estimated_cost  # noqa: E402
from shared.cute.sm100_config import MainloopConfig  # noqa: E402
from shared.devices import B200_SM_COUNT  # noqa: E402
from shared.sm100_variants import Sm100Variant  # noqa: E402

SM100_TILE_NS = (64, 128, 256)


@dataclass(frozen=True)
class GroupGemmSm100Config:
    tile_n: int = 128
    num_acc_stage: int = 2  # 1 for tile_n = 256 (2 x 256 accumulator columns leave no room for scales)
    num_ab_stage: int = 0  # 0 = fill shared memory
    sm_count: int = B200_SM_COUNT  # persistent grid size cap and descriptor workspace slots (compile-time)
    # The group order of the schedule (problems/group_gemm/order.py): host-side only, the metadata rows
    # are written in it; the device binary is the same for every order (host_only: not a compile key).
    order: str = field(default="group", metadata={"host_only": True})

    def mainloop(self) -> MainloopConfig:
        return MainloopConfig(
            tile_n=self.tile_n, num_b=1, num_acc_stage=self.num_acc_stage, num_ab_stage=self.num_ab_stage
        )


def _cheapest(sizes, sm_count: int, order: str) -> GroupGemmSm100Config:
    """The N tile whose busiest CTA is cheapest with the groups in `order` (schedule_sm100.estimated_cost);
    ties go to the narrower tile."""
    rank = group_rank(sizes, order)
    fits = [tn for tn in SM100_TILE_NS if all(n % tn == 0 for _, n, _, _ in sizes)]
    best = min(fits, key=lambda tn: (estimated_cost(sizes, tn, sm_count, rank), tn))
    return GroupGemmSm100Config(tile_n=best, num_acc_stage=1 if best == 256 else 2, sm_count=sm_count, order=order)


def choose_sm100(sizes, sm_count: int = B200_SM_COUNT) -> GroupGemmSm100Config:
    """The N tile with the cheapest busiest CTA, the groups in list order."""
    return _cheapest(sizes, sm_count, "group")


def choose_sm100_msorted(sizes, sm_count: int = B200_SM_COUNT) -> GroupGemmSm100Config | None:
    """The "msorted" variant: the groups scheduled by descending M (then K); the N tile by the same cost
    under that order. None where the groups already come in that order (the conservative kernel)."""
    if group_rank(sizes, "msorted") == list(range(len(sizes))):
        return None
    return _cheapest(sizes, sm_count, "msorted")


@dataclass(frozen=True)
class GroupGemmSm100Cta2Config:
    """The "cta2" variant: A and B swapped and 2-CTA MMAs (tcgen05 cta_group::2) on clusters of (2, 1, 1).
    The MMA's M side is the problem's N (256 rows of B per pair tile, 128 per CTA), its N side the
    group's M (tile_n rows of A per tile, tails zero-filled by the TMA): every group qualifies whatever
    its M, N being a multiple of 256. Each CTA loads half of the tile's A rows and half of A's scale
    block, multicast to both CTAs (the SFA multicast); C is stored transposed from the accumulators."""

    tile_n: int = 64  # the MMA's N: rows of the problem's A per tile
    num_acc_stage: int = 2  # 1 for tile_n = 256
    num_ab_stage: int = 0  # 0 = fill shared memory
    sm_count: int = B200_SM_COUNT  # grid cap (sm_count // 2 pairs) and descriptor workspace slots

    def mainloop(self) -> MainloopConfig:
        return MainloopConfig(tile_n=self.tile_n, num_b=1, num_acc_stage=self.num_acc_stage,
                              num_ab_stage=self.num_ab_stage, cta_group=2)


def choose_sm100_cta2(sizes, sm_count: int = B200_SM_COUNT) -> GroupGemmSm100Cta2Config | None:
    """The swapped pair config, None where it does not apply (some group with N not a multiple of 256,
    L != 1, or K not a positive multiple of 256): the tile over M with the cheapest busiest pair
    (schedule_sm100.pair_estimated_cost); ties go to the narrower tile."""
    sizes = list(sizes)
    if not sizes or any(l != 1 or n % 256 or k <= 0 or k % 256 or m < 0 for m, n, k, l in sizes):
        return None
    best = min(SM100_TILE_NS, key=lambda tn: (pair_estimated_cost(sizes, tn, sm_count), tn))
    return GroupGemmSm100Cta2Config(tile_n=best, num_acc_stage=1 if best == 256 else 2, sm_count=sm_count)


# The sm100 variants (shared/sm100_variants.py): the submission's gate serves a variant only where the
# B200 gates table found it correct and fastest for the shape; "conservative" is choose_sm100.
SM100_VARIANTS = {
    "conservative": Sm100Variant(
        "conservative", choose_sm100, runner_dsl=True,
        summary="persistent, groups in table order, N tile by the busiest CTA's estimated cost"),
    "msorted": Sm100Variant(
        "msorted", choose_sm100_msorted, runner_dsl=True,
        summary="the same kernel, its metadata rows (so its tiles) in descending group M, then K"),
    "cta2": Sm100Variant("cta2", choose_sm100_cta2, runner_dsl=True,
                         summary="A and B swapped, 2-CTA MMAs (256 rows of N per pair), A's scales multicast "
                                 "over the pair"),
}
