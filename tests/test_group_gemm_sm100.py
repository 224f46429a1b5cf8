"""Grouped NVFP4 GEMM on Blackwell (problems/group_gemm/kernel_sm100.py): compiled here, inspected, never run.

CPU tier (no marker):
  * the kernel compiles for sm_100a in every config the manifest's cases choose (one binary per
    config: group count, sizes and addresses are runtime values); its PTX has the block-scaled
    tcgen05 MMA, the scale copies to tensor memory, the TMA loads through descriptors in global
    memory and the device-side descriptor rewrite (tensormap.replace of address, dims and strides,
    the fenced copy to global memory, the acquire fence); SASS without spills where the tools exist;
  * the host-side mirror of the persistent schedule against brute force (empty and tiny groups,
    grids smaller and larger than the tile count), the metadata table, the tile choice;
  * the submission's and prepare()'s refusals of bad input, by name.
B200 tier (sm100): every manifest case, leaderboard and stress data, C poisoned with NaN first.
"""

from __future__ import annotations

import glob
import itertools
import re
from pathlib import Path

import pytest
import torch

pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

from harness.problem import load_problem  # noqa: E402
from harness.worker import install_task_module  # noqa: E402
from problems.group_gemm import kernel_sm100 as K  # noqa: E402
from problems.group_gemm import schedule_sm100 as schedule  # noqa: E402
from problems.group_gemm.config import SM100_TILE_NS, choose_sm100  # noqa: E402
from shared.cute import sm100_blockscaled as bs  # noqa: E402
from tests.test_sm100_kernels import check_ptx, s2t_copies, sass_and_resources  # noqa: E402

PROBLEM = load_problem("group_gemm")


def _sizes(case):
    return [(m, n, k, 1) for m, n, k in zip(case["m"], case["n"], case["k"])]


BENCH = [_sizes(c) for c in PROBLEM.benchmarks]
TESTS = [_sizes(c) for c in PROBLEM.tests]
# benchmark shapes, a few test shapes, G = 1 (the same kernel), tails of every kind
COMPILE_CASES = BENCH + [TESTS[0], TESTS[4], TESTS[8], [(40, 7168, 2048, 1)], [(76, 256, 512, 1), (0, 512, 256, 1)]]


# ------------------------------------------------------------------------------ compile + artifacts
@pytest.fixture(scope="session")
def dump_root(tmp_path_factory):
    return tmp_path_factory.mktemp("group_sm100")


_ARTIFACTS: dict = {}


def artifacts(config, dump_root: Path):
    """Compile (once per config for the session) with PTX and cubin kept: (compiled, ptx, cubin)."""
    if config not in _ARTIFACTS:
        out = dump_root / f"n{config.tile_n}_acc{config.num_acc_stage}"
        out.mkdir(exist_ok=True)
        compiled = K.compile_for(config, options=f"--keep-ptx --keep-cubin --dump-dir {out}")
        (ptx,) = glob.glob(str(out / "*.ptx"))
        (cubin,) = glob.glob(str(out / "*.cubin"))
        _ARTIFACTS[config] = (compiled, Path(ptx).read_text(), Path(cubin), out)
    compiled, ptx, cubin, out = _ARTIFACTS[config]
    # every problem of a config is served by the same binary
    assert K.compile_for(config, options=f"--keep-ptx --keep-cubin --dump-dir {out}") is compiled
    return compiled, ptx, cubin


def check_grouped_ptx(ptx: str, tile_n: int) -> None:
    check_ptx(ptx, 1, tile_n)  # the GEMM's checks: MMAs, scale copies, 4 TMA loads, tx bytes, no .local
    # The descriptor rewrite per group: address, dims and strides of A, B, SFA, SFB edited in shared
    # memory, copied to global memory with a release fence, acquired before the loads use them.
    assert len(re.findall(r"tensormap\.replace\.tile\.global_address\.shared::cta\.b1024\.b64", ptx)) == 4
    assert re.search(r"tensormap\.replace\.tile\.global_dim\.shared::cta", ptx)
    assert re.search(r"tensormap\.replace\.tile\.global_stride\.shared::cta", ptx)
    assert len(re.findall(r"tensormap\.cp_fenceproxy\.global\.shared::cta\.tensormap::generic\.release\.gpu", ptx)) == 4
    assert len(re.findall(r"fence\.proxy\.tensormap::generic\.acquire\.gpu", ptx)) == 4
    # Every TMA load names a descriptor held in a register (the rewritten one in global memory),
    # not a kernel parameter.
    loads = re.findall(r"cp\.async\.bulk\.tensor\.\dd\.[^\[]*\[[^\]]+\], \[(%rd\d+),", ptx)
    assert len(loads) == 4, loads


