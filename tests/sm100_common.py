"""Helpers of the sm100 CPU tier (tests/test_sm100_kernels.py, tests/test_sm100_ptx_structure.py): the
kernels compiled once per configuration for the session with PTX and cubin kept, the SASS and
resource dumps, and the PTX checks every configuration must pass."""

from __future__ import annotations

import glob
import os
import re
import subprocess
from pathlib import Path

import pytest

from harness.problem import load_problem
from problems.dual_gemm import config as dual_config
from problems.dual_gemm import kernel_sm100 as dual_k
from problems.gemm import config as gemm_config
from problems.gemm import kernel_sm100 as gemm_k
from shared.cute import sm100_blockscaled as bs
from tests.cuda_tools import find_tool

ROOT = Path(__file__).resolve().parent.parent
KERNELS = {"gemm": gemm_k, "dual_gemm": dual_k}
CHOOSE = {"gemm": gemm_config.choose_sm100, "dual_gemm": dual_config.choose_sm100}  # (m, n, k, l[, sms]) -> config
NUM_B = {"gemm": 1, "dual_gemm": 2}
SMALL = (128, 128, 256, 1)


def cases(problem: str, which: str):
    return [(c["m"], c["n"], c["k"], c["l"]) for c in getattr(load_problem(problem), which)]


# ------------------------------------------------------------------------------ compile + artifacts
_ARTIFACTS: dict = {}


def artifacts(problem: str, shape, dump_root: Path, config=None):
    """Compile (cached for the session) with PTX and cubin kept; returns (compiled, ptx, cubin_path)."""
    mod = KERNELS[problem]
    config = config or CHOOSE[problem](*shape)
    key = (problem, config)
    if key not in _ARTIFACTS:
        out = dump_root / f"{problem}_{len(_ARTIFACTS)}"
        out.mkdir()
        options = f"--keep-ptx --keep-cubin --dump-dir {out}"
        compiled = mod.compile_for(*shape, arch="sm_100a", config=config, options=options)
        ptx_files = glob.glob(str(out / "*.ptx"))
        cubins = glob.glob(str(out / "*.cubin"))
        assert len(ptx_files) == 1 and len(cubins) == 1, f"expected one .ptx and one .cubin in {out}"
        _ARTIFACTS[key] = (compiled, Path(ptx_files[0]).read_text(), Path(cubins[0]), options)
    compiled, ptx, cubin, options = _ARTIFACTS[key]
    # Every shape of the same config is served by the same binary.
    assert mod.compile_for(*shape, arch="sm_100a", config=config, options=options) is compiled
    return compiled, ptx, cubin


def sass_and_resources(cubin: Path) -> tuple[str, str]:
    cuobjdump = find_tool("cuobjdump")
    nvdisasm = find_tool("nvdisasm")
    if not cuobjdump or not nvdisasm:
        pytest.skip("cuobjdump/nvdisasm not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(nvdisasm), os.environ.get("PATH", "")]))
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, env=env, check=True)
    res = subprocess.run([cuobjdump, "-res-usage", str(cubin)], capture_output=True, text=True, env=env, check=True)
    return sass.stdout, res.stdout


def s2t_copies(num_b: int, tile_n: int) -> int:
    sfb_atoms = -(-tile_n // 128)
    return (bs.K_TILE // bs.MMA_INST_K) * (1 + num_b * sfb_atoms)


def check_ptx(ptx: str, num_b: int, tile_n: int) -> None:
    assert re.search(r"^\.target\s+sm_100a", ptx, re.M), "PTX is not for sm_100a"
    mmas = re.findall(r"tcgen05\.mma\.cta_group::1\.kind::mxf4nvf4\.block_scale\.block16", ptx)
    # one MMA per 64-wide K step of a 256-wide K block, per B operand (A is shared)
    assert len(mmas) == (bs.K_TILE // bs.MMA_INST_K) * num_b
    assert "tcgen05.alloc" in ptx and "tcgen05.dealloc" in ptx and "tcgen05.relinquish_alloc_permit" in ptx
    # scales: one 4x32dp128b copy per K step and 128-row atom, for SFA and for every SFB
    assert len(re.findall(r"tcgen05\.cp\.cta_group::1\.32x128b\.warpx4", ptx)) == s2t_copies(num_b, tile_n)
    assert "tcgen05.ld.sync.aligned.32x32b" in ptx
    assert "tcgen05.commit" in ptx
    # TMA: A, SFA and each B / SFB
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.shared::\w+\.global\.tile", ptx)) == 2 * (1 + num_b)
    # The stage barrier expects exactly the bytes the TMAs deliver (a mismatch hangs the kernel).
    expect = re.findall(r"mbarrier\.arrive\.expect_tx\.shared\.b64\s+%\w+, \[[^\]]+\], (%r\d+);", ptx)
    assert len(expect) == 1, expect
    tx = re.findall(rf"mov\.b32\s+{re.escape(expect[0])}, (\d+);", ptx)
    assert [int(x) for x in tx] == [bs.stage_bytes(tile_n, num_b)]
    assert ".local" not in ptx, "PTX uses local memory"
    # tcgen05.ld is asynchronous: no register it wrote may be used before tcgen05.wait::ld
    pending = False
    for line in ptx.splitlines():
        if "tcgen05.ld." in line:
            pending = True
        elif "tcgen05.wait::ld" in line:
            pending = False
        elif pending and re.search(r"\b(cvt\.rn|st\.global|(mul|add|sub|fma\.rn)\.f32|ex2\.approx)", line):
            raise AssertionError(f"tcgen05.ld result used before tcgen05.wait::ld: {line.strip()}")
