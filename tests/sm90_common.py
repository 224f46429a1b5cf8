"""Helpers shared by tests/test_gemm_kernels.py and tests/test_dual_gemm_kernels.py (Hopper kernels).

CPU tier: compile for sm_90a with PTX and cubin kept, then inspect them: wgmma in the PTX, HGMMA in
the SASS, no local memory, and no instruction reading a wgmma accumulator while a wgmma group may
still be in flight (ptxas was once seen hoisting the epilogue's conversions above the final
wgmma.wait_group; the mainloop now drains inside the last K tile, and this check keeps it so).
GPU tier: every manifest case, leaderboard and stress generators, output NaN-poisoned first.
"""

from __future__ import annotations

import glob
import re
import subprocess
from pathlib import Path

import pytest
import torch

from harness.check import check_tensor
from harness.problem import load_problem
from tests.cuda_tools import find_tool

_ARTIFACTS: dict = {}


def cases(problem: str, which: str):
    return [(c["m"], c["n"], c["k"], c["l"]) for c in getattr(load_problem(problem), which)]


def artifacts(kernel_cls, config, dump_root: Path):
    """Compile for sm_90a (cached per session); returns (ptx text, cubin path)."""
    from shared.cute.sm90_host import compile_sm90

    key = (kernel_cls.__name__, config)
    if key not in _ARTIFACTS:
        out = dump_root / f"{kernel_cls.__name__}_{len(_ARTIFACTS)}"
        out.mkdir()
        compile_sm90(kernel_cls, config, options=f"--keep-ptx --keep-cubin --dump-dir {out}")
        ptx = glob.glob(str(out / "*.ptx"))
        cubin = glob.glob(str(out / "*.cubin"))
        assert len(ptx) == 1 and len(cubin) == 1, f"expected one .ptx and one .cubin in {out}"
        _ARTIFACTS[key] = (Path(ptx[0]).read_text(), Path(cubin[0]))
    return _ARTIFACTS[key]


def check_ptx(ptx: str, num_b: int) -> None:
    assert re.search(r"^\.target\s+sm_90a", ptx, re.M), "PTX is not for sm_90a"
    mmas = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16", ptx)
    # per 256-K stage: 16 k16 steps per B operand
    assert len(mmas) == 16 * num_b, len(mmas)
    # TMA: A, SFA and each B / SFB
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cta\.global", ptx)) == 2 * (1 + num_b)
    assert "cvt.rn.f16x2.e4m3x2" in ptx and "fence.proxy.async.shared::cta" in ptx
    assert ".local" not in ptx, "PTX uses local memory"


def sass_of(cubin: Path) -> tuple[str, str]:
    cuobjdump = find_tool("cuobjdump")
    if not cuobjdump:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    sass = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    res = subprocess.run([cuobjdump, "-res-usage", str(cubin)], capture_output=True, text=True, check=True).stdout
    return sass, res


def sass_instructions(sass: str) -> list[tuple[int, str]]:
    """(address, instruction text) of every instruction of a cuobjdump -sass listing, in address order."""
    return [(int(m.group(1), 16), m.group(2).strip()) for m in re.finditer(r"/\*([0-9a-f]+)\*/\s+(.*?);", sass)]


def accumulator_hazards(sass: str) -> list[str]:
    """Instructions (in address order) that touch an HGMMA accumulator while a group may be pending."""
    accs: set[int] = set()
    pending = 0
    bad = []
    for at, instruction in sass_instructions(sass):
        text = re.sub(r"^@!?U?P\d+\s+", "", instruction)
        op = text.split()[0]
        if op.startswith("HGMMA"):
            regs = re.findall(r"\bR(\d+)\b", text)
            width = int(re.search(r"64x(\d+)x16", op).group(1)) // 2
            accs |= set(range(int(regs[0]), int(regs[0]) + width))
            pending += "gsb0" in text
        elif op.startswith("WARPGROUP.DEPBAR"):
            pending = min(pending, int(text.split(",")[-1], 16))
        elif pending and any(int(r) in accs for r in re.findall(r"\bR(\d+)\b", text)):
            bad.append(f"{at:04x} {text}")
    return bad


