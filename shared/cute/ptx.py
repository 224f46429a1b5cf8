"""PTX instructions as CuTe DSL ops, one name per instruction, for the kernels of both architectures.

Each helper is one instruction (or a fixed short sequence, named for what it computes) wrapped with
`llvm.inline_asm`, so the kernel source says what it does and the PTX shows exactly what runs. Loads
from shared memory are marked as having side effects so that LLVM never hoists them above the
barrier that makes their data valid. The FP4 / E4M3 decodes built from these are in fp4_decode.py.
"""

from __future__ import annotations

from cutlass import Float32, Int32, Int64, Uint32
from cutlass._mlir import ir
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op


def asm(ret, args, text, constraints, side_effects=False, loc=None, ip=None):
    """One inline-asm op: `ret` the result type (None, a scalar or an LLVM struct), `args` IR values."""
    return llvm.inline_asm(
        ret, args, text, constraints, has_side_effects=side_effects, is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip,
    )


def i32(x, loc, ip):
    return Int32(x).ir_value(loc=loc, ip=ip)


def u32(x, loc, ip):
    return Uint32(x).ir_value(loc=loc, ip=ip)


def struct(n: int, ty: str = "i32"):
    """The LLVM struct of n registers of type ty: an asm statement's several results."""
    return ir.Type.parse("!llvm.struct<(" + ", ".join([ty] * n) + ")>")


def unpack(res, n, ty, wrap, loc, ip):
    """The n fields of an asm result struct, each wrapped as a DSL value."""
    return [wrap(llvm.extractvalue(ty, res, [i], loc=loc, ip=ip)) for i in range(n)]


# ---------------------------------------------------------------------------------------------
# global memory
# ---------------------------------------------------------------------------------------------
@dsl_user_op
def ld_global_nc_v4(addr: Int64, *, loc=None, ip=None) -> list:
    """16 bytes of read-only global memory (address 16-byte aligned) as 4 x u32, bypassing L1."""
    r = asm(struct(4), [Int64(addr).ir_value(loc=loc, ip=ip)],
             "ld.global.nc.L1::no_allocate.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l",
             loc=loc, ip=ip)
    return unpack(r, 4, T.i32(), Uint32, loc, ip)


@dsl_user_op
def ld_global_nc_v2(addr: Int64, *, loc=None, ip=None) -> list:
    """8 bytes of read-only global memory as 2 x u32, bypassing L1."""
    r = asm(struct(2), [Int64(addr).ir_value(loc=loc, ip=ip)],
             "ld.global.nc.L1::no_allocate.v2.u32 {$0, $1}, [$2];", "=r,=r,l", loc=loc, ip=ip)
    return unpack(r, 2, T.i32(), Uint32, loc, ip)


@dsl_user_op
def ld_global_nc_u16(addr: Int64, *, loc=None, ip=None) -> Uint32:
    """2 bytes of read-only global memory, zero-extended into a u32, bypassing L1."""
    return Uint32(asm(T.i32(), [Int64(addr).ir_value(loc=loc, ip=ip)],
                       "ld.global.nc.L1::no_allocate.u16 $0, [$1];", "=r,l", loc=loc, ip=ip))


@dsl_user_op
def ld_global_nc_u32(addr: Int64, *, loc=None, ip=None) -> Uint32:
    """4 bytes of read-only global memory, bypassing L1."""
    return Uint32(asm(T.i32(), [Int64(addr).ir_value(loc=loc, ip=ip)],
                       "ld.global.nc.L1::no_allocate.u32 $0, [$1];", "=r,l", loc=loc, ip=ip))


@dsl_user_op
def prefetch_l2(addr: Int64, *, loc=None, ip=None) -> None:
    """Ask for the global line holding `addr` to be brought into L2 (no register result)."""
    asm(None, [Int64(addr).ir_value(loc=loc, ip=ip)], "prefetch.global.L2 [$0];", "l",
         side_effects=True, loc=loc, ip=ip)


