"""Hopper (sm_90a) block-scaled GEMM and fused dual GEMM kernels (one mainloop, shared/cute/
sm90_blockscaled_mainloop.py): compiled and inspected on the CPU, run on an sm_90 GPU.

CPU tier: every config the chooser can return compiles for sm_90a; PTX has 16 fp16 wgmma per stage and
B operand, one TMA load per operand and scale tensor, the exact E4M3 -> f16 conversion; SASS has the
HGMMAs, no local memory and no accumulator read while a wgmma group is in flight; every manifest shape
is accepted; bad shapes raise ValueError; the portable path matches the reference on the CPU.
GPU tier (sm90): every manifest case, leaderboard and stress data, output NaN-poisoned first.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import torch

cutlass = pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")

from shared.check import check_tensor  # noqa: E402
from shared.cute.sm90_blockscaled_mainloop import launch_sm90  # noqa: E402
from shared.problem import load_problem  # noqa: E402
from tests import sm90_common as C  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
# problem -> (kernel class name, number of B operands, config used for the shape-error tests)
KERNELS = {"gemm": ("GemmSm90", 1, "SM90_M128"), "dual_gemm": ("DualGemmSm90", 2, "SM90_DEFAULT")}


def parts(problem):
    """(kernel module, config module, submission module, kernel class, num_b, shape-test config)."""
    kmod = importlib.import_module(f"problems.{problem}.kernel_sm90")
    cmod = importlib.import_module(f"problems.{problem}.config")
    sub = importlib.import_module(f"problems.{problem}.submission")
    cls_name, num_b, cfg_name = KERNELS[problem]
    return kmod, cmod, sub, getattr(kmod, cls_name), num_b, getattr(cmod, cfg_name)


def all_cases(problem):
    return C.cases(problem, "tests") + C.cases(problem, "benchmarks")


def configs(problem):
    cmod = parts(problem)[1]
    chosen = {cmod.choose_sm90(m, n, k) for m, n, k, _ in all_cases(problem)}
    return sorted(set(cmod.SM90_CANDIDATES.values()) | chosen, key=str)


@pytest.fixture(scope="session")
def dump_root(tmp_path_factory):
    return tmp_path_factory.mktemp("sm90")


@pytest.mark.parametrize("problem,config", [(p, c) for p in KERNELS for c in configs(p)],
                         ids=lambda x: x if isinstance(x, str) else f"m{x.tile_m}x{x.n_cwg}s{x.stages}")
def test_compiles_for_sm90a(problem, config, dump_root):
    _, _, _, cls, num_b, _ = parts(problem)
    ptx, cubin = C.artifacts(cls, config, dump_root)
    C.check_ptx(ptx, num_b=num_b)
    C.check_sass(cubin, num_b=num_b)


@pytest.mark.parametrize("problem", KERNELS)
def test_every_manifest_shape_is_taken_by_the_kernel(problem):
    _, cmod, _, cls, _, _ = parts(problem)
    for m, n, k, l in all_cases(problem):
        assert cls.can_implement(m, n, k, l, cmod.choose_sm90(m, n, k)), (m, n, k, l)


@pytest.mark.parametrize("problem", KERNELS)
@pytest.mark.parametrize("shape,needle", [((256, 512, 320, 1), "multiple of 256"),
                                          ((200, 512, 512, 1), "tile_m"),
                                          ((256, 100, 512, 1), "N must be"),
                                          ((256, 512, 512, 2), "L must be 1")])
def test_unsupported_shapes_raise(problem, shape, needle):
    _, _, _, cls, num_b, config = parts(problem)
    m, n, k, l = shape
    a = torch.zeros(m, k // 2, l, dtype=torch.uint8)
    b = torch.zeros(n, k // 2, l, dtype=torch.uint8)
    sa = torch.zeros(m, k // 16, l, dtype=torch.uint8)
    sb = torch.zeros(n, k // 16, l, dtype=torch.uint8)
    c = torch.zeros(m, n, l, dtype=torch.float16)
    with pytest.raises(ValueError, match=needle):
        launch_sm90(cls, config, a, (b,) * num_b, sa, (sb,) * num_b, c)


@pytest.mark.parametrize("problem", KERNELS)
def test_run_rejects_cpu_tensors_by_name(problem):
    kmod = parts(problem)[0]
    data = load_problem(problem).reference.generate_input(m=128, n=64, k=256, l=1, seed=1, device="cpu")
    with pytest.raises(ValueError, match="a: expected a CUDA tensor"):
        kmod.run(data)


@pytest.mark.parametrize("problem", KERNELS)
def test_portable_path_matches_reference_on_cpu(problem):
    sub = parts(problem)[2]
    ref = load_problem(problem).reference
    data = ref.generate_input(m=128, n=64, k=512, l=1, seed=3, device="cpu")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    ok, msg = check_tensor(sub.custom_kernel(data), want, 1e-3, 1e-3)
    assert ok, msg


@pytest.mark.parametrize("problem", KERNELS)
def test_submission_has_no_forbidden_word(problem):
    for f in (f"problems/{problem}/submission.py", f"problems/{problem}/kernel_sm90.py",
              f"problems/{problem}/config.py", "shared/cute/sm90_blockscaled_mainloop.py"):
        assert "str" "eam" not in (REPO / f).read_text().lower(), f


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("generator", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("problem,case", [(p, c) for p in KERNELS for c in all_cases(p)],
                         ids=lambda x: x if isinstance(x, str) else "x".join(map(str, x)))
def test_sm90_kernel_matches_reference(problem, case, generator):
    C.run_and_check(problem, parts(problem)[0].run, case, generator)


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("problem", KERNELS)
def test_submission_dispatches_to_the_sm90_kernel(problem):
    sub = parts(problem)[2]
    ref = load_problem(problem).reference
    data = ref.generate_input(m=256, n=512, k=256, l=1, seed=1111, device="cuda")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    ok, msg = check_tensor(sub.custom_kernel(data), want, 1e-3, 1e-3)
    assert ok, msg
