"""The host side of the sm100 GEMM family (shared/cute/sm100_gemm.py): compile once per config, arch
and options against null pointers (no GPU needed; the problem size is a runtime argument), check a
leaderboard tuple's operands, and bind the compiled kernel to them (a PreparedLaunch)."""

from __future__ import annotations

import cutlass.cute as cute

from shared.cute import launch_queue
from shared.cute.compile_cache import compile_arch
from shared.cute.launch_binding import PreparedLaunch
from shared.cute.operand_checks import FP4, check_cuda, check_kmajor, check_scales
from shared.cute.pointers import gmem_ptr, null_ptr


def compile_sm100(cache, make_kernel, config, num_b: int, problem: tuple, arch: str, options: str):
    """Compile (once per config, arch and options) a kernel whose `__call__` takes the pointers
    (a, b_1..b_nb, sfa_permuted, sfb_1..sfb_nb_permuted, c) and the runtime problem (m, n, k, l);
    null pointers suffice, so no GPU is needed. Raises ValueError for shapes it cannot take."""
    from shared.cute.sm100_blockscaled import AB_DTYPE, C_DTYPE, SF_DTYPE, check_problem

    m, n, k, l = problem
    check_problem(m, n, k, l, config.tile_n, config.mainloop().cta_group)

    def build():
        ptrs = [null_ptr(AB_DTYPE, 16)] * (1 + num_b) + [null_ptr(SF_DTYPE, 16)] * (1 + num_b)
        with compile_arch(arch):
            return cute.compile(make_kernel(config), *ptrs, null_ptr(C_DTYPE, 16), (m, n, k, l),
                                launch_queue.placeholder(), options=f"--gpu-arch {arch} {options}".strip())

    return cache.get((config, arch, options), build)


def prepare_sm100(data, num_b: int, config, compile_for):
    """The leaderboard entry on sm100 for a tuple (a, b_1..b_nb, sfa, sfb_1.., sfa_permuted,
    sfb_1_permuted.., c): check every tensor the kernel reads (by name), compile or fetch the kernel
    of `config` (chosen by the caller for the device's SM count), and bind it to the tensors; calling
    the result launches (the same PreparedLaunch the sm90 kernels use)."""
    from shared.cute.sm100_blockscaled import AB_DTYPE, C_DTYPE, SF_ATOM_ROWS, SF_DTYPE, check_problem
    from shared.inputs import tuple_names

    t = dict(zip(tuple_names(num_b), data))
    b_names = tuple_names(num_b)[1 : 1 + num_b]
    a, c = t["a"], t["c"]
    m, k2, l = a.shape
    n, k = t[b_names[0]].shape[0], 2 * k2
    # Every config needs whole 128-row tiles and scale atoms: check before touching the tensors.
    check_problem(m, n, k, l, SF_ATOM_ROWS)
    check_kmajor("a", a, m, k2, l, FP4)
    for b in b_names:
        check_kmajor(b, t[b], n, k2, l, FP4)
    check_kmajor("c", c, m, n, l, ("float16",))
    scales = ["sfa_permuted", *(f"sf{b}_permuted" for b in b_names)]
    for name, rows in zip(scales, [m] + [n] * num_b):
        check_scales(name, t[name], rows, k, l)
    check_cuda(**{name: t[name] for name in ["a", *b_names, *scales, "c"]})
    compiled = compile_for(m, n, k, l, arch="sm_100a", config=config)
    args = [*(gmem_ptr(t[x], AB_DTYPE) for x in ["a", *b_names]), *(gmem_ptr(t[x], SF_DTYPE) for x in scales),
            gmem_ptr(c, C_DTYPE), (m, n, k, l)]
    return PreparedLaunch(compiled, args, c.device)


def launch_sm100(data, num_b: int, config, compile_for):
    """prepare_sm100 and launch once; returns c."""
    prepare_sm100(data, num_b, config, compile_for)()
    return data[-1]