@pytest.mark.parametrize("sizes", COMPILE_CASES, ids=[f"g{len(s)}-m{s[0][0]}-n{s[0][1]}-k{s[0][2]}"
                                                      for s in COMPILE_CASES])
def test_compiles_for_sm100a_with_block_scaled_tcgen05_and_tensormap_replace(sizes, dump_root):
    config = choose_sm100(sizes)
    assert K.NvFp4GroupGemmSm100.can_implement(sizes, config)
    _, ptx, _ = artifacts(config, dump_root)
    check_grouped_ptx(ptx, config.tile_n)


def test_sass_has_block_scaled_mma_and_no_spills(dump_root):
    for config in {choose_sm100(s) for s in BENCH + TESTS}:
        _, _, cubin = artifacts(config, dump_root)
        sass, res = sass_and_resources(cubin)
        assert "code for sm_100a" in sass
        assert len(re.findall(r"\bUTCOMMA\.4X\b", sass)) == bs.K_TILE // bs.MMA_INST_K
        assert len(re.findall(r"\bUTCCP\.", sass)) == s2t_copies(1, config.tile_n)
        assert not re.search(r"\b(LDL|STL)\b", sass), "local-memory spills in SASS"
        usage = re.search(r"REG:(\d+) STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", res)
        assert usage and int(usage.group(2)) == 0 and int(usage.group(3)) == 0, res


def test_benchmark_tile_choice():
    assert [choose_sm100(s).tile_n for s in BENCH] == [128, 256, 128, 128]
    for sizes in BENCH + TESTS:
        cfg = choose_sm100(sizes)
        assert K.NvFp4GroupGemmSm100.can_implement(sizes, cfg), (sizes, cfg)
        assert cfg.num_acc_stage == (1 if cfg.tile_n == 256 else 2)


# ------------------------------------------------------------------------------ the schedule
SCHEDULE_CASES = [
    *BENCH,
    *TESTS,
    [(4, 128, 256, 1)],  # one tiny group: one tile
    [(0, 512, 256, 1), (40, 256, 512, 1), (0, 128, 256, 1)],  # empty groups first and last
    [(200, 0, 256, 1), (129, 384, 256, 1), (0, 0, 256, 1), (1, 128, 768, 1)],  # N = 0 and M = 129
    [(0, 128, 256, 1)],  # nothing at all
]