# ---------------------------------------------------------------------------------------------
# shared memory (32-bit shared addresses)
# ---------------------------------------------------------------------------------------------
@dsl_user_op
def ld_shared_u16(addr: Int32, *, loc=None, ip=None) -> Int32:
    """2 bytes of shared memory, zero-extended."""
    return Int32(asm(T.i32(), [i32(addr, loc, ip)], "ld.shared.u16 $0, [$1];", "=r,r", True, loc, ip))


@dsl_user_op
def ld_shared_u32(addr: Int32, *, loc=None, ip=None) -> Int32:
    """4 bytes of shared memory."""
    return Int32(asm(T.i32(), [i32(addr, loc, ip)], "ld.shared.b32 $0, [$1];", "=r,r", True, loc, ip))


@dsl_user_op
def ld_shared_v2(addr: Int32, *, loc=None, ip=None) -> list:
    """8 bytes of shared memory as 2 words."""
    res = asm(struct(2), [i32(addr, loc, ip)], "ld.shared.v2.b32 {$0, $1}, [$2];", "=r,=r,r", True, loc, ip)
    return unpack(res, 2, T.i32(), Int32, loc, ip)


@dsl_user_op
def ld_shared_v4(addr: Int32, *, loc=None, ip=None) -> list:
    """16 bytes of shared memory as 4 words."""
    res = asm(struct(4), [i32(addr, loc, ip)], "ld.shared.v4.b32 {$0, $1, $2, $3}, [$4];",
               "=r,=r,=r,=r,r", True, loc, ip)
    return unpack(res, 4, T.i32(), Int32, loc, ip)


@dsl_user_op
def ld_shared_v2_f32(addr: Int32, *, loc=None, ip=None) -> list:
    """8 bytes of shared memory as 2 x f32."""
    r = asm(struct(2, "f32"), [i32(addr, loc, ip)],
             "ld.shared.v2.f32 {$0, $1}, [$2];", "=f,=f,r", side_effects=True, loc=loc, ip=ip)
    return unpack(r, 2, T.f32(), Float32, loc, ip)


@dsl_user_op
def ld_shared_v4_f32(addr: Int32, *, loc=None, ip=None) -> list:
    """16 bytes of shared memory as 4 x f32."""
    res = asm(struct(4, "f32"), [i32(addr, loc, ip)], "ld.shared.v4.f32 {$0, $1, $2, $3}, [$4];",
              "=f,=f,=f,=f,r", True, loc, ip)
    return unpack(res, 4, T.f32(), Float32, loc, ip)


@dsl_user_op
def ld_shared_f32(addr: Int32, *, loc=None, ip=None) -> Float32:
    """4 bytes of shared memory as an f32."""
    return Float32(asm(T.f32(), [i32(addr, loc, ip)],
                        "ld.shared.f32 $0, [$1];", "=f,r", side_effects=True, loc=loc, ip=ip))


@dsl_user_op
def st_shared_v4(addr: Int32, v0, v1, v2, v3, *, loc=None, ip=None) -> None:
    """4 words to 16 bytes of shared memory."""
    asm(None, [i32(addr, loc, ip)] + [i32(v, loc, ip) for v in (v0, v1, v2, v3)],
         "st.shared.v4.b32 [$0], {$1, $2, $3, $4};", "r,r,r,r,r", True, loc, ip)


@dsl_user_op
def mbarrier_complete_tx(bar: Int32, count: Int32, *, loc=None, ip=None) -> None:
    """Count `count` bytes as arrived at the transaction barrier at shared address `bar` without moving
    any (for bytes a TMA stage expects but a tile does not load)."""
    asm(None, [i32(bar, loc, ip), i32(count, loc, ip)],
         "mbarrier.complete_tx.shared::cta.b64 [$0], $1;", "r,r", True, loc, ip)


