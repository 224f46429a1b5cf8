"""Hopper (sm_90a) fused dual GEMM kernel: compiled and inspected on the CPU, run on an sm_90 GPU.

CPU tier: every config the chooser can return compiles for sm_90a; PTX has 32 fp16 wgmma per stage
(16 per product), the 6 TMA loads, the exact E4M3 -> f16 conversion; SASS has the HGMMAs, no local
memory and no accumulator read while a wgmma group is in flight; every manifest shape is accepted;
bad shapes raise ValueError; the portable path matches the reference on the CPU.
GPU tier (sm90): every manifest case, leaderboard and stress data, output NaN-poisoned first.
"""

from __future__ import annotations

import pytest
import torch

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

import sm90_common as C  # noqa: E402

from problems.dual_gemm import config as cfg  # noqa: E402
from problems.dual_gemm import kernel_sm90 as K  # noqa: E402
from problems.dual_gemm import submission  # noqa: E402
from shared.check import check_tensor  # noqa: E402
from shared.cute.sm90_blockscaled_mainloop import launch_sm90  # noqa: E402
from shared.problem import load_problem  # noqa: E402

PROBLEM = "dual_gemm"
ALL = C.cases(PROBLEM, "tests") + C.cases(PROBLEM, "benchmarks")
CONFIGS = sorted(set(cfg.SM90_CANDIDATES.values()) | {cfg.choose_sm90(m, n, k) for m, n, k, _ in ALL}, key=str)


@pytest.fixture(scope="session")
def dump_root(tmp_path_factory):
    return tmp_path_factory.mktemp("sm90_dual")


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"m{c.tile_m}x{c.n_cwg}s{c.stages}")
def test_compiles_for_sm90a(config, dump_root):
    ptx, cubin = C.artifacts(K.DualGemmSm90, config, dump_root)
    C.check_ptx(ptx, num_b=2)
    C.check_sass(cubin, num_b=2)


def test_every_manifest_shape_is_taken_by_the_kernel():
    for m, n, k, l in ALL:
        assert K.DualGemmSm90.can_implement(m, n, k, l, cfg.choose_sm90(m, n, k)), (m, n, k, l)


@pytest.mark.parametrize("shape,needle", [((256, 512, 320, 1), "multiple of 256"),
                                          ((200, 512, 512, 1), "tile_m"),
                                          ((256, 100, 512, 1), "N must be"),
                                          ((256, 512, 512, 2), "L must be 1")])
def test_unsupported_shapes_raise(shape, needle):
    m, n, k, l = shape
    a = torch.zeros(m, k // 2, l, dtype=torch.uint8)
    b = torch.zeros(n, k // 2, l, dtype=torch.uint8)
    sa = torch.zeros(m, k // 16, l, dtype=torch.uint8)
    sb = torch.zeros(n, k // 16, l, dtype=torch.uint8)
    c = torch.zeros(m, n, l, dtype=torch.float16)
    with pytest.raises(ValueError, match=needle):
        launch_sm90(K.DualGemmSm90, cfg.SM90_DEFAULT, a, (b, b), sa, (sb, sb), c)


def test_run_rejects_cpu_tensors_by_name():
    data = load_problem(PROBLEM).reference.generate_input(m=128, n=64, k=256, l=1, seed=1, device="cpu")
    with pytest.raises(ValueError, match="a: expected a CUDA tensor"):
        K.run(data)


def test_portable_path_matches_reference_on_cpu():
    ref = load_problem(PROBLEM).reference
    data = ref.generate_input(m=128, n=64, k=512, l=1, seed=3, device="cpu")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    ok, msg = check_tensor(submission.custom_kernel(data), want, 1e-3, 1e-3)
    assert ok, msg


def test_submission_has_no_forbidden_word():
    from pathlib import Path

    for f in ("problems/dual_gemm/submission.py", "problems/dual_gemm/kernel_sm90.py",
              "problems/dual_gemm/config.py", "shared/cute/sm90_blockscaled_mainloop.py"):
        text = (Path(__file__).resolve().parent.parent / f).read_text().lower()
        assert "str" "eam" not in text, f


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("case", ALL, ids=lambda s: "x".join(map(str, s)))
def test_sm90_kernel_matches_reference(case, generator):
    C.run_and_check(PROBLEM, K.run, case, generator)


@pytest.mark.gpu
@pytest.mark.sm90
def test_submission_dispatches_to_the_sm90_kernel():
    ref = load_problem(PROBLEM).reference
    data = ref.generate_input(m=256, n=512, k=256, l=1, seed=1111, device="cuda")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    ok, msg = check_tensor(submission.custom_kernel(data), want, 1e-3, 1e-3)
    assert ok, msg