def brute_force(sizes, tile_n):
    """Every tile of every group, in the order the schedule numbers them."""
    tiles = []
    for g, (m, n, _k, _l) in enumerate(sizes):
        m_tiles = (m + 127) // 128
        for tn in range(n // tile_n):
            tiles += [(g, tm, tn) for tm in range(m_tiles)]
    return tiles


@pytest.mark.parametrize("sizes", SCHEDULE_CASES)
def test_schedule_matches_brute_force(sizes):
    for tile_n, sms in itertools.product(SM100_TILE_NS, (1, 7, 148, 10_000)):
        if any(n % tile_n for _, n, _, _ in sizes):
            continue
        want = brute_force(sizes, tile_n)
        work = schedule.schedule(sizes, tile_n, sms)
        grid = min(len(want), sms)
        assert len(work) == grid == schedule.grid_size(schedule.tile_starts(sizes, tile_n)[-1], sms)
        for b in range(grid):  # CTA b takes tiles b, b + grid, ...
            assert work[b] == want[b::grid], (tile_n, sms, b)
        flat = [t for w in work for t in w]
        assert sorted(flat) == sorted(want) and len(set(flat)) == len(flat)
        if work:
            assert max(map(len, work)) - min(map(len, work)) <= 1  # balanced


def test_metadata_table():
    sizes = [(0, 512, 256, 1), (40, 256, 512, 1), (300, 7168, 2048, 1)]
    addresses = [(16 * i + 1, 16 * i + 2, 16 * i + 3, 16 * i + 4, 16 * i + 5) for i in range(3)]
    rows = K.metadata_rows(sizes, addresses, 128)
    assert all(len(r) == K.META_COLS for r in rows)
    assert [r[K.PTR_A:K.PTR_C + 1] for r in rows] == [list(a) for a in addresses]
    assert [r[K.COL_M:K.COL_K + 1] for r in rows] == [[m, n, k] for m, n, k, _ in sizes]
    assert [r[K.COL_TILES_M] for r in rows] == [0, 1, 3]
    assert [r[K.COL_TILE_START] for r in rows] == [0, 0, 2]
    assert [r[K.COL_K_TILES] for r in rows] == [1, 2, 8]
    # what the device computes from the table is the host's locate()
    starts = [r[K.COL_TILE_START] for r in rows]
    tiles_m = [r[K.COL_TILES_M] for r in rows]
    assert [schedule.locate(t, starts, tiles_m) for t in range(2 + 3 * 56)] == brute_force(sizes, 128)


# ------------------------------------------------------------------------------ bad input
@pytest.fixture(scope="module")
def submission():
    install_task_module()  # the submission starts with the leaderboard's `from task import ...`
    from problems.group_gemm import submission

    return submission


def _data(m=(40, 128), n=(256, 128), k=(256, 512)):
    return PROBLEM.reference.generate_input(m=list(m), n=list(n), k=list(k), g=len(m), seed=3, device="cpu")


def test_submission_refuses_bad_group_lists(submission):
    abc, sf, re_, sizes = _data()
    with pytest.raises(ValueError, match="need one entry per group, got 2, 2, 1, 2"):
        submission.custom_kernel((abc, sf, re_[:1], sizes))
    with pytest.raises(ValueError, match="need one entry per group, got 1, 2, 2, 2"):
        submission.custom_kernel((abc[:1], sf, re_, sizes))
    with pytest.raises(ValueError, match="at least one group"):
        submission.custom_kernel(([], [], [], []))
    with pytest.raises(TypeError, match="expected a 4-tuple"):
        submission.custom_kernel((abc, sf, sizes))


def test_submission_refuses_mixed_l_and_k_off_256(submission):
    abc, sf, re_, sizes = _data()
    # group 1 with L = 2: every tensor doubled along L
    def twice(t):  # through bytes: torch has no cat for the fp4 dtype
        if t.element_size() == 1:
            return torch.cat([t.view(torch.uint8)] * 2, dim=2).view(t.dtype)
        return torch.cat([t, t], dim=2)

    a, b, c = map(twice, abc[1])
    sfa, sfb = map(twice, sf[1])
    mixed = (abc[:1] + [(a, b, c)], sf[:1] + [(sfa, sfb)], re_, sizes[:1] + [(128, 128, 512, 2)])
    with pytest.raises(ValueError, match="same L, group 0 has L = 1, group 1 has L = 2"):
        submission.custom_kernel(mixed)
    with pytest.raises(ValueError, match="group 1 has K = 384; K must be a positive multiple of 256"):
        submission.custom_kernel(_data(k=(256, 384)))


def test_submission_portable_path_on_cpu_is_exact(submission):
    data = _data()
    want = PROBLEM.reference.ref_kernel(PROBLEM.reference.generate_input(
        m=[40, 128], n=[256, 128], k=[256, 512], g=2, seed=3, device="cpu"))
    out = submission.custom_kernel(data)
    assert len(out) == 2 and all(torch.equal(o, w) for o, w in zip(out, want))


def test_prepare_refuses_by_group_and_name():
    """prepare() is the sm100 branch's entry: on the CPU the only complaint left for the leaderboard's
    tuple is the device, so the dtypes, shapes and strides it expects are the leaderboard's."""
    data = _data()
    sizes = data[3]
    config = choose_sm100(sizes)
    with pytest.raises(ValueError, match="expected a CUDA tensor"):
        K.prepare(data, config, sizes)
    abc, sf, re_, _ = data
    bad_c = [abc[0], (abc[1][0], abc[1][1], abc[1][2].float())]
    with pytest.raises(TypeError, match="group 1 c: expected dtype"):
        K.prepare((bad_c, sf, re_, sizes), config, sizes)
    a_kouter = abc[0][0].view(torch.uint8).permute(1, 0, 2).contiguous().permute(1, 0, 2)
    with pytest.raises(ValueError, match="group 0 a: expected strides"):
        K.prepare(([(a_kouter, *abc[0][1:]), abc[1]], sf, re_, sizes), config, sizes)
    with pytest.raises(ValueError, match="group 1 sfb_reordered: expected strides"):
        K.prepare((abc, sf, [re_[0], (re_[1][0], re_[1][1].contiguous())], sizes), config, sizes)
    with pytest.raises(TypeError, match="group 0 sfasfb_reordered entry must be a pair"):
        K.prepare((abc, sf, [re_[0][0], re_[1]], sizes), config, sizes)
    with pytest.raises(ValueError, match="K must be a positive multiple of 256"):
        K.prepare(data, config, [sizes[0], (128, 128, 320, 1)])
    # what the kernel does not take goes to the portable path
    assert K.prepare(data, config, [sizes[0], (128, 128, 512, 2)]) is None
    assert K.prepare(data, config, [(40, 64, 256, 1), sizes[1]]) is None


def test_no_forbidden_word_in_the_sources():
    """The leaderboard rejects submissions containing this word; the packager inlines these files."""
    word = "str" + "eam"
    root = Path(__file__).resolve().parent.parent
    for f in (root / "problems/group_gemm/kernel_sm100.py", root / "problems/group_gemm/submission.py", Path(__file__)):
        assert word not in f.read_text().lower(), f


# ------------------------------------------------------------------------------ B200 tier (sm100)
# Never run where this file was written (no Blackwell GPU there).
@pytest.mark.sm100
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
def test_matches_reference_on_b200(generator, submission):
    from harness.check import check_groups
    from harness.worker import clone_data

    gen = getattr(PROBLEM.reference, generator)
    cases = [dict(c) for c in PROBLEM.tests + PROBLEM.benchmarks]
    cases += [dict(m=[40], n=[7168], k=[2048], g=1, seed=9), dict(m=[76, 0, 4], n=[256, 512, 128], k=[512, 256, 768],
                                                                       g=3, seed=9)]
    for case in cases:
        data = gen(**case, device="cuda")
        want = PROBLEM.reference.ref_kernel(clone_data(data))
        for _ in range(2):  # the first call prepares, the second is the bound launch
            for _, _, c in data[0]:
                c.fill_(float("nan"))
            out = submission.custom_kernel(data)
            torch.cuda.synchronize()
            ok, message = check_groups(out, want, PROBLEM.rtol, PROBLEM.atol)
            assert ok, f"{case} ({generator}): {message}"


# ------------------------------------------------------------------------------ the msorted variant
def device_walk(rows, total, sm_count):
    """What GroupTileScheduler does with the metadata rows and the launch's tile count, on the host: per
    CTA b of a grid of min(total, SMs), tiles b, b + grid, ...; a tile's row is the last one whose first
    tile is <= it, its coordinates M-fastest inside that row's tiles; the tile's C is the row's C
    address. Returns the stores (C address, M tile, N tile, K blocks) per CTA, in order."""
    starts = [r[K.COL_TILE_START] for r in rows]
    grid = min(total, sm_count)
    work = []
    for b in range(grid):
        stores = []
        for t in range(b, total, grid):
            g = 0
            for i in range(1, len(rows)):
                if starts[i] <= t:
                    g = i
            local = t - starts[g]
            tiles_m = rows[g][K.COL_TILES_M]
            stores.append((rows[g][K.PTR_C], local % tiles_m, local // tiles_m, rows[g][K.COL_K_TILES]))
        work.append(stores)
    return work


def check_coverage(rows, sizes, addresses, tile_n, sm_count):
    """Every tile of every group's C stored exactly once, with that group's K blocks, by the device walk
    of the metadata rows (the launch's tile count is prepare()'s: all groups' tiles); AssertionError
    naming the first tile that is not."""
    total = schedule.tile_starts(sizes, tile_n)[-1]
    stores = [s for cta in device_walk(rows, total, sm_count) for s in cta]
    want = {(addresses[g][4], tm, tn, sizes[g][2] // bs.K_TILE) for g, tm, tn in brute_force(sizes, tile_n)}
    seen = set()
    for s in stores:
        assert s not in seen, f"tile {s} stored twice"
        assert s in want, f"tile {s} is no tile of any group"
        seen.add(s)
    missing = want - seen
    assert not missing, f"{len(missing)} tiles never stored, e.g. {sorted(missing)[0]}"


def _addresses(sizes):
    return [tuple(1000 * g + i for i in range(1, 6)) for g in range(len(sizes))]


@pytest.mark.parametrize("sizes", SCHEDULE_CASES)
def test_msorted_rows_cover_every_tile_once_and_match_the_host_schedule(sizes):
    """The metadata rows in M-sorted order, walked as the device walks them: every group's C gets each
    of its tiles once, in the order schedule_sm100.schedule gives for that group order."""
    from problems.group_gemm.order import group_rank

    order = group_rank(sizes, "msorted")
    addresses = _addresses(sizes)
    for tile_n, sms in itertools.product(SM100_TILE_NS, (1, 7, 148)):
        if any(n % tile_n for _, n, _, _ in sizes):
            continue
        rows = K.metadata_rows(sizes, addresses, tile_n, order)
        assert [r[K.COL_M] for r in rows] == sorted((m for m, _, _, _ in sizes), reverse=True)
        check_coverage(rows, sizes, addresses, tile_n, sms)
        by_c = {addresses[g][4]: g for g in range(len(sizes))}
        total = schedule.tile_starts(sizes, tile_n)[-1]
        walked = [[(by_c[c], tm, tn) for c, tm, tn, _ in cta] for cta in device_walk(rows, total, sms)]
        assert walked == schedule.schedule(sizes, tile_n, sms, order)


@pytest.mark.parametrize("broken", [lambda o: o[:-1] + o[:1], lambda o: o[:-1]], ids=["duplicated", "dropped"])
def test_coverage_check_fails_for_an_order_that_duplicates_or_drops_a_group(broken, monkeypatch):
    """Broken on purpose: the permutation check bypassed, an order that names one group twice (and
    another never) or drops a group: the device walk of its rows misses that group's C."""
    sizes = BENCH[0]
    order = broken(list(range(len(sizes)))[::-1])
    monkeypatch.setattr(schedule, "check_permutation", lambda o, _g: list(o))
    rows = K.metadata_rows(sizes, _addresses(sizes), 128, order)
    with pytest.raises(AssertionError, match="never stored|stored twice|is no tile of any group"):
        check_coverage(rows, sizes, _addresses(sizes), 128, 148)


def test_an_order_that_is_not_a_permutation_is_refused():
    sizes = BENCH[2]
    with pytest.raises(ValueError, match=r"expected a permutation of 0..1, got \[1, 1\]"):
        K.metadata_rows(sizes, _addresses(sizes), 128, [1, 1])
    with pytest.raises(ValueError, match="got \\[0\\]"):
        schedule.schedule(sizes, 128, 148, [0])


def test_msorted_chooser_and_registry():
    from problems.group_gemm.config import SM100_VARIANTS, choose_sm100_msorted

    assert {"conservative", "msorted"} <= set(SM100_VARIANTS)
    assert SM100_VARIANTS["conservative"].choose is choose_sm100
    for sizes in BENCH:  # no benchmark case lists its groups by descending M
        cfg = choose_sm100_msorted(sizes)
        assert cfg.order == "msorted" and K.NvFp4GroupGemmSm100.can_implement(sizes, cfg)
        # every group in a benchmark case has one K: the model's busiest CTA is the same in either order
        assert cfg.tile_n == choose_sm100(sizes).tile_n
    assert choose_sm100_msorted([(384, 4096, 1536, 1), (128, 4096, 1536, 1)]) is None  # already sorted
    # where K differs, the order changes the model's busiest CTA
    sizes = [(64, 128, 4096, 1), (384, 128, 1024, 1), (128, 128, 4096, 1), (64, 128, 1024, 1)]
    assert [schedule.estimated_cost(sizes, 128, 2, o) for o in (None, [1, 2, 0, 3])] == [10752, 7680]


def test_msorted_compiles_to_the_conservative_binary(dump_root):
    """The group order is host-side: the config that carries it compiles to byte-identical PTX."""
    from dataclasses import replace

    base = choose_sm100(BENCH[0])
    _, ptx_base, _ = artifacts(base, dump_root)
    sorted_cfg = replace(base, order="msorted")
    out = dump_root / "msorted"
    out.mkdir(exist_ok=True)
    K.compile_for(sorted_cfg, options=f"--keep-ptx --dump-dir {out}")
    (ptx,) = glob.glob(str(out / "*.ptx"))
    assert Path(ptx).read_text() == ptx_base