@dsl_user_op
def st_global_f16x2(addr: Int64, lo, hi, *, loc=None, ip=None) -> None:
    """Two f32 rounded to fp16 (nearest even) and stored as one 4-byte word at global address addr
    (4-byte aligned): lo at addr, hi at addr + 2."""
    asm(None, [Int64(addr).ir_value(loc=loc, ip=ip), Float32(lo).ir_value(loc=loc, ip=ip),
                Float32(hi).ir_value(loc=loc, ip=ip)],
         "{.reg .b32 p;\n\tcvt.rn.f16x2.f32 p, $2, $1;\n\tst.global.b32 [$0], p;}", "l,f,f", True, loc, ip)


# lo, hi ($1, $2) rounded to the f16x2 word p, exchanged with lane ^ 4's (q), p = prmt(p, q, sel = $3): the
# exchanged stores' common part (every lane of the warp takes part in the shuffle)
_F16X2_EXCHANGE = ("cvt.rn.f16x2.f32 p, $2, $1;\n\tshfl.sync.bfly.b32 q, p, 4, 0x1f, 0xffffffff;\n\t"
                   "prmt.b32 p, p, q, $3;\n\t")


@dsl_user_op
def st_global_f16x2_exchanged(addr: Int64, lo, hi, sel, store, *, loc=None, ip=None) -> None:
    """lo, hi rounded to an f16x2 word (lo in the low half), exchanged with lane ^ 4's word
    (shfl.sync.bfly: every lane of the warp takes part, whatever `store`); where `store` is non-zero
    the 4-byte word prmt(own, lane ^ 4's, sel) is stored at global address addr (4-byte aligned)."""
    asm(None, [Int64(addr).ir_value(loc=loc, ip=ip), Float32(lo).ir_value(loc=loc, ip=ip),
                Float32(hi).ir_value(loc=loc, ip=ip), u32(sel, loc, ip), u32(store, loc, ip)],
         "{.reg .b32 p, q;\n\t.reg .pred ok;\n\t" + _F16X2_EXCHANGE
         + "setp.ne.u32 ok, $4, 0;\n\t@ok st.global.b32 [$0], p;}",
         "l,f,f,r,r", True, loc, ip)


@dsl_user_op
def st_shared_f16x2_exchanged(addr: Int32, lo, hi, sel, *, loc=None, ip=None) -> None:
    """st_global_f16x2_exchanged into shared memory, every lane storing: lo, hi rounded to an f16x2 word,
    exchanged with lane ^ 4's, and prmt(own, lane ^ 4's, sel) stored at shared address addr."""
    asm(None, [i32(addr, loc, ip), Float32(lo).ir_value(loc=loc, ip=ip), Float32(hi).ir_value(loc=loc, ip=ip),
                u32(sel, loc, ip)],
         "{.reg .b32 p, q;\n\t" + _F16X2_EXCHANGE + "st.shared.b32 [$0], p;}",
         "r,f,f,r", True, loc, ip)


@dsl_user_op
def st_global_v4_if(addr: Int64, v0, v1, v2, v3, store, *, loc=None, ip=None) -> None:
    """4 words to 16 bytes of global memory (16-byte aligned) where `store` is non-zero."""
    asm(None, [Int64(addr).ir_value(loc=loc, ip=ip)] + [i32(v, loc, ip) for v in (v0, v1, v2, v3)]
         + [u32(store, loc, ip)],
         "{.reg .pred ok;\n\tsetp.ne.u32 ok, $5, 0;\n\t@ok st.global.v4.b32 [$0], {$1, $2, $3, $4};}",
         "l,r,r,r,r,r", True, loc, ip)


@dsl_user_op
def st_global_v4_f32(addr: Int64, v0, v1, v2, v3, *, loc=None, ip=None) -> None:
    """4 x f32 to 16 bytes of global memory (16-byte aligned), cached in L2 only (another SM reads them)."""
    vals = [Float32(v).ir_value(loc=loc, ip=ip) for v in (v0, v1, v2, v3)]
    asm(None, [Int64(addr).ir_value(loc=loc, ip=ip)] + vals,
         "st.global.cg.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f", True, loc, ip)


