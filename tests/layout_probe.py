"""A prober of the layouts the sm100 mainloop builds, for the sm100 readiness tests.

`probed(mainloop config, shape)` builds the mainloop exactly as the kernels do (traced for sm_100a
without a GPU) and records its static layouts: the shared-memory and tensor-memory scale layouts,
the accumulator layout, the MMA shape, and the global scale views the TMA reads over a static
problem. `evaluate` gives a layout's offset at every coordinate, with the flat modes named by
`sf_names`, so the tests can compare each byte's place with the layout formulas.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
import cutlass.utils.blockscaled_layout as blockscaled_utils
import numpy as np

from shared.cute import sm100_blockscaled as bs
from shared.cute.compile_cache import compile_arch
from shared.cute.pointers import null_ptr
from tests.sm100_facts import K_BLOCK, MMA_K, SF_ATOM, SF_VEC


def _flat(t):
    return [x for e in t for x in _flat(e)] if isinstance(t, tuple) else [t]


def _plain(layout):
    """(flat shape, flat stride) of a static CuTe layout, as Python ints."""
    shape, stride = _flat(layout.shape), _flat(layout.stride)
    assert all(isinstance(x, int) for x in shape + stride), f"not a static layout: {layout}"
    return shape, stride


_PROBED: dict = {}


@cute.jit
def _probe_layouts(sf_ptr: cute.Pointer, key: cutlass.Constexpr):
    """Build the mainloop exactly as the kernels do and record the static layouts they use."""
    mcfg, (m, n, k, l) = key
    ml = bs.BlockScaledMainloop(mcfg)
    tiled_mma = ml.setup()
    one = (None, None, None, 0)
    out = _PROBED.setdefault(key, {})
    out["sfa_smem_staged"] = _plain(ml.sfa_smem_layout)
    out["sfb_smem_staged"] = _plain(ml.sfb_smem_layout)
    out["sfa_smem"] = _plain(cute.slice_(ml.sfa_smem_layout, one))
    out["sfb_smem"] = _plain(cute.slice_(ml.sfb_smem_layout, one))
    out["sfa_tmem"] = _plain(blockscaled_utils.make_tmem_layout_sfa(
        ml.tiled_mma, ml.mma_tiler, bs.SF_VEC_SIZE, cute.slice_(ml.sfa_smem_layout, one)))
    out["sfb_tmem"] = _plain(blockscaled_utils.make_tmem_layout_sfb(
        ml.tiled_mma, ml.mma_tiler, bs.SF_VEC_SIZE, cute.slice_(ml.sfb_smem_layout, one)))
    out["acc"] = _plain(ml.make_acc_fragment().layout)
    out["mma_shape"] = tuple(tiled_mma.shape_mnk)
    # The global scale views exactly as the kernels build them, over a static problem.
    mA = cute.make_tensor(sf_ptr, cute.make_layout((m, k, l), stride=(k, 1, m * k)))
    mB = cute.make_tensor(sf_ptr, cute.make_layout((n, k, l), stride=(k, 1, n * k)))
    gsfa = ml.tile_global(tiled_mma.get_slice(0), bs.make_scale_operand(sf_ptr, mA), operand_a=True)
    out["gSFA"] = _plain(gsfa.layout)
    out["gSFB"] = _plain(ml.tile_global_sfb(bs.make_scale_operand(sf_ptr, mB)).layout)
    out["ml"] = ml


def probed(mcfg: bs.MainloopConfig, shape) -> dict:
    key = (mcfg, tuple(shape))
    if key not in _PROBED:
        with compile_arch("sm_100a"):
            cute.compile(_probe_layouts, null_ptr(bs.SF_DTYPE), key)
    return _PROBED[key]


def evaluate(plain, names):
    """Offsets of a layout at every coordinate; coords[name] per named flat mode ('_' = size-1 mode)."""
    shape, stride = plain
    assert len(shape) == len(names), (shape, names)
    grid = np.indices(shape).reshape(len(shape), -1).astype(np.int64)
    coords = {}
    for i, name in enumerate(names):
        if name == "_":
            assert shape[i] == 1, (shape, names)
        else:
            coords[name] = grid[i]
    return coords, (grid * np.array(stride, dtype=np.int64)[:, None]).sum(0)


def sf_names(atoms: int, kind: str) -> list[str]:
    """Flat mode names of the scale layouts (asserted against their shapes by the sizes checked below):
    rows r = m0 + 32 m1 (+ 128 atom), K = k0 + 16 k1 + 64 kb inside a 256-wide block."""
    mn = ["m0", "m1"] + (["atom"] if atoms > 1 else [])
    if kind == "smem":  # (((32,4),atoms),(16,4)),1,4
        return ["m0", "m1", "atom" if atoms > 1 else "_", "k0", "k1", "_", "kb"]
    if kind == "tmem":  # (((32,4*atoms),4),(16,4)),1,4 : the third mode replicates over lane quadrants
        return ["m0", "m1", "q", "k0", "k1", "_", "kb"]
    return mn + ["k0", "k1", "_", "kb", "tmn", "tk", "_", "l"]  # global: ..., RestMN, RestK, (1, L)


SIZES = {"m0": 32, "k0": SF_VEC, "k1": 4, "kb": K_BLOCK // MMA_K, "q": 4}


def check_sizes(coords, atoms):
    for name, size in SIZES.items():
        if name in coords:
            assert coords[name].max() + 1 == size, name
    if "atom" in coords:
        assert coords["atom"].max() + 1 == atoms


def row_and_k(c):
    r = c["m0"] + 32 * c["m1"] + SF_ATOM * c.get("atom", 0)
    return r, c["k0"] + SF_VEC * c["k1"] + MMA_K * c["kb"]


# ------------------------------------------------------------------------------ CTA pairs (cta_group::2)
def _coord(iterator) -> tuple[int, ...]:
    """The coordinate an identity tensor's iterator starts at, e.g. (128,0,0) -> (128, 0, 0)."""
    text = str(iterator).strip("()")
    return tuple(int(x) for x in text.split(","))


