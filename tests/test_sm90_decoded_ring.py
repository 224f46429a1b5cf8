"""The S decode shared by a pair of CTAs (Sm90Config.share_s; shared/cute/sm90_decoded_ring.py), CPU tier: the
split of an S tile's rows between the two CTAs, the configs and shapes the sharing takes or refuses, the
dual GEMM's chooser, and the hand-over in the compiled kernel's PTX (the bulk copy into the other CTA, the
bytes its barrier expects, the consumers' release of the other CTA's slots, the cluster barriers around it).
The kernel runs against the reference in the GPU tier of tests/test_sm90_gemm_kernels.py and
tests/test_real_callers.py."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from shared.cute.sm90_config import Sm90Config, shared_s_rows


@pytest.mark.parametrize("rows_s", range(32, 257, 8))
def test_the_two_ctas_decode_every_row_once_in_whole_swizzle_atoms(rows_s):
    (first0, n0), (first1, n1) = shared_s_rows(rows_s, 0), shared_s_rows(rows_s, 1)
    assert first0 == 0 and first1 == n0 and n0 + n1 == rows_s
    assert n0 % 8 == 0 and n1 % 8 == 0 and 0 <= n0 - n1 <= 8


def test_the_split_of_the_104_row_tiles():
    assert shared_s_rows(104, 0) == (0, 56) and shared_s_rows(104, 1) == (56, 48)


def test_sharing_needs_one_tile_per_cta_and_the_same_k_tiles():
    base = Sm90Config(share_s=True)
    base.check(1)
    for bad in (dict(splits=2), dict(deal_k=True)):
        with pytest.raises(ValueError, match="share_s"):
            replace(base, **bad).check(1)


def test_sharing_needs_an_even_number_of_r_tiles():
    cfg = Sm90Config(smem_rows=104, n_cwg=2, share_s=True)  # 128-row R tiles along N
    assert cfg.shape_error(512, 3072, 7168, 1) is None  # 24 tiles, 12 pairs
    assert "even number of R tiles" in cfg.shape_error(512, 384, 7168, 1)  # 3 tiles
    assert replace(cfg, share_s=False).shape_error(512, 384, 7168, 1) is None


def test_the_dual_chooser_shares_where_wide_tiles_pair_up():
    from problems.dual_gemm.config import (
        SM90_WIDE,
        SM90_WIDE_104,
        SM90_WIDE_104_SHARED,
        SM90_WIDE_SHARED,
        choose_sm90,
    )

    for m, n, k in [(512, 4096, 7168), (7168, 2304, 2048), (512, 4096, 512)]:
        assert choose_sm90(m, n, k) == SM90_WIDE_SHARED, (m, n, k)
    assert choose_sm90(4608, 384, 7168) == SM90_WIDE  # 3 N tiles
    assert choose_sm90(512, 3072, 7168) == SM90_WIDE_104_SHARED  # 24 N tiles of 104-row A tiles pair up
    assert choose_sm90(512, 3200, 7168) == SM90_WIDE_104  # 25 do not
    for m, n, k in [(256, 4096, 7168), (768, 3072, 7168)]:  # split, dealt K: more than one CTA per tile's K
        assert not choose_sm90(m, n, k).share_s


def test_the_grouped_kernel_refuses_to_share():
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
    from problems.gemm.kernel_sm90 import GemmSm90

    class Lists(GemmSm90):
        tile_lists = True

    with pytest.raises(ValueError, match="one output tile per CTA"):
        Lists(Sm90Config(smem_rows=128, n_cwg=2, consumer_regs=200, share_s=True))
    # nor the split's asynchronous hand-over (one phase of its receive barrier, one arrive at its cluster barrier)
    with pytest.raises(ValueError, match="one output tile per CTA"):
        Lists(Sm90Config(smem_rows=64, n_cwg=2, consumer_regs=200, splits=2, async_handover=True))
    # nor the early L2 prefetch (its first tile is in tables the kernel before may still write)
    with pytest.raises(ValueError, match="one output tile per CTA"):
        Lists(Sm90Config(smem_rows=64, n_cwg=2, consumer_regs=200, l2_early=1))
    with pytest.raises(ValueError, match="l2_early must be >= 0"):
        Sm90Config(l2_early=-1).check(1)


def test_the_hand_over_in_the_ptx(tmp_path):
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
    from problems.dual_gemm.config import SM90_WIDE_104, SM90_WIDE_104_SHARED
    from problems.dual_gemm.kernel_sm90 import DualGemmSm90
    from tests import sm90_common as C

    shared = C.artifacts(DualGemmSm90, SM90_WIDE_104_SHARED, tmp_path)[0]
    alone = C.artifacts(DualGemmSm90, SM90_WIDE_104, tmp_path)[0]
    copy = r"cp\.async\.bulk\.shared::cluster\.shared::cta\.mbarrier::complete_tx::bytes"
    release = r"mbarrier\.arrive\.release\.cta\.shared::cluster"
    for needle in (copy, r"mbarrier\.expect_tx\.shared::cta", release, r"mapa\.shared::cluster"):
        assert re.search(needle, shared), needle
        assert not re.search(needle, alone), needle
    # the cluster barriers after the init and before the exit, on top of the kernel's own
    arrives = lambda ptx: len(re.findall(r"barrier\.cluster\.arrive", ptx))  # noqa: E731
    assert arrives(shared) == arrives(alone) + 2
