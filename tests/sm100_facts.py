"""What the sm100 readiness tests check the kernels against, computed from the problem and the
tcgen05 contract, not taken from the kernel modules: tile bytes from the FP4/E4M3 sizes, stage
expect-tx counts, tensor-memory columns; and the kernel configurations the tests cover (every one the
GEMM and dual GEMM support; the benchmark shapes' choices are among them, asserted in
tests/test_sm100_ptx_structure.py)."""

from __future__ import annotations

from problems.dual_gemm.config import DualGemmSm100Config
from problems.gemm.config import GemmSm100Config

CTA_M = 128  # rows of a cta_group::1 block-scaled MMA
K_BLOCK = 256  # K per pipeline stage
MMA_K = 64  # K of one kind::mxf4nvf4 MMA (32 bytes of E2M1 per row)
SF_VEC = 16  # values per E4M3 scale
SF_ATOM = 128  # rows per scale atom (a 512-byte chunk holds 128 rows x 4 scales)
TMEM_LANES, TMEM_MAX_COLS = 128, 512
SMEM_OPTIN = 232448  # sm_100 max dynamic shared memory per block (227 KB)


def tile_bytes(tile_n: int) -> dict[str, int]:
    """Bytes one 256-wide K block of each operand occupies: FP4 = 1/2 byte, one scale per 16 values,
    B's scales in whole 128-row atoms."""
    atoms = -(-tile_n // SF_ATOM)
    return {
        "A": CTA_M * K_BLOCK // 2,
        "SFA": CTA_M * K_BLOCK // SF_VEC,
        "B": tile_n * K_BLOCK // 2,
        "SFB": atoms * SF_ATOM * K_BLOCK // SF_VEC,
    }


def expect_tx(tile_n: int, num_b: int) -> int:
    t = tile_bytes(tile_n)
    return t["A"] + t["SFA"] + num_b * (t["B"] + t["SFB"])


def tmem_columns_needed(tile_n: int, num_b: int, num_acc_stage: int) -> int:
    """fp32 accumulators (one column per N) + 4 columns per 64-K step per 128-row scale atom."""
    atoms = -(-tile_n // SF_ATOM)
    sf = (K_BLOCK // MMA_K) * 4
    return num_acc_stage * num_b * tile_n + sf + num_b * atoms * sf


# Every configuration the kernels support; the benchmark shapes' choices are among them (asserted).
CONFIGS = [
    ("gemm", GemmSm100Config(tile_n=64, num_acc_stage=2)),
    ("gemm", GemmSm100Config(tile_n=128, num_acc_stage=2)),
    ("gemm", GemmSm100Config(tile_n=256, num_acc_stage=1)),
    ("dual_gemm", DualGemmSm100Config(tile_n=64, num_acc_stage=2)),
    ("dual_gemm", DualGemmSm100Config(tile_n=128, num_acc_stage=1)),
]
CONFIG_IDS = [f"{p}-n{c.tile_n}-acc{c.num_acc_stage}" for p, c in CONFIGS]


# ------------------------------------------------------------------------------ CTA pairs (cta_group::2)
PAIR_M = 2 * CTA_M  # rows of a cta_group::2 block-scaled MMA (each CTA of the pair holds 128)
PAIR_MASK = 0b11  # cluster (2,1,1): a multicast or a commit that reaches both CTAs of the pair
SMEM_PEER_BIT = 1 << 24  # the bit of a shared::cluster address that names the CTA of the pair


def pair_cta_bytes(tile_n: int, num_b: int) -> int:
    """Bytes one CTA of a pair receives per K block: its 128 rows of A and SFA, half of each B tile's
    rows, and each B's whole scale block (half fetched by each CTA, multicast to both)."""
    t = tile_bytes(tile_n)
    return t["A"] + t["SFA"] + num_b * (t["B"] // 2 + t["SFB"])


def pair_expect_tx(tile_n: int, num_b: int) -> int:
    """What the leader's stage barrier expects: every 2-SM TMA of both CTAs signals it."""
    return 2 * pair_cta_bytes(tile_n, num_b)


def _cta2_configs():
    from problems.dual_gemm.config import DualGemmSm100Cta2Config

    return [DualGemmSm100Cta2Config(tile_n=64, num_acc_stage=2), DualGemmSm100Cta2Config(tile_n=128, num_acc_stage=1)]


# Every 2-CTA configuration the dual GEMM's "cta2" variant uses (its chooser's picks are among them).
CTA2_CONFIGS = _cta2_configs()
CTA2_CONFIG_IDS = [f"dual_gemm-cta2-n{c.tile_n}-acc{c.num_acc_stage}" for c in CTA2_CONFIGS]
