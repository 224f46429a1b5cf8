"""The host side of the sm90 GEMM family (shared/cute/sm90_gemm.py): compile once per (kernel class,
config) for sm_90a against null pointers (no GPU needed; shapes are runtime arguments), check a call's
operands, and bind the compiled kernel to them (a PreparedLaunch)."""

from __future__ import annotations

import cutlass.cute as cute
import torch

from shared.cute import launch_queue
from shared.cute.compile_cache import CompileCache, compile_arch
from shared.cute.launch_binding import PreparedLaunch
from shared.cute.operand_checks import FP4, check_cuda, check_kmajor
from shared.cute.pointers import gmem_ptr, null_ptr
from shared.cute.sm90_deal_k import ctas_for, deal_k_class, workspace_bytes
from shared.device_facts import sm_count

_SM90_COMPILED = CompileCache()


def compile_sm90(kernel_cls, config, options: str = ""):
    """The compiled kernel for (class, config), built once for sm_90a against null pointers (no GPU
    needed); shapes are runtime arguments."""

    def build():
        from cutlass import Float16, Int32, Uint8

        p8, pc = null_ptr(Uint8, 16), null_ptr(Float16, 16)
        shape = (Int32(128), Int32(64), Int32(1))
        if config.deal_k:  # the workspace pointer and the grid too (sm90_deal_k.py)
            kernel, args = deal_k_class(kernel_cls)(config), (pc, p8, *shape, Int32(1))
        else:
            kernel, args = kernel_cls(config), (pc, *shape)
        with compile_arch("sm_90a"):
            return cute.compile(kernel, p8, p8, p8, p8, p8, p8, *args, launch_queue.placeholder(),
                                options=f"--gpu-arch sm_90a {options}".strip())

    return _SM90_COMPILED.get((kernel_cls.__name__, config, options), build)


def prepare_sm90(kernel_cls, config, a, bs, sfa, sfbs, c) -> PreparedLaunch:
    """Check the operands and bind the compiled kernel to them: a [M, K/2, 1] FP4x2, bs: one or two
    [N, K/2, 1], plain scales sfa [M, K/16, 1], sfbs [N, K/16, 1], c [M, N, 1] fp16 (written in place).
    Calling the result launches."""
    from cutlass import Float16, Int32, Uint8

    from shared.cute.sm90_config import K_TILE

    sf = ("float8_e4m3fn", "uint8")
    m, half_k, l = a.shape
    n = bs[0].shape[0]
    k = 2 * half_k
    err = config.shape_error(m, n, k, l)
    if err is not None:
        raise ValueError(f"{kernel_cls.__name__}: shape (m={m}, n={n}, k={k}, l={l}) not supported: {err}")
    bnames = ["b"] if len(bs) == 1 else [f"b{i + 1}" for i in range(len(bs))]
    check_kmajor("a", a, m, half_k, 1, FP4)
    check_kmajor("sfa", sfa, m, k // 16, 1, sf)
    for name, b, sb in zip(bnames, bs, sfbs):
        check_kmajor(name, b, n, half_k, 1, FP4)
        check_kmajor(f"sf{name}", sb, n, k // 16, 1, sf)
    check_kmajor("c", c, m, n, 1, ("float16",))
    check_cuda(a=a, sfa=sfa, **dict(zip(bnames, bs)), **{f"sf{x}": t for x, t in zip(bnames, sfbs)}, c=c)
    fn = compile_sm90(kernel_cls, config)
    tensors = (a, bs[0], bs[-1], sfa, sfbs[0], sfbs[-1])
    args = [gmem_ptr(t, Uint8, 16) for t in tensors] + [gmem_ptr(c, Float16, 16)]
    shape = [Int32(m), Int32(n), Int32(k // K_TILE)]
    if not config.deal_k:
        return PreparedLaunch(fn, args + shape, c.device)
    # the launch's own workspace (its flags zero: each launch leaves them so), kept alive with it
    ctas = ctas_for(config, m, n, k, sm_count(c.device))
    work = torch.zeros(workspace_bytes(config, len(bs), ctas), dtype=torch.uint8, device=c.device)
    return PreparedLaunch(fn, args + [gmem_ptr(work, Uint8, 16)] + shape + [Int32(ctas)], c.device, hold=work)


def launch_sm90(kernel_cls, config, a, bs, sfa, sfbs, c):
    """prepare_sm90 and launch once; returns c."""
    prepare_sm90(kernel_cls, config, a, bs, sfa, sfbs, c)()
    return c