@cute.jit
def _probe_pair(sf_ptr: cute.Pointer, key: cutlass.Constexpr):
    """For each CTA rank of a pair: the MMA partitions of A, B and C exactly as the kernel builds them
    (tiled_mma.get_slice(rank)), as (plain layout over a row-major pointer tensor, start coordinate of the
    same partition of an identity tensor); and the B scales' multicast TMA partition's start coordinate."""
    mcfg, (m, n, k, l) = key
    ml = bs.BlockScaledMainloop(mcfg)
    tiled_mma = ml.setup()
    out = _PROBED.setdefault(("pair", key), {"ml": ml, "mma_shape": tuple(tiled_mma.shape_mnk)})
    views = {"A": ((m, k, l), True), "B": ((n, k, l), False)}
    for r in cutlass.range_constexpr(2):
        thr = tiled_mma.get_slice(r)
        for name, (shape, is_a) in views.items():
            flat = cute.make_tensor(sf_ptr, cute.make_layout(shape, stride=(shape[1], 1, shape[0] * shape[1])))
            out[f"{name}{r}"] = (_plain(ml.tile_global(thr, flat, operand_a=is_a).layout),
                                 _coord(ml.tile_global(thr, cute.make_identity_tensor(shape), operand_a=is_a).iterator))
        c_tile = cute.slice_(ml.mma_tiler, (None, None, 0))
        flat_c = cute.make_tensor(sf_ptr, cute.make_layout((m, n, l), stride=(n, 1, m * n)))
        gC = thr.partition_C(cute.local_tile(flat_c, c_tile, (None, None, None)))
        iC = thr.partition_C(cute.local_tile(cute.make_identity_tensor((m, n, l)), c_tile, (None, None, None)))
        out[f"C{r}"] = (_plain(gC.layout), _coord(iC.iterator))
    out["acc"] = _plain(ml.make_acc_fragment().layout)
    mB = bs.make_kmajor_operand(sf_ptr, n, k, l)
    tma_sfb = ml.make_tma_b(mB, bs.make_scale_operand(sf_ptr, mB))[1]
    s_ptr = cute.make_ptr(bs.SF_DTYPE, 0, cute.AddressSpace.smem, assumed_align=128)
    sSFB = cute.make_tensor(s_ptr, ml.sfb_smem_layout)
    gSFB = ml.tile_global_sfb(tma_sfb[1])
    for r in cutlass.range_constexpr(2):
        _, tXgX = ml.partition_tma(tma_sfb[0], gSFB, sSFB, scales=True, cta_coord=r, cta_count=2)
        out[f"sfb_tma{r}"] = (_coord(tXgX.iterator), tuple(_flat(tXgX.shape)))


def probed_pair(mcfg: bs.MainloopConfig, shape) -> dict:
    key = (mcfg, tuple(shape))
    if ("pair", key) not in _PROBED:
        with compile_arch("sm_100a"):
            cute.compile(_probe_pair, null_ptr(bs.SF_DTYPE), key)
    return _PROBED[("pair", key)]