def wgmma_serialized(sass: str) -> bool:
    """True when no wait leaves a wgmma group in flight: ptxas drains after every group (it does so,
    with only an advisory message, when the consumers' registers run short), so the decode of the
    next chunk no longer overlaps the tensor cores."""
    return not re.search(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x[1-9]", sass)


def spills_in_inner_loops(sass: str) -> list[str]:
    """Local-memory (spill) loads and stores inside an innermost loop: a backward branch's range that holds no
    other backward branch (the K loops, the decoders' loop). A value spilled around them, reloaded once per tile,
    costs next to nothing; one inside them costs on every K step."""
    code = sass_instructions(sass)
    loops = [(int(t.group(1), 16), at) for at, text in code
             if (t := re.search(r"\bBRA\s+(?:`\()?0x([0-9a-f]+)", text)) and int(t.group(1), 16) <= at]
    inner = [(lo, hi) for lo, hi in loops if not any((lo, hi) != (a, b) and lo <= a and b <= hi for a, b in loops)]
    return [f"{at:x} {text}" for at, text in code
            if re.search(r"\b(?:LDL|STL)\b", text) and any(lo <= at <= hi for lo, hi in inner)]


def check_sass(cubin: Path, num_b: int) -> None:
    sass, res = sass_of(cubin)
    assert len(re.findall(r"\bHGMMA\.64x\d+x16\.F32\b", sass)) == 16 * num_b
    assert re.search(r"LOCAL:0\b", res) and re.search(r"STACK:0\b", res), f"spills (local memory or stack): {res}"
    assert not accumulator_hazards(sass), accumulator_hazards(sass)[:5]
    assert not wgmma_serialized(sass), "ptxas serialized the wgmma pipeline (too few consumer registers?)"
    # one scale conversion serves two rows / groups: the decode multiplies pick their half of it
    for half in ("H0_H0", "H1_H1"):
        assert re.search(rf"HMUL2 R\d+, R\d+, R\d+(\.reuse)?\.{half}\b", sass), f"no HMUL2 reads a scale as .{half}"


GUARD_VALUE = -7.0  # what the elements after C hold (exact in fp16)


def run_and_check(problem: str, run, case, generator: str, guard: int = 0):
    """Run the sm90 kernel on one manifest case and compare with ref_kernel (the leaderboard's
    tolerance), on the leaderboard's data and on the stress data. guard > 0: C is the start of a
    buffer with `guard` more elements after it, filled with GUARD_VALUE, which must be left as they
    were (a store past C's end)."""
    ref = load_problem(problem).reference
    m, n, k, l = case
    data = getattr(ref, generator)(m=m, n=n, k=k, l=l, seed=1111, device="cuda")
    want = ref.ref_kernel(tuple(t.clone() for t in data))
    c = data[-1]
    buf = torch.full((c.numel() + guard,), GUARD_VALUE, dtype=c.dtype, device=c.device)
    data = (*data[:-1], buf[: c.numel()].as_strided(c.shape, c.stride()))
    data[-1].fill_(float("nan"))
    got = run(data)
    torch.cuda.synchronize()
    assert got.data_ptr() == data[-1].data_ptr(), "the kernel must write into c"
    ok, msg = check_tensor(got, want, 1e-3, 1e-3)
    assert ok, msg
    past = (buf[c.numel():] != GUARD_VALUE).nonzero()
    assert not len(past), f"{len(past)} elements written past C's end, the first {past[0].item()} past it"


# Instructions that touch device (global) memory, or a TMA descriptor that may live there.
DEVICE_MEMORY_ACCESS = re.compile(r"\b(?:ld|st|atom|red)\.global|\bcp\.(?:async\.bulk|reduce)|\bprefetch\.")


def dependent_launch_order(ptx: str) -> tuple[bool, list[str]]:
    """(whether the kernel lets the next one launch early, the device-memory accesses placed before its
    first griddepcontrol.wait): the kernel entry's text, in order. A dependent launch (Sm90Config.pdl)
    is safe only if that list is empty. Not counted, through a TMA descriptor that is a kernel parameter
    (its address from cvta.param; no kernel before this one writes it): the descriptor's prefetch, and a
    prefetch of its tiles into L2 (Sm90Config.l2_early), which brings nothing into the SM and sees the
    earlier kernel's later writes (they land in L2)."""
    body = ptx[ptx.index(".entry"):]
    wait = body.find("griddepcontrol.wait;")
    before = body if wait < 0 else body[:wait]
    params = set(re.findall(r"cvta\.param\.u64\s+(%rd\d+),", before))

    def of_a_parameter(line: str) -> bool:
        m = re.search(r"(?:prefetch\.tensormap|cp\.async\.bulk\.prefetch\.tensor\.\dd\.L2\.global\S*)\s+"
                      r"\[(%rd\d+)[\],]", line)
        return m is not None and m[1] in params

    accesses = [line.strip() for line in before.splitlines()
                if DEVICE_MEMORY_ACCESS.search(line) and not of_a_parameter(line)]
    return "griddepcontrol.launch_dependents;" in body and wait >= 0, accesses


def fp64_products(problem: str, data):
    """(output, h1, h2) of batch 0 of a gemm or dual_gemm tuple in fp64 (h1 = A·B1ᵀ, h2 = A·B2ᵀ; the GEMM's h1 = h2 =
    output = A·Bᵀ, the dual GEMM's output silu(h1)·h2): the yardstick that tensor-core and fp32 sums are measured
    against beyond the tolerance (tests/test_sm90_accuracy.py, lab/long_k_accuracy.py). Kept out of the references,
    which the packaged submissions inline."""
    from shared.refmath import block_scaled_products

    if problem == "gemm":
        a, b, sfa, sfb = data[:4]
        (h,) = block_scaled_products(a, sfa, [(b, sfb)], 0, fp64=True)
        return h, h, h
    a, b1, b2, sfa, sfb1, sfb2 = data[:6]
    h1, h2 = block_scaled_products(a, sfa, [(b1, sfb1), (b2, sfb2)], 0, fp64=True)
    return torch.nn.functional.silu(h1) * h2, h1, h2
