"""GEMV kernels: compile for sm_90a and sm_100a on the CPU (resource checks on the kept PTX and, where
ptxas is installed, its register/spill report), the submission's validation, and on an H100 the
sm90 kernel against the reference on every manifest case with both generators."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
import yaml

from problems.gemv import submission
from problems.gemv.config import GemvConfig, choose_sm90, choose_sm100, fits, lanes_per_row, tile_rows
from shared.device_facts import device_arch

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "..", "problems", "gemv", "manifest.yaml")


def manifest_cases(kind: str) -> list[tuple[int, int, int]]:
    with open(MANIFEST) as f:
        m = yaml.safe_load(f)
    return [(c["m"], c["k"], c["l"]) for c in m[kind]]


ALL_CASES = sorted(set(manifest_cases("tests") + manifest_cases("benchmarks")))



# ---------------------------------------------------------------------------------------------
# config
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m,k,l", ALL_CASES)
@pytest.mark.parametrize("choose", [choose_sm90, choose_sm100])
def test_chooser_fits_every_manifest_case(m, k, l, choose):
    cfg = choose(m, k, l)
    assert fits(cfg, m, k), (cfg, tile_rows(cfg, k))


def test_lanes_per_row():
    assert lanes_per_row(16384) == 32 and lanes_per_row(1536) == 16 and lanes_per_row(256) == 8
    assert lanes_per_row(64) == 2


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="k_warps"):
        GemvConfig(warps=8, k_warps=3)
    with pytest.raises(ValueError, match="rows"):
        GemvConfig(rows=0)


# ---------------------------------------------------------------------------------------------
# compile (CPU): both architectures, no local memory
# ---------------------------------------------------------------------------------------------
def _compile(arch: str, m: int, k: int, l: int, tmp_path):
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
    from problems.gemv.kernel_sm90 import compile_gemv

    if arch == "sm_90a":
        from problems.gemv.kernel_sm90 import GemvSm90 as Kernel
        cfg, sms = choose_sm90(m, k, l), 132
    else:
        from problems.gemv.kernel_sm100 import GemvSm100 as Kernel
        cfg, sms = choose_sm100(m, k, l), 148
    # Compile options (not env vars: the DSL reads those once, at import) pick the target and keep the PTX.
    compile_gemv(Kernel, cfg, m, k, l, sms, options=f"--keep-ptx --dump-dir {tmp_path}")
    ptx = glob.glob(os.path.join(str(tmp_path), "**", "*.ptx"), recursive=True)
    assert ptx, f"no PTX kept under {tmp_path}"
    return max(ptx, key=os.path.getmtime)


def _ptxas_report(ptx_path: str, arch: str) -> str | None:
    """ptxas -v on the kept PTX, or None without a usable ptxas (its PTX version may be older)."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        return None
    text = open(ptx_path).read()
    m = re.search(r"release (\d+)\.(\d+)", subprocess.run([ptxas, "--version"], capture_output=True,
                                                           text=True).stdout)
    if m:  # CUDA 13.x ptxas reads PTX ISA 9.x; lower the header when the DSL's PTX is newer
        text = re.sub(r"^\.version \d+\.\d+", f".version {int(m.group(1)) - 4}.{m.group(2)}", text,
                      count=1, flags=re.M)
    src = ptx_path + ".ptxas.ptx"
    open(src, "w").write(text)
    r = subprocess.run([ptxas, f"-arch={arch}", "-v", src, "-o", os.devnull], capture_output=True, text=True)
    return r.stderr if r.returncode == 0 else None


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("m,k,l", [(7168, 16384, 1), (4096, 7168, 8), (7168, 2048, 4), (128, 256, 1),
                                   (128, 1536, 1), (2432, 4608, 2)])
