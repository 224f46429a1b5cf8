"""Blackwell (sm_100a) block-scaled GEMM family: the sizes and the mainloop config, without the DSL.

What the configs' choosers (each problem's config.py) need to know about the sm100 mainloop: the
instruction and tile sizes, the shared-memory bytes of one pipeline stage, how many stages fit, the
tensor-memory columns a config uses, and `MainloopConfig`, which rejects a config that does not fit.
Plain Python: a config module imports this, never a kernel module (the kernels'
shared/cute/sm100_blockscaled.py builds on it).
"""

from __future__ import annotations

from dataclasses import dataclass

SF_VEC_SIZE = 16  # values per E4M3 scale
TILE_M = 128  # cta_group::1 block-scaled MMA is always 128 rows
MMA_INST_K = 64  # K of one kind::mxf4nvf4 instruction
K_TILE = 256  # 4 instructions per pipeline stage = one 512-byte scale chunk per 128 rows
TMEM_COLS = 512  # the whole tensor memory: one CTA per SM
SMEM_BYTES = 232448  # sm_100 opt-in shared memory per block
SMEM_RESERVED = 2048  # barriers, TMEM address slot and 128-byte alignment slack
SF_ATOM_ROWS = 128
SF_TMEM_COLS_PER_ATOM = (SF_ATOM_ROWS // 32) * (K_TILE // MMA_INST_K)  # 16 columns per 128 rows


def stage_bytes(tile_n: int, num_b: int, cta_group: int = 1) -> int:
    """Shared-memory bytes of one pipeline stage of one CTA: A, SFA and `num_b` copies of B, SFB.

    With `cta_group = 2` (a CTA pair sharing 256-row MMAs) each CTA holds its own 128 rows of A and
    SFA, half of each B tile (the MMA reads the other half from the peer) and each B's whole scale
    block (every CTA's tensor memory needs the scales of all N columns)."""
    sf_n_rows = -(-tile_n // SF_ATOM_ROWS) * SF_ATOM_ROWS
    a = TILE_M * K_TILE // 2
    b = tile_n // cta_group * K_TILE // 2
    sfa = TILE_M * K_TILE // SF_VEC_SIZE
    sfb = sf_n_rows * K_TILE // SF_VEC_SIZE
    return a + sfa + num_b * (b + sfb)


def max_ab_stages(tile_n: int, num_b: int, cta_group: int = 1) -> int:
    return (SMEM_BYTES - SMEM_RESERVED) // stage_bytes(tile_n, num_b, cta_group)


def pair_tx_bytes(tile_n: int, num_b: int) -> int:
    """Transaction bytes the leader CTA's stage barrier expects per K block with 2-CTA MMAs: the TMAs
    of both CTAs signal the leader's barrier (the 2-SM TMA ops), so it counts both CTAs' stages; the
    peer's stage barrier gets no expect-tx (its MMA warp never waits on it)."""
    return 2 * stage_bytes(tile_n, num_b, cta_group=2)


def tmem_columns(tile_n: int, num_b: int, num_acc_stage: int) -> int:
    """Tensor-memory columns used: accumulators, then SFA, then one SFB block per B operand."""
    sfb_cols = -(-tile_n // SF_ATOM_ROWS) * SF_TMEM_COLS_PER_ATOM
    return num_acc_stage * num_b * tile_n + SF_TMEM_COLS_PER_ATOM + num_b * sfb_cols


def narrow_tiles_fill_better(m: int, n: int, l: int, sm_count: int) -> bool:
    """True when 128 x 64 tiles double the CTA count without needing a second wave.

    The leaderboard shapes give fewer 128 x 128 tiles than SMs; halving the N tile then halves
    every CTA's K loop. Once the doubled count exceeds the SMs a second wave costs more than it saves.
    """
    tiles_128 = (m // TILE_M) * (n // 128) * l
    return 2 * tiles_128 <= sm_count


@dataclass(frozen=True)
class MainloopConfig:
    tile_n: int = 128
    num_b: int = 1  # B operands that share A: 1 = GEMM, 2 = gated dual GEMM
    num_acc_stage: int = 1  # accumulator buffers in TMEM (2 lets the epilogue overlap the next tile)
    num_ab_stage: int = 0  # 0 = as many as fit in shared memory
    cta_group: int = 1  # 2 = a CTA pair (cluster (2,1,1)) shares 256-row MMAs (tcgen05 cta_group::2)

    def __post_init__(self):
        if self.cta_group not in (1, 2):
            raise ValueError(f"cta_group = {self.cta_group}: supported 1, 2")
        if self.tile_n not in (64, 128, 256):
            raise ValueError(f"tile_n = {self.tile_n}: supported 64, 128, 256")
        if self.num_b not in (1, 2):
            raise ValueError(f"num_b = {self.num_b}: supported 1, 2")
        cols = tmem_columns(self.tile_n, self.num_b, self.num_acc_stage)
        if cols > TMEM_COLS:
            raise ValueError(
                f"tile_n={self.tile_n}, num_b={self.num_b}, num_acc_stage={self.num_acc_stage} needs "
                f"{cols} tensor-memory columns, only {TMEM_COLS} exist"
            )
        if self.stages < 2:
            raise ValueError(f"{self}: fewer than 2 pipeline stages fit in shared memory")

    @property
    def mma_m(self) -> int:
        """Rows of one MMA: 128 per CTA, 256 for a CTA pair."""
        return TILE_M * self.cta_group

    @property
    def stages(self) -> int:
        cap = max_ab_stages(self.tile_n, self.num_b, self.cta_group)
        return min(self.num_ab_stage, cap) if self.num_ab_stage else cap


# ---------------------------------------------------------------------------- split-K over a cluster
# The swapped split-K GEMM (shared/cute/sm100_splitk.py): the MMA's 128 rows are N, its tile_n columns
# are M; the CTAs of a cluster of `splits` share one output tile, each accumulating a slice of the K
# blocks, and reduce the fp32 partials through distributed shared memory. The epilogue works in
# EPI_SUBTILE-column subtiles of the accumulator; subtile `sub` is finished (received, summed, stored)
# by the cluster rank `splitk_owner(sub, splits)`, and every other rank sends its partial of that
# subtile into the owner's exchange buffer, at the slot `splitk_slot` names.
EPI_SUBTILE = 32  # accumulator columns per tcgen05.ld 32x32b.x32 (one fp32 register per column)
CLUSTER_MAX = 8  # the portable cluster size
SPLITK_SPLITS = (2, 4)


def splitk_owner(sub: int, splits: int) -> int:
    """The cluster rank that finishes accumulator subtile `sub`: round robin over the ranks."""
    return sub % splits


def splitk_slot(sender: int, owner: int, sub: int, splits: int, subtiles: int) -> int:
    """Index of the exchange slot (one EPI_SUBTILE-column partial for the 128 rows) in which `sender`
    puts its partial of subtile `sub` in `owner`'s buffer: senders in rank order skipping the owner,
    then the owner's subtiles in order."""
    if sender == owner:
        raise ValueError(f"rank {sender} owns subtile {sub}: it does not send it")
    contributor = sender if sender < owner else sender - 1
    return contributor * (subtiles // splits) + sub // splits


def splitk_exchange_bytes(tile_n: int, splits: int) -> int:
    """Shared-memory bytes of one CTA's exchange buffer: splits - 1 partials of its 1/splits share of
    a 128 x tile_n fp32 accumulator."""
    return (splits - 1) * TILE_M * (tile_n // splits) * 4


def splitk_k_range(split: int, splits: int, k_blocks: int) -> tuple[int, int]:
    """(first K block, K block count) of cluster rank `split` (the same formula the scheduler traces)."""
    first = split * k_blocks // splits
    return first, (split + 1) * k_blocks // splits - first


def check_splitk(tile_n: int, splits: int) -> None:
    """ValueError unless a 128 x tile_n accumulator divides into whole subtiles per rank."""
    if tile_n not in (64, 128):
        raise ValueError(f"tile_n = {tile_n}: the split-K GEMM takes 64 or 128 (the M side of the swapped MMA)")
    if splits not in SPLITK_SPLITS or (tile_n // EPI_SUBTILE) % splits:
        raise ValueError(f"splits = {splits}: need one of {SPLITK_SPLITS} dividing the {tile_n // EPI_SUBTILE} "
                         f"accumulator subtiles of a {tile_n}-wide tile")


def splitk_stages(tile_n: int, splits: int) -> int:
    """Pipeline stages that fit beside the exchange buffer."""
    free = SMEM_BYTES - SMEM_RESERVED - splitk_exchange_bytes(tile_n, splits)
    return free // stage_bytes(tile_n, 1)
