"""Grouped GEMM on sm90 (problems/group_gemm/kernel_sm90.py: every group's tiles in one launch).

CPU tier: the tile table against brute force (every order, empty and tiny groups, single B tiles and
pairs), its deal to the CTAs (every tile once, the costs balanced), the mix of pairs and single tiles
(every tile once, the cheapest busiest CTA) and the kernel it picks for the benchmark cases; the
in-kernel addressing of the reordered scales against shared/scales.py; the kernels compile for sm_90a,
the GEMM's PTX loads through descriptor addresses after the tensormap fence, the pair kernel has its
two K loops and counts an absent B tile's bytes from one lane (no stack, no serialized wgmma), the
split pair kernel hands its sums over through the cluster at its registers (no stack, no serialized
wgmma), and the descriptor kernel's PTX replaces address, shapes and strides; bad reordered scales and
sizes are refused by name.
GPU tier (sm90): every manifest case plus G = 1, G = 16, a group of M = 8 and groups whose sizes
differ 30x, leaderboard and stress data, every C NaN-poisoned first, through the submission and
through each kernel (single tiles, the mix, every tile a pair); one launch per call; a bad reordered
tensor raises before anything is launched; repeat calls see in-place changes of inputs; a grid of 1
or 5 CTAs for 30 tiles of K 256-768, with either kernel; the split pair kernel on the cases it takes,
both generators, and its refusals of the ones it cannot run.
"""

from __future__ import annotations

import itertools
import re

import pytest
import torch

from harness.check import check_groups
from harness.problem import load_problem
from harness.worker import install_task_module
from problems.group_gemm import kernel_sm90 as K
from shared import scales as S
from shared.cute.operand_checks import check_cuda, check_scales
from tests import sm90_common as C

PROBLEM = load_problem("group_gemm")
install_task_module()  # the submission starts with the leaderboard's `from task import ...`
ALL = K.ALL_PAIRS  # K.prepare's pairs: every tile a pair of B tiles
EXTRA_CASES = [  # G = 1, G = 16, M = 8, sizes 30x apart
    dict(m=[96], n=[256], k=[512], g=1, seed=7),
    dict(m=[8, 40, 72, 128, 200, 256, 16, 64] * 2, n=[128, 256] * 8, k=[256, 512, 768, 256] * 4, g=16, seed=8),
    dict(m=[8, 240], n=[384, 128], k=[256, 512], g=2, seed=9),
    dict(m=[16, 480], n=[128, 3840], k=[1024, 256], g=2, seed=10),
]


# ------------------------------------------------------------------ tile schedule