@dsl_user_op
def ld_global_cg_v4_f32(addr: Int64, *, loc=None, ip=None) -> list:
    """16 bytes of global memory as 4 x f32 from L2 (never a stale L1 line: another SM wrote them)."""
    r = asm(struct(4, "f32"), [Int64(addr).ir_value(loc=loc, ip=ip)],
            "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4];", "=f,=f,=f,=f,l", True, loc, ip)
    return unpack(r, 4, T.f32(), Float32, loc, ip)


@dsl_user_op
def fence_gpu(*, loc=None, ip=None) -> None:
    """fence.acq_rel.gpu: the thread's earlier writes are ordered before its later ones for every
    thread of the GPU."""
    asm(None, [], "fence.acq_rel.gpu;", "", True, loc, ip)


@dsl_user_op
def store_if_equal(value, magic: int, *, loc=None, ip=None) -> None:
    """Timing experiments only: store `value` to the address `value` where it equals `magic`. Keeps the
    instructions that compute `value` alive (ptxas drops work no instruction reads) at the cost of one
    compare; a fold of decoded data equals a given 32-bit constant with a chance of about 2^-32 per thread."""
    asm(None, [i32(value, loc, ip)],
         "{.reg .pred p;\n\t.reg .b64 a;\n\t"
         f"setp.eq.u32 p, $0, {magic};\n\t"
         "cvt.u64.u32 a, $0;\n\t"
         "@p st.global.u32 [a], $0;}",
         "r", True, loc, ip)


@dsl_user_op
def timeline_stamp(addr: Int64, on, *, loc=None, ip=None) -> None:
    """Timing probes only (Sm90Config.timeline): where `on` is non-zero, 16 bytes at `addr` = %globaltimer
    (ns, low and high word: comparable across SMs), %clock (this SM's cycles) and %smid. A predicated
    store, not a branch: a branch in the K loop would close the wgmma groups around it."""
    asm(None, [Int64(addr).ir_value(loc=loc, ip=ip), i32(on, loc, ip)],
         "{.reg .pred p;\n\t.reg .b64 g;\n\t.reg .b32 gl, gh, c, s;\n\t"
         "setp.ne.s32 p, $1, 0;\n\t"
         "mov.u64 g, %globaltimer;\n\t"
         "mov.b64 {gl, gh}, g;\n\t"
         "mov.u32 c, %clock;\n\t"
         "mov.u32 s, %smid;\n\t"
         "@p st.global.v4.u32 [$0], {gl, gh, c, s};}",
         "l,r", True, loc, ip)


@dsl_user_op
def timeline_values(addr: Int64, on, a, b, c, *, loc=None, ip=None) -> None:
    """Timing probes only (Sm90Config.timeline): where `on` is non-zero, 16 bytes at `addr` = a, b, c (32-bit
    values the kernel summed, e.g. cycles spent in waits) and %smid; a predicated store."""
    asm(None, [Int64(addr).ir_value(loc=loc, ip=ip), i32(on, loc, ip), i32(a, loc, ip), i32(b, loc, ip),
               i32(c, loc, ip)],
         "{.reg .pred p;\n\t.reg .b32 s;\n\t"
         "setp.ne.s32 p, $1, 0;\n\t"
         "mov.u32 s, %smid;\n\t"
         "@p st.global.v4.u32 [$0], {$2, $3, $4, s};}",
         "l,r,r,r,r", True, loc, ip)


@dsl_user_op
def clock32(*, loc=None, ip=None) -> Int32:
    """%clock, this SM's cycle counter (32 bits), as a side effect so that it stays where it is written."""
    return Int32(asm(T.i32(), [], "mov.u32 $0, %clock;", "=r", True, loc, ip))


@dsl_user_op
def flag_release(addr: Int64, value, *, loc=None, ip=None) -> None:
    """Store `value` to the 4-byte flag at `addr` with release semantics at GPU scope: whatever the
    thread wrote before, or saw through a barrier, is visible to a thread that acquires the value."""
    asm(None, [Int64(addr).ir_value(loc=loc, ip=ip), i32(value, loc, ip)],
         "st.release.gpu.global.b32 [$0], $1;", "l,r", True, loc, ip)


