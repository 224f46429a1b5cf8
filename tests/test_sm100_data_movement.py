"""B200 readiness, CPU tier: the sm100 kernels' data movement emulated on the host
(tests/movement_emulator.py: tile schedule, stage ring, K order, scale bytes through the kernels'
layouts into the MMA) on real leaderboard data, checked against the reference."""

from __future__ import annotations

import pytest

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

from harness.problem import load_problem  # noqa: E402
from tests.movement_emulator import emulate  # noqa: E402
from tests.sm100_facts import CONFIGS  # noqa: E402

EMULATED = [
    ("gemm", CONFIGS[0][1], (384, 384, 512, 2), 5),  # 64-wide tiles: odd N tiles, several tiles per CTA
    ("gemm", CONFIGS[2][1], (256, 512, 768, 1), 3),  # 256-wide tiles: two SFB atoms
    ("dual_gemm", CONFIGS[3][1], (256, 384, 512, 2), 7),
    ("dual_gemm", CONFIGS[4][1], (384, 256, 512, 1), 2),
]


@pytest.mark.parametrize("problem,config,shape,grid", EMULATED,
                         ids=[f"{p}-n{c.tile_n}-{'x'.join(map(str, s))}-grid{g}" for p, c, s, g in EMULATED])
def test_emulated_data_movement_matches_the_reference(problem, config, shape, grid):
    from harness.check import check_tensor

    prob = load_problem(problem)
    m, n, k, l = shape
    data = prob.reference.generate_input(m=m, n=n, k=k, l=l, seed=11, device="cpu")
    got = emulate(problem, config, data, grid)
    want = prob.reference.ref_kernel(prob.reference.generate_input(m=m, n=n, k=k, l=l, seed=11, device="cpu"))
    ok, message = check_tensor(got, want, prob.rtol, prob.atol)
    assert ok, message