@pytest.mark.parametrize("span", [1, 2])
@pytest.mark.parametrize("order", K.ORDERS)
@pytest.mark.parametrize("ms", [[80, 176, 128, 72], [0, 40], [1], [0], [300, 0, 8, 129], []])
def test_tile_table_covers_every_tile_once(order, ms, span):
    sizes = [(m, 128 * (1 + g % 3), 256 * (1 + g % 2), 1) for g, m in enumerate(ms)]
    brute = {(g, i, j) for g, (m, n, _, _) in enumerate(sizes)
             for i in range(m) if i % 128 == 0 for j in range(n // 128)}
    brute = sorted((g, i // 128, j) for g, i, j in brute)
    table = K.tile_table(sizes, order, span)
    # each output tile: `span` B tiles from an even one, fewer only at the end of its group's N
    assert all(j % span == 0 and (held == span or j + held == sizes[g][1] // 128) for g, _, j, held in table)
    assert sorted((g, i, j + b) for g, i, j, held in table for b in range(held)) == brute


def test_long_first_puts_the_longest_k_and_largest_groups_first():
    sizes = [(128, 256, 256, 1), (256, 256, 1024, 1), (384, 256, 1024, 1), (40, 128, 512, 1)]
    groups = [t[0] for t in K.tile_table(sizes, "long_first")]
    assert [g for g, _ in itertools.groupby(groups)] == [2, 1, 3, 0]
    with pytest.raises(ValueError, match="tile order must be one of"):
        K.tile_table(sizes, "random")


def test_round_robin_alternates_groups():
    sizes = [(128, 256, 256, 1), (128, 128, 256, 1)]
    assert [t[0] for t in K.tile_table(sizes, "round_robin")] == [0, 1, 0]


@pytest.mark.parametrize("ms", [[80, 176, 128, 72, 64, 248, 96, 160], [40, 300, 8], [1]])
@pytest.mark.parametrize("ctas", [1, 3, 132, None])
def test_cta_schedule_deals_every_tile_once_and_balances_the_cost(ms, ctas):
    sizes = [(m, 128 * (1 + g % 3), 256 * (1 + g % 4), 1) for g, m in enumerate(ms)]
    table = K.tile_table(sizes, "long_first")
    ctas = min(ctas or len(table), len(table))
    lists = K.cta_schedule(sizes, table, ctas)
    assert len(lists) == ctas and sorted(t for tiles in lists for t in tiles) == sorted(table)
    loads = [sum(K.tile_cost(sizes, t) for t in tiles) for tiles in lists]
    # list scheduling: a CTA took its last tile while it was the least loaded one
    assert max(loads) - min(loads) <= max(K.tile_cost(sizes, t) for t in table) + 1e-9
    for tiles in lists:  # each CTA runs its tiles in table order
        assert [table.index(t) for t in tiles] == sorted(table.index(t) for t in tiles)


@pytest.mark.parametrize("ctas", [1, 5, 132])
def test_the_kernels_table_holds_each_ctas_tiles_a_grid_apart(ctas):
    """What the kernel reads: CTA c's t-th tile in row t * CTAs + c, its count in row c."""
    sizes = ((40, 256, 512, 1), (300, 384, 256, 1), (8, 128, 768, 1))
    got_ctas, words = K.schedule(sizes, "long_first", ctas)
    lists = K.cta_schedule(sizes, K.tile_table(sizes, "long_first"), got_ctas)
    rows = [tuple(words[i: i + K.TILE_FIELDS]) for i in range(0, len(words), K.TILE_FIELDS)]
    read = []
    for c in range(got_ctas):  # the kernel's walk
        count = rows[c][3]
        read.append([(*rows[c + t * got_ctas][:3], rows[c + t * got_ctas][5]) for t in range(count)])
        assert all(rows[c + t * got_ctas][4] == sizes[rows[c + t * got_ctas][0]][2] // 256 for t in range(count))
    assert read == lists and got_ctas == min(ctas, len(K.tile_table(sizes, "long_first")))


def test_a_grid_of_one_cta_per_tile_runs_the_table_in_order():
    sizes = [(200, 384, 512, 1), (40, 256, 1024, 1)]
    table = K.tile_table(sizes, "long_first")
    assert K.cta_schedule(sizes, table, len(table)) == [[t] for t in table]
    for bad in (0, len(table) + 1):
        with pytest.raises(ValueError, match="ctas must be in"):
            K.cta_schedule(sizes, table, bad)


def test_a_tile_past_m_costs_less_and_a_longer_k_more():
    sizes = [(168, 256, 2048, 1), (128, 256, 4096, 1)]
    full, part, long_k = (K.tile_cost(sizes, t) for t in ((0, 0, 0, 1), (0, 1, 0, 1), (1, 0, 1, 1)))
    assert part < full < long_k and long_k == 2 * full
    pair = K.tile_cost(sizes, (0, 0, 0, 2))  # a pair of B tiles: more than one, less than two apart
    assert full < pair < 2 * full


@pytest.mark.parametrize("ctas", [1, 7, 132])
def test_paired_tables_cover_every_tile_once_and_pick_the_cheapest_busiest_cta(ctas):
    sizes = ((40, 896, 2048, 1), (168, 896, 2048, 1), (196, 384, 1024, 1))
    pairs = K.tile_table(sizes, "long_first", 2)
    singles = sorted(t[:3] for t in K.tile_table(sizes, "long_first"))

    def busiest(table):
        return K.busiest(sizes, K.cta_schedule(sizes, table, min(ctas, len(table))))

    for keep in (0, 5, len(pairs)):
        split = K.paired_table(sizes, "long_first", ctas, keep)
        assert split[:keep] == pairs[:keep] and all(t[3] == 1 for t in split[keep:])
        assert sorted((g, i, j + b) for g, i, j, held in split for b in range(held)) == singles
    # fewer than 24 pair tiles: the search tries every count
    every = [K.paired_table(sizes, "long_first", ctas, x) for x in range(len(pairs) + 1)]
    assert len(pairs) < 24 and busiest(K.paired_table(sizes, "long_first", ctas)) == min(map(busiest, every))
    # one CTA: every tile a pair (least work); a wave of CTAs wider than the pairs: singles spread it
    assert all(t[3] == 2 or t[2] + 1 == sizes[t[0]][1] // 128 for t in K.paired_table(sizes, "long_first", 1))
    assert all(t[3] == 1 for t in K.paired_table(sizes, "long_first", 10_000))


def test_the_pair_kernel_serves_the_shape_sets_of_several_waves():
    """choose_config on the benchmark cases (132 SMs): pairs where the tiles run in several waves (their
    schedule keeps pairs); where one wave of single tiles fits, pairs split in K over 2-CTA clusters with
    16 K tiles (8 per CTA), the single-tile kernel with 6."""
    from problems.group_gemm.config import SM90, SM90_PAIRS, SM90_PAIRS_SPLIT

    got = [K.choose_config(tuple((m, n, k, 1) for m, n, k in zip(c["m"], c["n"], c["k"])), "long_first", 132)
           for c in PROBLEM.benchmarks]
    assert got == [SM90_PAIRS, SM90_PAIRS, SM90_PAIRS_SPLIT, SM90]
    # the split needs an even count of K tiles and every pair in one wave of clusters (N / 128 = 25: 65
    # pair tiles, 125 single ones; 128 CTAs hold the single ones in one wave, not the pairs in clusters)
    assert K.choose_config(((192, 3072, 4352, 1), (320, 3072, 4096, 1)), "long_first", 132) == SM90
    assert K.choose_config(((192, 3200, 4096, 1), (320, 3200, 4096, 1)), "long_first", 132) == SM90_PAIRS_SPLIT
    assert K.choose_config(((192, 3200, 4096, 1), (320, 3200, 4096, 1)), "long_first", 128) == SM90


# ------------------------------------------------------------------ scales read in place


def test_the_kernels_scale_addresses_match_the_reordered_layout():
    """The byte the decoders (u16 per 32-K chunk) and the consumers (two words per 128 K) read for
    row r, scale j of a 128-row x 256-K stage is plain (r, j) of the reordered storage."""
    rows, k = 256, 512
    plain = torch.randint(0, 256, (rows, k // 16, 1), dtype=torch.uint8)
    flat = S.permuted_storage(S.to_permuted(plain)).tolist()
    for mb, kt in itertools.product(range(2), range(2)):
        stage = flat[(mb * 2 + kt) * 2048:][:2048]  # the TMA box: block mb * k_tiles + kt
        for r in range(128):
            want = plain[mb * 128 + r, 16 * kt:16 * kt + 16, 0].tolist()
            for ch in range(8):  # decoder: scales 2ch, 2ch + 1
                at = ((ch >> 1) << 9) + ((r & 31) << 4) + ((r >> 5) << 2) + ((ch & 1) << 1)
                assert stage[at:at + 2] == want[2 * ch:2 * ch + 2]
            for sub in (0, 2):  # consumer: scales 4sub .. 4sub + 7 as two words
                at = sub * 512 + (r % 32) * 16 + (r // 32) * 4
                assert stage[at:at + 4] + stage[at + 512:at + 516] == want[4 * sub:4 * sub + 8]


SM90_SCALES = ("float8_e4m3fn", "uint8")  # the sm90 grouped kernel reads the scales' bytes


def test_reordered_scales_that_do_not_fit_their_group_are_refused():
    good = torch.zeros(S.permuted_shape(40, 512 // 16, 1), dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"group 1 sfb_reordered: expected shape \(32, 4, 1, 4, 8, 1\)"):
        check_scales("group 1 sfb_reordered", good[:, :, :, :, :4], 40, 512, 1, SM90_SCALES)
    with pytest.raises(TypeError, match="group 0 sfa_reordered: expected dtype"):
        check_scales("group 0 sfa_reordered", good.float(), 40, 512, 1, SM90_SCALES)
    with pytest.raises(TypeError, match="expected a torch.Tensor"):
        check_scales("group 0 sfa_reordered", None, 40, 512, 1, SM90_SCALES)


def test_reordered_scales_with_other_strides_are_refused():
    plain = torch.zeros(S.permuted_shape(40, 512 // 16, 1), dtype=torch.uint8)  # contiguous: not the view
    with pytest.raises(ValueError, match=r"group 0 sfa_reordered: expected strides"):
        check_scales("group 0 sfa_reordered", plain, 40, 512, 1, SM90_SCALES)
    good = S.to_permuted(torch.zeros(40, 512 // 16, 1, dtype=torch.uint8))
    check_scales("group 0 sfa_reordered", good, 40, 512, 1, SM90_SCALES)  # the leaderboard's view
    with pytest.raises(ValueError, match="group 0 sfa_reordered: expected a CUDA tensor"):
        check_cuda(**{"group 0 sfa_reordered": good})


def test_calls_the_kernel_cannot_take_are_left_to_the_portable_path():
    data = PROBLEM.reference.generate_input(m=[64], n=[128], k=[256], g=1, seed=1, device="cpu")
    assert K.prepare(data, [(64, 128, 256, 1)]) is None  # CPU tensors
    assert K.prepare(data, [(64, 128, 256, 2)]) is None  # L = 2
    assert K.prepare(data, [(64, 192, 256, 1)]) is None  # N % 128


def test_an_empty_group_list_is_refused():
    from problems.group_gemm import submission as sub

    with pytest.raises(ValueError, match="empty group list"):
        sub.custom_kernel(([], [], [], []))


def test_blocked_scales_need_128_row_tiles_on_both_sides():
    from dataclasses import replace

    cls = K._kernel_class()
    cls(K.SM90)
    for bad in (replace(K.SM90, smem_rows=64), replace(K.SM90, n_cwg=1)):
        with pytest.raises(ValueError, match="blocked scales need 128-row tiles"):
            cls(bad)


# ------------------------------------------------------------------ compiled code


def _compiled_artifacts(tmp_path_factory, key, name, config):
    """(PTX, cubin) of one kernel compiled for sm_90a with the artifacts kept."""
    d = tmp_path_factory.mktemp(key)
    K.compiled(name, f"--keep-ptx --keep-cubin --dump-dir {d}", config)
    return next(d.glob("*.ptx")).read_text(), next(d.glob("*.cubin"))


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """(PTX, cubin) of the GEMM with single B tiles and of the descriptor kernel."""
    from problems.group_gemm.config import SM90

    return {key: _compiled_artifacts(tmp_path_factory, key, key, SM90) for key in ("gemm", "descriptors")}


@pytest.fixture(scope="module")
def pair_kernel(tmp_path_factory):
    """(PTX, cubin) of the GEMM with pairs of B tiles (its own fixture: another worker may compile it)."""
    from problems.group_gemm.config import SM90_PAIRS

    return _compiled_artifacts(tmp_path_factory, "pairs", "gemm", SM90_PAIRS)


@pytest.fixture(scope="module")
def split_pair_kernel(tmp_path_factory):
    """(PTX, cubin) of the pair kernel with K split over a 2-CTA cluster."""
    from problems.group_gemm.config import SM90_PAIRS_SPLIT

    return _compiled_artifacts(tmp_path_factory, "split_pairs", "gemm", SM90_PAIRS_SPLIT)


def test_the_split_pair_kernel_hands_its_sums_over_without_serializing_the_wgmma(split_pair_kernel):
    """Its configured registers (216 consumer / 40 decoder) are the point: at 200 ptxas serialized the
    wgmma pipeline, at 208 / 48 the decoders spilled."""
    ptx, cubin = split_pair_kernel
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16", ptx)) == 16 * 3
    # the hand-over: two cluster barriers in the consumers and two in the other warps, the other CTA's
    # half of both accumulators stored through distributed shared memory
    assert len(re.findall(r"barrier\.cluster\.arrive", ptx)) == len(re.findall(r"barrier\.cluster\.wait", ptx)) == 4
    assert "st.shared::cluster.v4.f32" in ptx and "mapa.shared::cluster" in ptx
    sass, res = C.sass_of(cubin)
    assert re.search(r"LOCAL:0\b", res) and re.search(r"STACK:0\b", res), res
    assert not C.accumulator_hazards(sass) and not C.wgmma_serialized(sass)


def test_the_grouped_gemm_loads_through_each_groups_descriptors(kernels):
    ptx, cubin = kernels["gemm"]
    C.check_ptx(ptx, num_b=1)
    C.check_sass(cubin, num_b=1)
    # four descriptors (A, SFA, B, SFB), each acquired for the tensormap proxy before the first load
    assert len(re.findall(r"fence\.proxy\.tensormap::generic\.acquire\.gpu", ptx)) == 4


def test_the_grouped_gemm_waits_for_the_kernel_before_it_before_reading_its_tables(kernels, split_pair_kernel):
    """Dependent launch (Sm90Config.pdl): the tile table, the descriptors and the operands may be the output
    of the kernel before; nothing of device memory is read before griddepcontrol.wait."""
    for ptx, _ in (kernels["gemm"], split_pair_kernel):
        early, accesses = C.dependent_launch_order(ptx)
        assert early and not accesses, accesses


def test_the_pair_kernel_has_a_mainloop_for_one_b_tile_and_one_for_two(pair_kernel):
    ptx, cubin = pair_kernel
    # per 256-K stage: 16 k16 steps per B tile, in a K loop for two B tiles and one for a single one,
    # and a K loop of half-width wgmmas for pair tiles with at most 64 rows of A (half_s_tiles)
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16", ptx)) == 16 * 3
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16", ptx)) == 16 * 2
    # a single tile's stage counts the second B tile's bytes as arrived, from one thread
    assert re.search(r"elect\.sync[^\n]*\n(.*\n){0,6}.*mbarrier\.complete_tx\.shared::cta\.b64", ptx)
    sass, res = C.sass_of(cubin)
    # at its 216 consumer registers ptxas keeps one value on the stack across the K loops (8 bytes, reloaded once
    # per tile for the epilogue); nothing inside a loop
    assert re.search(r"LOCAL:0\b", res) and int(re.search(r"STACK:(\d+)", res).group(1)) <= 8, res
    assert not C.spills_in_inner_loops(sass), C.spills_in_inner_loops(sass)
    assert not C.accumulator_hazards(sass) and not C.wgmma_serialized(sass)


def test_the_descriptor_kernel_replaces_address_shape_and_stride(kernels):
    ptx, _ = kernels["descriptors"]
    for field in ("global_address", "global_dim", "global_stride"):
        assert re.search(rf"tensormap\.replace\.tile\.{field}", ptx), field
    assert "fence.proxy.tensormap::generic.release.gpu" in ptx


# ------------------------------------------------------------------ on the H100


def _run_case(spec, generator):
    from problems.group_gemm import submission as sub

    ref = PROBLEM.reference
    data = getattr(ref, generator)(m=spec["m"], n=spec["n"], k=spec["k"], g=spec["g"], seed=spec["seed"],
                                   device="cuda")
    want = ref.ref_kernel(([tuple(t.clone() for t in group) for group in data[0]], *data[1:]))
    for _, _, c in data[0]:
        c.fill_(float("nan"))
    got = sub.custom_kernel(data)
    torch.cuda.synchronize()
    assert all(g.data_ptr() == c.data_ptr() for g, (_, _, c) in zip(got, data[0])), "C must be written in place"
    ok, msg = check_groups(got, want, 1e-3, 1e-3)
    assert ok, msg
    return data


@pytest.mark.sm90
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("case", range(len(PROBLEM.tests) + len(PROBLEM.benchmarks) + len(EXTRA_CASES)))
def test_sm90_groups_match_reference(case, generator):
    _run_case((list(PROBLEM.tests) + list(PROBLEM.benchmarks) + EXTRA_CASES)[case], generator)


def _prepared_launch_matches(data, **prepare_args):
    """K.prepare's launch for `data` (prepare_args: its options), C poisoned first, against the reference:
    check_groups' (ok, message)."""
    want = PROBLEM.reference.ref_kernel(([tuple(t.clone() for t in group) for group in data[0]], *data[1:]))
    launch = K.prepare(data, [tuple(s) for s in data[3]], **prepare_args)
    for _, _, c in data[0]:
        c.fill_(float("nan"))
    launch()
    torch.cuda.synchronize()
    return check_groups([c for _, _, c in data[0]], want, 1e-3, 1e-3)


@pytest.mark.sm90
@pytest.mark.parametrize("config, pairs", [("SM90", None), ("SM90_PAIRS", ALL)])
@pytest.mark.parametrize("ctas", [1, 5, None])
def test_sm90_a_cta_runs_any_number_of_tiles(ctas, config, pairs):
    """Few CTAs, each running many tiles of groups with different K: the rings run on from one tile
    into the next (stress data, C poisoned)."""
    from problems.group_gemm import config as G

    spec = EXTRA_CASES[1]
    data = PROBLEM.reference.generate_stress_input(m=spec["m"], n=spec["n"], k=spec["k"], g=spec["g"], seed=21,
                                                   device="cuda")
    ok, msg = _prepared_launch_matches(data, ctas=ctas, config=getattr(G, config), pairs=pairs)
    assert ok, msg


SPLIT_CASES = [  # one pair tile per cluster, every K a multiple of 512: odd N / 128 (a single tile in
    # the split kernel), M past a tile's rows, K from 2 to 16 K tiles; the two one-wave benchmark cases
    dict(m=[96, 200, 40], n=[384, 256, 640], k=[1024, 512, 2048], g=3, seed=31),
    dict(m=[8, 130], n=[128, 1152], k=[4096, 512], g=2, seed=32),
    *PROBLEM.benchmarks[2:],
]


@pytest.mark.sm90
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("case", range(len(SPLIT_CASES)))
def test_sm90_split_pairs_match_reference(case, generator):
    """The pair kernel with K split over 2-CTA clusters (config.SM90_PAIRS_SPLIT), C poisoned."""
    from problems.group_gemm.config import SM90_PAIRS_SPLIT

    spec = SPLIT_CASES[case]
    data = getattr(PROBLEM.reference, generator)(m=spec["m"], n=spec["n"], k=spec["k"], g=spec["g"],
                                                 seed=spec["seed"], device="cuda")
    ok, msg = _prepared_launch_matches(data, config=SM90_PAIRS_SPLIT)
    assert ok, msg


@pytest.mark.sm90
def test_sm90_split_pairs_refuse_what_they_cannot_run():
    """More pair tiles than clusters (the hand-over runs once per CTA), or a K of an odd count of K tiles:
    a ValueError that says so, before anything is launched."""
    from problems.group_gemm.config import SM90_PAIRS_SPLIT

    ref = PROBLEM.reference
    for spec, match in ((PROBLEM.benchmarks[0], "one tile per cluster"), (EXTRA_CASES[1], "multiple of 512")):
        data = ref.generate_input(m=spec["m"], n=spec["n"], k=spec["k"], g=spec["g"], seed=3, device="cuda")
        with pytest.raises(ValueError, match=match):
            K.prepare(data, [tuple(s) for s in data[3]], config=SM90_PAIRS_SPLIT)


@pytest.mark.sm90
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("config, pairs", [("SM90", None), ("SM90_PAIRS", None), ("SM90_PAIRS", ALL)])
def test_sm90_each_config_matches_reference(config, pairs, generator):
    """Every case through each config, whatever the submission picks for it: single B tiles, the
    schedule's mix of pairs of B tiles and single ones, every tile a pair (a group of odd N / 128
    ends in a single one)."""
    from problems.group_gemm import config as G

    ref = PROBLEM.reference
    for spec in list(PROBLEM.tests) + list(PROBLEM.benchmarks) + EXTRA_CASES:
        data = getattr(ref, generator)(m=spec["m"], n=spec["n"], k=spec["k"], g=spec["g"], seed=spec["seed"] + 5,
                                       device="cuda")
        ok, msg = _prepared_launch_matches(data, config=getattr(G, config), pairs=pairs)
        assert ok, f"{spec}: {msg}"


@pytest.mark.sm90
def test_sm90_one_launch_per_call():
    from torch.profiler import ProfilerActivity, profile

    from problems.group_gemm import submission as sub

    data = _run_case(EXTRA_CASES[1], "generate_input")  # prepared: the descriptors are written
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        sub.custom_kernel(data)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert len(kernels) == 1, [e.name for e in kernels]


@pytest.mark.sm90
def test_sm90_repeat_calls_read_the_inputs_as_they_are_now():
    from problems.group_gemm import submission as sub

    data = _run_case(PROBLEM.tests[3], "generate_stress_input")
    ref = PROBLEM.reference
    fresh = ref.generate_stress_input(m=PROBLEM.tests[3]["m"], n=PROBLEM.tests[3]["n"], k=PROBLEM.tests[3]["k"],
                                      g=PROBLEM.tests[3]["g"], seed=99, device="cuda")
    for mine, new in zip(data[0], fresh[0]):  # new values in the same tensors
        mine[0].copy_(new[0])
    data[1][:] = fresh[1]  # the plain scales the reference reads (CPU)
    for mine, new in zip(data[2], fresh[2]):
        mine[0].copy_(new[0])
        mine[1].copy_(new[1])
    want = ref.ref_kernel(([(a, b, c.clone()) for a, b, c in data[0]], *data[1:]))
    for _, _, c in data[0]:
        c.fill_(float("nan"))
    got = sub.custom_kernel(data)
    torch.cuda.synchronize()
    ok, msg = check_groups(got, want, 1e-3, 1e-3)
    assert ok, msg


@pytest.mark.sm90
def test_sm90_wrong_reordered_scales_raise_before_any_launch():
    from problems.group_gemm import submission as sub

    data = PROBLEM.reference.generate_input(m=[64, 96], n=[128, 256], k=[256, 512], g=2, seed=5, device="cuda")
    (sfa_r, sfb_r) = data[2][1]
    data[2][1] = (sfa_r, sfb_r[:, :, :, :, :1])  # group 1's sfb for K = 256, not 512
    for _, _, c in data[0]:
        c.fill_(float("nan"))
    with pytest.raises(ValueError, match="group 1 sfb_reordered"):
        sub.custom_kernel(data)
    torch.cuda.synchronize()
    assert all(torch.isnan(c).all() for _, _, c in data[0]), "a group was computed before the error"