@dsl_user_op
def flag_wait_and_clear(addr: Int64, *, loc=None, ip=None) -> None:
    """Wait until the 4-byte flag at `addr` is non-zero (acquire loads at GPU scope, a short sleep
    between tries), then set it back to zero."""
    asm(None, [Int64(addr).ir_value(loc=loc, ip=ip)],
         "{.reg .b32 v;\n\t.reg .pred p;\n\t"
         "FLAG_WAIT_${:uid}:\n\t"
         "ld.acquire.gpu.global.b32 v, [$0];\n\t"
         "setp.eq.u32 p, v, 0;\n\t"
         "@p nanosleep.u32 64;\n\t"
         "@p bra FLAG_WAIT_${:uid};\n\t"
         "st.relaxed.gpu.global.b32 [$0], 0;}",
         "l", True, loc, ip)


@dsl_user_op
def st_shared_v2_f32(addr: Int32, v0, v1, *, loc=None, ip=None) -> None:
    """2 x f32 to 8 bytes of shared memory."""
    asm(None, [i32(addr, loc, ip), Float32(v0).ir_value(loc=loc, ip=ip),
                Float32(v1).ir_value(loc=loc, ip=ip)],
         "st.shared.v2.f32 [$0], {$1, $2};", "r,f,f", side_effects=True, loc=loc, ip=ip)


@dsl_user_op
def st_shared_f32(addr: Int32, v, *, loc=None, ip=None) -> None:
    """An f32 to 4 bytes of shared memory."""
    asm(None, [i32(addr, loc, ip), Float32(v).ir_value(loc=loc, ip=ip)],
         "st.shared.f32 [$0], $1;", "r,f", side_effects=True, loc=loc, ip=ip)


@dsl_user_op
def st_cluster_v4_f32(addr: Int32, rank: Int32, v0, v1, v2, v3, *, loc=None, ip=None) -> None:
    """16 bytes to shared address `addr` of the cluster's CTA `rank` (distributed shared memory)."""
    vals = [Float32(v).ir_value(loc=loc, ip=ip) for v in (v0, v1, v2, v3)]
    asm(None, [i32(addr, loc, ip), i32(rank, loc, ip)] + vals,
         "{.reg .b32 r;\n\tmapa.shared::cluster.u32 r, $0, $1;\n\tst.shared::cluster.v4.f32 [r], {$2, $3, $4, $5};}",
         "r,r,f,f,f,f", True, loc, ip)


@dsl_user_op
def st_async_v4_f32(addr: Int32, rank: Int32, v0, v1, v2, v3, bar: Int32, *, loc=None, ip=None) -> None:
    """16 bytes to shared address `addr` of the cluster's CTA `rank`, completing 16 transaction bytes on that
    CTA's mbarrier at shared address `bar` (st.async: the owner waits on its barrier, no cluster barrier)."""
    vals = [Float32(v).ir_value(loc=loc, ip=ip) for v in (v0, v1, v2, v3)]
    asm(None, [i32(addr, loc, ip), i32(rank, loc, ip), i32(bar, loc, ip)] + vals,
         "{.reg .b32 r, b;\n\tmapa.shared::cluster.u32 r, $0, $1;\n\tmapa.shared::cluster.u32 b, $2, $1;\n\t"
         "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [r], {$3, $4, $5, $6}, [b];}",
         "r,r,r,f,f,f,f", True, loc, ip)


@dsl_user_op
def mbarrier_arrive_peer(bar: Int32, rank: Int32, *, loc=None, ip=None) -> None:
    """Arrive on the mbarrier at shared address `bar` of the cluster's CTA `rank` (release, CTA scope: the
    arrival itself is what the other CTA waits for, as a consumer's release of a multicast TMA stage)."""
    asm(None, [i32(bar, loc, ip), i32(rank, loc, ip)],
         "{.reg .b32 r;\n\tmapa.shared::cluster.u32 r, $0, $1;\n\t"
         "mbarrier.arrive.release.cta.shared::cluster.b64 _, [r];}", "r,r", True, loc, ip)


