"""The deal of K tiles (Stream-K; shared/cute/sm90_deal_k.py), CPU tier: the host mirror of the kernel's
arithmetic covers every K tile of every tile once, balances the CTAs, and keeps the hand-over protocol's
premises (each CTA hands over at most one partial, from its first segment, to an earlier CTA). The kernel
itself is compiled in tests/test_sm90_gemm_kernels.py and run against the reference in its GPU tier and
in tests/test_real_callers.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.cute.sm90_config import Sm90Config
from shared.cute.sm90_deal_k import ctas_for, deal_k_pays, segments, tile_count, workspace_bytes

DEALS = [(120, 28, 132), (112, 8, 132), (64, 28, 132), (96, 28, 132), (4, 4, 16), (240, 2, 132), (1, 1, 1),
         (7, 3, 5), (132, 5, 132), (2, 40, 80)]


@pytest.mark.parametrize("tiles,k_tiles,ctas", DEALS)
def test_every_k_tile_of_every_tile_is_dealt_once(tiles, k_tiles, ctas):
    seen = [[0] * k_tiles for _ in range(tiles)]
    for mine in segments(tiles, k_tiles, ctas):
        for tile, first, own, _ in mine:
            assert own >= 1
            for kt in range(first, first + own):
                seen[tile][kt] += 1
    assert all(x == 1 for row in seen for x in row)


@pytest.mark.parametrize("tiles,k_tiles,ctas", DEALS)
def test_the_ctas_get_the_same_work_to_within_one_k_tile(tiles, k_tiles, ctas):
    work = [sum(own for _, _, own, _ in mine) for mine in segments(tiles, k_tiles, ctas)]
    assert max(work) - min(work) <= 1 and sum(work) == tiles * k_tiles


@pytest.mark.parametrize("tiles,k_tiles,ctas", DEALS)
def test_owners_add_exactly_the_partials_of_the_later_ctas(tiles, k_tiles, ctas):
    deal = segments(tiles, k_tiles, ctas)
    partials = {}  # tile -> CTAs that hand over a partial of it
    for c, mine in enumerate(deal):
        for j, (tile, first, _, _) in enumerate(mine):
            if first:
                assert j == 0, f"CTA {c}: a partial that is not its first segment"
                partials.setdefault(tile, []).append(c)
    owners = {tile: (c, later) for c, mine in enumerate(deal) for tile, first, _, later in mine if first == 0}
    assert sorted(owners) == list(range(tiles))
    for tile, (c, later) in owners.items():
        assert partials.get(tile, []) == list(range(c + 1, c + 1 + later))


def test_the_grid_and_workspace_follow_the_config():
    cfg = Sm90Config(smem_rows=104, n_cwg=2, n_dwg=2, stages=2, a_slots=9, consumer_regs=200, producer_regs=56,
                     a_batch=4, a_unroll=2, chunk_k=64, deal_k=True)
    assert tile_count(cfg, 512, 3072) == 5 * 24
    assert ctas_for(cfg, 512, 3072, 7168, 132) == 132
    assert ctas_for(cfg, 104, 128, 512, 132) == 2  # fewer K tiles than SMs: one CTA per K tile
    assert workspace_bytes(cfg, 2, 132) == 132 * (4 * 2 * 128 * 104 + 4)


def test_dealt_k_rejects_a_cluster_split_and_pairs():
    base = Sm90Config(deal_k=True)
    base.check(1)
    for bad in (dict(splits=2), dict(r_tiles=2)):
        with pytest.raises(ValueError, match="deal_k"):
            replace(base, **bad).check(1)


def test_a_deal_needs_a_k_tile_per_cta():
    with pytest.raises(ValueError, match="ctas"):
        segments(2, 3, 7)


@pytest.mark.parametrize("tiles,pays", [(144, True), (192, True), (336, True), (238, True), (256, False),
                                        (112, False), (120, False), (132, False), (1296, False)])
def test_dealt_k_is_chosen_for_the_fills_where_it_won_on_the_h100(tiles, pays):
    # results/dealt-k/2026-11-27-h100-dealt-k-12bee9b.json: won at fills 0.55-0.90, lost at 0.97 and on one wave
    assert deal_k_pays(tiles, 132) is pays


def test_the_choosers_deal_k_only_past_one_wave():
    from problems.dual_gemm.config import choose_sm90 as dual
    from problems.gemm.config import choose_sm90 as gemm

    assert gemm(256, 4608, 7168).deal_k and not gemm(128, 7168, 2048).deal_k
    assert not gemm(512, 4096, 4096).deal_k  # 256 tiles: two nearly full waves
    assert dual(768, 3072, 7168).deal_k and not dual(512, 3072, 7168).deal_k and not dual(512, 4096, 7168).deal_k
