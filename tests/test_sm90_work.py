"""scripts/sm90_work.py: the work of the sm90 configs per benchmark case, against counts derived here by
hand from each config's tile (CPU only: the choosers and the grouped schedule are plain Python)."""

from __future__ import annotations

import pytest

from scripts import sm90_work as W

SMS = 132


def test_a_split_gemm_decodes_the_128_row_a_tile_once_per_b_tile_and_b_once():
    # m128_split2: 128 rows of A (S) x 64 rows of B (R), K split over 2 CTAs: 1 x 64 tiles x 2
    work = W.gemm_family_work("gemm", 128, 4096, 7168)
    assert work.config == "m128_split2" and len(work.per_cta) == 128
    assert (work.s_per_value, work.r_per_value) == (64.0, 1.0)
    mma, decode = work.ratios(SMS)
    assert mma == pytest.approx(128 * 64 * 3584 / (128 * 4096 * 7168 / SMS))
    assert decode == pytest.approx((128 + 64) * 3584 / ((128 + 4096) * 7168 / SMS))


def test_a_split_gemm_of_64_row_a_tiles_decodes_each_b_tile_twice():
    # m64_wide_split2: 64 rows of A (S) x 128 rows of B (R), K split over 2 CTAs: 2 x 24 tiles x 2
    work = W.gemm_family_work("gemm", 128, 3072, 1536)
    assert work.config == "m64_wide_split2" and len(work.per_cta) == 96
    assert (work.s_per_value, work.r_per_value) == (24.0, 2.0)


def test_the_dual_gemm_counts_both_b_operands_and_the_partial_a_tile():
    # wide_104_shared: 104 rows of A (5 tiles for 512, the last one 96 rows but decoded and computed whole)
    # x 128 rows of each of B1 and B2: 5 x 24 CTAs; each A tile decoded once per pair of CTAs along N (12 pairs),
    # the first CTA of a pair decoding 56 of its rows
    work = W.gemm_family_work("dual_gemm", 512, 3072, 7168)
    assert work.config == "wide_104_shared" and len(work.per_cta) == 120
    assert work.s_per_value == pytest.approx(12 * 520 / 512) and work.r_per_value == 5.0
    mma, decode = work.ratios(SMS)
    assert mma == pytest.approx(104 * 256 * 7168 / (512 * 3072 * 7168 * 2 / SMS))
    assert decode == pytest.approx((56 + 256) * 7168 / ((512 + 2 * 3072) * 7168 / SMS))


def test_a_shared_decode_halves_the_a_decodes_of_a_cta_pair():
    # wide_shared on 512x4096x7168: 4 x 32 CTAs of 128 x 128, each A tile decoded by 16 pairs (64 rows each)
    work = W.gemm_family_work("dual_gemm", 512, 4096, 7168)
    assert work.config == "wide_shared" and len(work.per_cta) == 128
    assert work.s_per_value == pytest.approx(16.0) and work.r_per_value == 4.0
    assert work.ratios(SMS)[1] == pytest.approx((64 + 256) * 7168 / ((512 + 2 * 4096) * 7168 / SMS))


def test_a_deal_k_gemm_spreads_the_k_tiles_of_a_two_wave_grid_over_every_sm():
    # m64_wide_dk on 256x4608x7168: 4 x 36 = 144 tiles of 28 K tiles, 4032 K tiles over 132 CTAs (30 or 31
    # each) where one CTA per tile would take two waves; the busiest CTA 31 K tiles of one tile's work
    work = W.gemm_family_work("gemm", 256, 4608, 7168)
    assert work.config == "m64_wide_dk" and len(work.per_cta) == SMS
    assert {sum(t.k for t in ts) // 256 for ts in work.per_cta} == {30, 31}
    mma, _ = work.ratios(SMS)
    assert mma == pytest.approx(64 * 128 * 31 * 256 / (256 * 4608 * 7168 / SMS))


def test_the_swapped_gemm_decodes_b_once():
    work = W.gemm_family_work("gemm", 128, 7168, 16384)  # m128_swap_split2: 112-row B tiles in shared memory
    assert work.config == "m128_swap_split2" and (work.s_per_value, work.r_per_value) == (1.0, 64.0)


def test_grouped_tiles_decode_only_a_rows_inside_m_but_compute_whole_tiles():
    # two groups, one 128-row A tile each (M 40 and 128), N 256, K 512: 2 single B tiles per group,
    # one tile per CTA
    work = W.group_gemm_work(((40, 256, 512, 1), (128, 256, 512, 1)), SMS)
    assert work.config == "SM90" and all(len(ts) == 1 for ts in work.per_cta)
    tiles = [ts[0] for ts in work.per_cta]
    assert sorted(t.s_decoded for t in tiles) == [40, 40, 128, 128]
    assert all((t.s_computed, t.r_rows, t.k) == (128, 128, 512) for t in tiles)
    # every A value decoded once per 128-row B tile (twice), every B value once per A tile (once)
    assert (work.s_per_value, work.r_per_value) == (2.0, 1.0)
    assert work.real_macs == 40 * 256 * 512 + 128 * 256 * 512
    mma, _ = work.ratios(SMS)
    assert mma == pytest.approx(128 * 128 * 512 / (work.real_macs / SMS))


def test_a_split_grouped_cta_holds_half_of_its_tiles_k():
    work = W.group_gemm_work(((192, 3072, 4096, 1), (320, 3072, 4096, 1)), SMS)
    # 5 A tiles x 12 pairs of B tiles, one pair per cluster of 2 CTAs
    assert work.config == "SM90_PAIRS_SPLIT" and len(work.per_cta) == 120
    assert all(ts[0].k == 2048 and ts[0].r_rows == 256 for ts in work.per_cta)
    assert work.r_per_value == pytest.approx(5 / 2)  # 2 and 3 A tiles: B of each group decoded that often
    assert work.s_per_value == pytest.approx(12.0)  # A decoded once per pair, only its rows inside M


def test_the_benchmark_table_has_a_row_per_case(capsys):
    assert W.main(["gemm", "group_gemm"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 + 3 + 4 and out[0].split()[:3] == ["problem", "case", "config"]
    rows = W.rows_for("group_gemm", SMS)
    # the n 7168, k 2048 case: 13 A tiles of 128 rows for 8 groups, each B value decoded 13/8 times
    assert rows[1][2] == "SM90_PAIRS" and rows[1][-1] == "1.6"


def test_an_unknown_problem_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        W.main(["gemv"])
    assert e.value.code == 2 and "unknown problem 'gemv'" in capsys.readouterr().err


def test_the_pair_kernels_half_width_tiles_compute_half_their_rows():
    """config.SM90_PAIRS has half_s_tiles: a pair tile with at most 64 rows of A computes 64 of them."""
    sizes = tuple((m, 7168, 2048, 1) for m in (40, 76, 168, 72, 164, 148, 196, 160))
    work = W.group_gemm_work(sizes, SMS)
    assert work.config == "SM90_PAIRS"
    tiles = [t for ts in work.per_cta for t in ts]
    for t in tiles:
        assert t.s_computed == (64 if t.r_rows == 256 and t.s_decoded <= 64 else 128), t
    assert sum(t.s_computed == 64 for t in tiles) > 100  # 5 of its 13 A tiles hold at most 64 rows