@dsl_user_op
def mbarrier_expect_tx(bar: Int32, count: Int32, *, loc=None, ip=None) -> None:
    """Let the current phase of the mbarrier at shared address `bar` wait for `count` more bytes (no arrival)."""
    asm(None, [i32(bar, loc, ip), i32(count, loc, ip)],
         "mbarrier.expect_tx.shared::cta.b64 [$0], $1;", "r,r", True, loc, ip)


@dsl_user_op
def bulk_copy_to_peer(dst: Int32, src: Int32, size: Int32, bar: Int32, rank: Int32, *, loc=None, ip=None) -> None:
    """Copy `size` bytes (a multiple of 16, both addresses 16-byte aligned) from this CTA's shared address
    `src` to shared address `dst` of the cluster's CTA `rank` through the bulk-copy (async) proxy; the bytes
    complete on that CTA's mbarrier at shared address `bar`."""
    asm(None, [i32(dst, loc, ip), i32(src, loc, ip), i32(size, loc, ip), i32(bar, loc, ip), i32(rank, loc, ip)],
         "{.reg .b32 d, b;\n\tmapa.shared::cluster.u32 d, $0, $4;\n\tmapa.shared::cluster.u32 b, $3, $4;\n\t"
         "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [d], [$1], $2, [b];}",
         "r,r,r,r,r", True, loc, ip)


# ---------------------------------------------------------------------------------------------
# integer and f16x2 arithmetic
# ---------------------------------------------------------------------------------------------
@dsl_user_op
def prmt(lo, hi, sel, *, loc=None, ip=None) -> Uint32:
    """prmt.b32: byte k of the result is selected by nibble k of `sel` from the 8 bytes (hi:lo)."""
    return Uint32(asm(T.i32(), [u32(lo, loc, ip), u32(hi, loc, ip), u32(sel, loc, ip)],
                       "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", loc=loc, ip=ip))


@dsl_user_op
def dp4a(a, b, c, *, loc=None, ip=None) -> Int32:
    """c + sum of the 4 products of signed int8 lanes of a and b (dp4a.s32.s32)."""
    return Int32(asm(T.i32(), [u32(a, loc, ip), u32(b, loc, ip), Int32(c).ir_value(loc=loc, ip=ip)],
                      "dp4a.s32.s32 $0, $1, $2, $3;", "=r,r,r,r", loc=loc, ip=ip))


@dsl_user_op
def hfma2(a, b, c, *, loc=None, ip=None) -> Uint32:
    """f16x2 fused multiply-add, round to nearest (exact whenever the result is representable)."""
    return Uint32(asm(T.i32(), [u32(a, loc, ip), u32(b, loc, ip), u32(c, loc, ip)],
                       "fma.rn.f16x2 $0, $1, $2, $3;", "=r,r,r,r", loc=loc, ip=ip))


@dsl_user_op
def fast_silu_mul(x: Float32, y: Float32, *, loc=None, ip=None) -> Float32:
    """silu(x) * y = x * y / (1 + 2^(-x log2 e)) in fp32 (ex2.approx and rcp.approx: ~1e-7 relative)."""
    return Float32(asm(
        T.f32(), [Float32(x).ir_value(loc=loc, ip=ip), Float32(y).ir_value(loc=loc, ip=ip)],
        "{.reg .f32 t;\n\t"
        "mul.f32 t, $1, 0fBFB8AA3B;\n\t"  # -log2(e) * x
        "ex2.approx.ftz.f32 t, t;\n\t"
        "add.f32 t, t, 0f3F800000;\n\t"
        "rcp.approx.ftz.f32 t, t;\n\t"
        "mul.f32 t, t, $1;\n\t"
        "mul.f32 $0, t, $2;}",
        "=f,f,f", False, loc, ip))