def test_compiles_without_local_memory(arch, m, k, l, tmp_path):
    ptx_path = _compile(arch, m, k, l, tmp_path)
    ptx = open(ptx_path).read()
    assert f".target {arch}" in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx, "the kernel spills to local memory"
    assert "ld.global.nc.L1::no_allocate" in ptx  # A and SFA bypass L1
    if arch == "sm_100a":
        assert "cvt.rn.f16x2.e2m1x2" in ptx
    else:
        assert "dp4a.s32.s32" in ptx and "prmt.b32" in ptx
    report = _ptxas_report(ptx_path, arch)
    if report is not None:
        assert "0 bytes spill stores, 0 bytes spill loads" in report, report
        regs = int(re.search(r"Used (\d+) registers", report).group(1))
        assert regs <= 128, report


# ---------------------------------------------------------------------------------------------
# submission: validation and the portable path (CPU)
# ---------------------------------------------------------------------------------------------
def _cpu_case(m=128, k=256, l=2, seed=7):
    from problems.gemv import reference as ref

    return ref.generate_input(m=m, k=k, l=l, seed=seed, device="cpu")


def test_submission_imports_without_side_effects():
    """Importing the submission compiles nothing: the kernel modules load on the first GPU call."""
    code = ("import sys, problems.gemv.submission\n"
            "assert not [m for m in sys.modules if m.startswith('problems.gemv.kernel')], sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], cwd=os.path.join(HERE, ".."), check=True)
    src = open(submission.__file__).read()
    assert "stream" not in src.lower()


def test_no_forbidden_word_in_gemv_sources():
    root = os.path.join(HERE, "..")
    for rel in ("problems/gemv/submission.py", "problems/gemv/kernel_sm90.py", "problems/gemv/kernel_sm100.py",
                "problems/gemv/config.py", "shared/cute/fp4_decode.py"):
        assert "stream" not in open(os.path.join(root, rel)).read().lower(), rel


@pytest.mark.parametrize("gen", ["generate_input", "generate_stress_input"])
def test_portable_path_matches_reference(gen):
    from problems.gemv import reference as ref

    data = getattr(ref, gen)(m=128, k=512, l=2, seed=3, device="cpu")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    data[-1].fill_(float("nan"))
    got = submission.custom_kernel(data)
    assert torch.equal(got, want)


def test_validation_errors():
    a, b, sfa, sfb, sfap, sfbp, c = _cpu_case()
    with pytest.raises(TypeError, match="7-tuple"):
        submission.custom_kernel((a, b, sfa))
    with pytest.raises(TypeError, match="sfa must have dtype"):
        submission.custom_kernel((a, b, sfa.view(torch.int8).float(), sfb, sfap, sfbp, c))
    with pytest.raises(TypeError, match="c must have dtype"):
        submission.custom_kernel((a, b, sfa, sfb, sfap, sfbp, c.float()))
    with pytest.raises(ValueError, match="sfa must have shape"):
        submission.custom_kernel((a, b, sfa[:, :-1], sfb, sfap, sfbp, c))
    with pytest.raises(ValueError, match="c must have shape"):
        submission.custom_kernel((a, b, sfa, sfb, sfap, sfbp, c[:-1]))
    with pytest.raises(ValueError, match="b must have shape"):
        submission.custom_kernel((a, b[:, :-1], sfa, sfb, sfap, sfbp, c))
    with pytest.raises(ValueError, match="3-D"):
        submission.custom_kernel((a[..., 0], b, sfa, sfb, sfap, sfbp, c))


def test_kernel_can_implement_reasons():
    pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed")
    from problems.gemv.kernel_sm90 import GemvSm90

    ok, why = GemvSm90.can_implement(GemvConfig(), 128, 96, 1)
    assert not ok and "64" in why
    ok, why = GemvSm90.can_implement(GemvConfig(8, 1, 4, 2, 0), 100, 16384, 1)
    assert not ok and "row tile" in why
    with pytest.raises(ValueError, match="GemvSm90"):
        GemvSm90(GemvConfig(), 128, 96, 1)


# ---------------------------------------------------------------------------------------------
# GPU tier: the sm90 kernel through the submission on every manifest case
# ---------------------------------------------------------------------------------------------
def _run_and_check(m, k, l, gen_name, seed=1111):
    from harness.check import check_tensor
    from problems.gemv import reference as ref

    data = getattr(ref, gen_name)(m=m, k=k, l=l, seed=seed, device="cuda")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    data[-1].fill_(float("nan"))  # poison: every output element must be written
    got = submission.custom_kernel(data)
    torch.cuda.synchronize()
    ok, msg = check_tensor(got, want, 1e-3, 1e-3)
    assert ok, f"{(m, k, l)} {gen_name}: {msg}"
    return got, want


def _assert_kernel_path(m, k, l):
    from problems.gemv import kernel_sm90

    arch = device_arch(torch.device("cuda"))
    name = {"sm90": "GemvSm90", "sm100": "GemvSm100"}[arch]
    keys = [key for key, fn in kernel_sm90._COMPILED.items() if key[:4] == (name, m, k, l) and fn]
    assert keys, f"{(m, k, l)} did not go through the {arch} kernel"


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("gen_name", ["generate_input", "generate_stress_input"])
@pytest.mark.parametrize("m,k,l", ALL_CASES)
def test_sm90_kernel_manifest_cases(m, k, l, gen_name):
    got, want = _run_and_check(m, k, l, gen_name)
    _assert_kernel_path(m, k, l)
    if gen_name == "generate_input":  # leaderboard data: the exact sum rounded once
        assert torch.equal(got, want)


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("m,k,l", [(128, 64, 1), (256, 128, 3), (640, 192, 1), (1152, 960, 2),
                                   (384, 8192, 1), (128, 32768, 1), (4096, 320, 5)])
def test_sm90_kernel_extra_shapes(m, k, l):
    for gen_name in ("generate_input", "generate_stress_input"):
        _run_and_check(m, k, l, gen_name, seed=5)
    _assert_kernel_path(m, k, l)


@pytest.mark.gpu
@pytest.mark.sm90
def test_sm90_non_standard_c_layout_and_k_not_multiple_of_64():
    from problems.gemv import reference as ref

    # K % 64 != 0 -> portable path, still exact
    data = ref.generate_input(m=128, k=96, l=1, seed=1, device="cuda")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    assert torch.equal(submission.custom_kernel(data), want)
    # c with other strides: the kernel writes a scratch buffer and copies
    data = ref.generate_input(m=256, k=512, l=2, seed=2, device="cuda")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    c2 = torch.full((256, 2, 1), float("nan"), dtype=torch.float16, device="cuda").permute(0, 2, 1)
    got = submission.custom_kernel(data[:-1] + (c2,))
    assert got is c2 and torch.equal(got, want)


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("cfg", [GemvConfig(8, 1, 2, 2, 3, 1), GemvConfig(8, 2, 2, 2, 0, 1),
                                 GemvConfig(4, 1, 4, 1, 2, 2), GemvConfig(8, 1, 1, 4, 2, 1),
                                 GemvConfig(8, 1, 2, 2, 0, 0)])
@pytest.mark.parametrize("m,k,l", [(4096, 7168, 2), (1152, 960, 2), (7168, 2048, 1), (256, 16384, 1)])
def test_sm90_kernel_configs(cfg, m, k, l):
    """Persistent grids, intra-CTA split-K, tail k-blocks and prefetch settings, kernel called directly."""
    from harness.check import check_tensor
    from problems.gemv import reference as ref
    from problems.gemv.kernel_sm90 import GemvSm90
    from scripts.tune.gemv import compile_cfg, launch

    if not GemvSm90.can_implement(cfg, m, k, l)[0]:
        pytest.skip(f"{cfg} does not take {(m, k, l)}")
    fn = compile_cfg(cfg, m, k, l, torch.cuda.get_device_properties(0).multi_processor_count)
    for gen in (ref.generate_input, ref.generate_stress_input):
        data = gen(m=m, k=k, l=l, seed=11)
        want = ref.ref_kernel(tuple(t.clone() for t in data))
        data[-1].fill_(float("nan"))
        got = launch(fn, data)
        torch.cuda.synchronize()
        ok, msg = check_tensor(got, want, 1e-3, 1e-3)
        assert ok, f"{cfg} {(m, k, l)} {gen.__name__}: {msg}"
