"""Register-level NVFP4 building blocks for CUDA-core kernels (GEMV, epilogues), as CuTe DSL ops.

Each helper is one or a few PTX instructions wrapped with `llvm.inline_asm`, so the kernel source
says what it computes and the PTX shows exactly which instructions run. Every helper works on
32-bit registers holding packed data (8 FP4 codes, 4 int8 lanes, 2 E4M3 scales).

FP4 decode on sm_90 (no hardware E2M1 conversion there): exact integer dot products.
    Twice an E2M1 value is a small integer: codes 0..7 -> 0, 1, 2, 3, 4, 6, 8, 12 (8..15 negate).
    `prmt.b32` looks up 4 bytes at once in an 8-byte table: each selector nibble picks a byte by
    its 3 low bits; when the nibble's bit 3 (the FP4 sign) is set, the result byte is the sign bit
    of the picked byte replicated, i.e. 0 because every table entry is positive. So
        prmt(T, w)              = |2a| where a >= 0, else 0      (4 lanes, FP4 codes in w's low 16 bits)
        prmt(T, w ^ 0x88888888) = |2a| where a <  0, else 0
    and for int8 lanes b (twice the other operand's E2M1 values),
        sum_i (2a_i)(2b_i) = dp4a(pos, b) - dp4a(neg, b),
    exact in int32. A 32-bit word of A (8 codes) costs 2 shifts, 1 xor, 4 prmt and 4 dp4a.
    The same two lookups give signed int8 lanes (`e2m1x4_to_s8x4`) for the vector side.

FP4 decode on sm_100: `cvt.rn.f16x2.e2m1x2` converts one byte (two codes) to an f16 pair in one
instruction; products of two E2M1 values are multiples of 1/4 below 36 in magnitude, so an f16x2
accumulator of 8 of them per lane is still exact (|sum| <= 288 needs 11 significant bits).

Loads: `ld.global.nc.L1::no_allocate` for data read exactly once (the matrix and its
scales): the read-only path, and no L1 lines evicted for data that is never reused.
"""

from __future__ import annotations

from cutlass import Float32, Int32, Int64, Uint32
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op

# 2 * E2M1 magnitude for codes 0..7, bytes 0..7 of the prmt table (little-endian words).
E2M1X2_TABLE_LO = 0x03020100  # 0, 1, 2, 3
E2M1X2_TABLE_HI = 0x0C080604  # 4, 6, 8, 12
SIGN_BITS = 0x88888888  # bit 3 of every nibble: the FP4 sign


def _asm(ret, args, text, constraints, side_effects=False, loc=None, ip=None):
    return llvm.inline_asm(
        ret,
        args,
        text,
        constraints,
        has_side_effects=side_effects,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
        loc=loc,
        ip=ip,
    )


def _u32(x, loc, ip):
    return Uint32(x).ir_value(loc=loc, ip=ip)


def _unpack(struct, n, ty, wrap, loc, ip):
    return [wrap(llvm.extractvalue(ty, struct, [i], loc=loc, ip=ip)) for i in range(n)]


# ---------------------------------------------------------------------------------------------
# memory
# ---------------------------------------------------------------------------------------------
@dsl_user_op
def ld_global_nc_v4(addr: Int64, *, loc=None, ip=None) -> list:
    """16 bytes of read-only global memory (address 16-byte aligned) as 4 x u32, bypassing L1."""
    st = llvm.StructType.get_literal([T.i32()] * 4)
    r = _asm(st, [Int64(addr).ir_value(loc=loc, ip=ip)],
             "ld.global.nc.L1::no_allocate.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l",
             loc=loc, ip=ip)
    return _unpack(r, 4, T.i32(), Uint32, loc, ip)


@dsl_user_op
def ld_global_nc_v2(addr: Int64, *, loc=None, ip=None) -> list:
    """8 bytes of read-only global memory as 2 x u32, bypassing L1."""
    st = llvm.StructType.get_literal([T.i32()] * 2)
    r = _asm(st, [Int64(addr).ir_value(loc=loc, ip=ip)],
             "ld.global.nc.L1::no_allocate.v2.u32 {$0, $1}, [$2];", "=r,=r,l", loc=loc, ip=ip)
    return _unpack(r, 2, T.i32(), Uint32, loc, ip)


@dsl_user_op
def ld_global_nc_u16(addr: Int64, *, loc=None, ip=None) -> Uint32:
    """2 bytes of read-only global memory, zero-extended into a u32, bypassing L1."""
    return Uint32(_asm(T.i32(), [Int64(addr).ir_value(loc=loc, ip=ip)],
                       "ld.global.nc.L1::no_allocate.u16 $0, [$1];", "=r,l", loc=loc, ip=ip))


@dsl_user_op
def ld_global_nc_u32(addr: Int64, *, loc=None, ip=None) -> Uint32:
    """4 bytes of read-only global memory, bypassing L1."""
    return Uint32(_asm(T.i32(), [Int64(addr).ir_value(loc=loc, ip=ip)],
                       "ld.global.nc.L1::no_allocate.u32 $0, [$1];", "=r,l", loc=loc, ip=ip))


@dsl_user_op
def prefetch_l2(addr: Int64, *, loc=None, ip=None) -> None:
    """Ask for the global line holding `addr` to be brought into L2 (no register result)."""
    _asm(None, [Int64(addr).ir_value(loc=loc, ip=ip)], "prefetch.global.L2 [$0];", "l",
         side_effects=True, loc=loc, ip=ip)


@dsl_user_op
def ld_shared_v4(addr: Int32, *, loc=None, ip=None) -> list:
    """16 bytes of shared memory (32-bit shared address) as 4 x u32.

    Marked as having side effects so that LLVM keeps it below the barrier that publishes the data.
    """
    st = llvm.StructType.get_literal([T.i32()] * 4)
    r = _asm(st, [Int32(addr).ir_value(loc=loc, ip=ip)],
             "ld.shared.v4.u32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,r", side_effects=True,
             loc=loc, ip=ip)
    return _unpack(r, 4, T.i32(), Uint32, loc, ip)


@dsl_user_op
def ld_shared_v2_f32(addr: Int32, *, loc=None, ip=None) -> list:
    """8 bytes of shared memory as 2 x f32."""
    st = llvm.StructType.get_literal([T.f32()] * 2)
    r = _asm(st, [Int32(addr).ir_value(loc=loc, ip=ip)],
             "ld.shared.v2.f32 {$0, $1}, [$2];", "=f,=f,r", side_effects=True, loc=loc, ip=ip)
    return _unpack(r, 2, T.f32(), Float32, loc, ip)


@dsl_user_op
def st_shared_v4(addr: Int32, v0, v1, v2, v3, *, loc=None, ip=None) -> None:
    _asm(None, [Int32(addr).ir_value(loc=loc, ip=ip)] + [_u32(v, loc, ip) for v in (v0, v1, v2, v3)],
         "st.shared.v4.u32 [$0], {$1, $2, $3, $4};", "r,r,r,r,r", side_effects=True, loc=loc, ip=ip)


@dsl_user_op
def st_shared_v2_f32(addr: Int32, v0, v1, *, loc=None, ip=None) -> None:
    _asm(None, [Int32(addr).ir_value(loc=loc, ip=ip), Float32(v0).ir_value(loc=loc, ip=ip),
                Float32(v1).ir_value(loc=loc, ip=ip)],
         "st.shared.v2.f32 [$0], {$1, $2};", "r,f,f", side_effects=True, loc=loc, ip=ip)


@dsl_user_op
def st_shared_f32(addr: Int32, v, *, loc=None, ip=None) -> None:
    _asm(None, [Int32(addr).ir_value(loc=loc, ip=ip), Float32(v).ir_value(loc=loc, ip=ip)],
         "st.shared.f32 [$0], $1;", "r,f", side_effects=True, loc=loc, ip=ip)


@dsl_user_op
def ld_shared_f32(addr: Int32, *, loc=None, ip=None) -> Float32:
    return Float32(_asm(T.f32(), [Int32(addr).ir_value(loc=loc, ip=ip)],
                        "ld.shared.f32 $0, [$1];", "=f,r", side_effects=True, loc=loc, ip=ip))


# ---------------------------------------------------------------------------------------------
# integer path (sm_90 and newer): prmt lookups + dp4a
# ---------------------------------------------------------------------------------------------
@dsl_user_op
def prmt(lo, hi, sel, *, loc=None, ip=None) -> Uint32:
    """prmt.b32: byte k of the result is selected by nibble k of `sel` from the 8 bytes (hi:lo)."""
    return Uint32(_asm(T.i32(), [_u32(lo, loc, ip), _u32(hi, loc, ip), _u32(sel, loc, ip)],
                       "prmt.b32 $0, $1, $2, $3;", "=r,r,r,r", loc=loc, ip=ip))


@dsl_user_op
def dp4a(a, b, c, *, loc=None, ip=None) -> Int32:
    """c + sum of the 4 products of signed int8 lanes of a and b (dp4a.s32.s32)."""
    return Int32(_asm(T.i32(), [_u32(a, loc, ip), _u32(b, loc, ip), Int32(c).ir_value(loc=loc, ip=ip)],
                      "dp4a.s32.s32 $0, $1, $2, $3;", "=r,r,r,r", loc=loc, ip=ip))


def e2m1x4_magnitudes(codes, table_lo, table_hi):
    """|2a| for the 4 FP4 codes in the low 16 bits of `codes` where a >= 0, 0 where a < 0."""
    return prmt(table_lo, table_hi, codes)


def e2m1x8_pos_neg(word, table_lo, table_hi):
    """Split 8 FP4 codes (one u32, code i in nibble i) into int8 lanes of |2a|.

    Returns (pos_lo, neg_lo, pos_hi, neg_hi): pos holds |2a| of the non-negative codes, neg of the
    negative ones (0 elsewhere); *_lo covers codes 0..3, *_hi codes 4..7, lane i = code i.
    """
    flipped = word ^ Uint32(SIGN_BITS)
    pos_lo = prmt(table_lo, table_hi, word)
    neg_lo = prmt(table_lo, table_hi, flipped)
    pos_hi = prmt(table_lo, table_hi, word >> Uint32(16))
    neg_hi = prmt(table_lo, table_hi, flipped >> Uint32(16))
    return pos_lo, neg_lo, pos_hi, neg_hi


def signed_lanes(pos, neg):
    """int8 lanes pos - neg, for lanes in 0..127 of which at most one of pos/neg is non-zero.

    Biasing every lane by 0x80 first keeps the byte-wise subtraction from borrowing across lanes.
    """
    bias = Uint32(0x80808080)
    return ((pos | bias) - neg) ^ bias


def e2m1x8_to_s8x8(word, table_lo, table_hi):
    """8 FP4 codes -> two u32 of signed int8 lanes holding 2*value (codes 0..3, codes 4..7)."""
    pos_lo, neg_lo, pos_hi, neg_hi = e2m1x8_pos_neg(word, table_lo, table_hi)
    return signed_lanes(pos_lo, neg_lo), signed_lanes(pos_hi, neg_hi)


def dot_e2m1x8_s8(word, b_lo, b_hi, acc_pos, acc_neg, table_lo, table_hi):
    """Accumulate sum_i 2a_i * b_i for 8 FP4 codes a (one u32) and int8 lanes b (b_lo: 0..3, b_hi: 4..7).

    The result is acc_pos - acc_neg (kept apart so that each step is a single dp4a).
    """
    pos_lo, neg_lo, pos_hi, neg_hi = e2m1x8_pos_neg(word, table_lo, table_hi)
    acc_pos = dp4a(pos_lo, b_lo, acc_pos)
    acc_neg = dp4a(neg_lo, b_lo, acc_neg)
    acc_pos = dp4a(pos_hi, b_hi, acc_pos)
    acc_neg = dp4a(neg_hi, b_hi, acc_neg)
    return acc_pos, acc_neg


# ---------------------------------------------------------------------------------------------
# scales
# ---------------------------------------------------------------------------------------------
@dsl_user_op
def e4m3x2_to_f32x2(bits, *, loc=None, ip=None) -> list:
    """Two E4M3 scales in the low 16 bits of a u32 (low byte first) -> two f32 (exact).

    cvt.rn.f16x2.e4m3x2 exists from sm_89; every E4M3 value is exact in f16 and in f32.
    """
    st = llvm.StructType.get_literal([T.f32()] * 2)
    r = _asm(st, [_u32(bits, loc, ip)],
             "{\n .reg .b16 l16, h16, in16;\n .reg .b32 pair;\n"
             " cvt.u16.u32 in16, $2;\n"
             " cvt.rn.f16x2.e4m3x2 pair, in16;\n"
             " mov.b32 {l16, h16}, pair;\n"
             " cvt.f32.f16 $0, l16;\n"
             " cvt.f32.f16 $1, h16;\n}",
             "=f,=f,r", loc=loc, ip=ip)
    return _unpack(r, 2, T.f32(), Float32, loc, ip)


# ---------------------------------------------------------------------------------------------
# f16 path (sm_100a: hardware E2M1 conversion)
# ---------------------------------------------------------------------------------------------
@dsl_user_op
def e2m1x8_to_f16x8(word, *, loc=None, ip=None) -> list:
    """8 FP4 codes (one u32) -> 4 u32 each holding an f16x2 (codes 2i in the low half, 2i+1 high).

    cvt.rn.f16x2.e2m1x2 (sm_100a and newer) takes one byte; the low nibble lands in the low half.
    """
    st = llvm.StructType.get_literal([T.i32()] * 4)
    r = _asm(st, [_u32(word, loc, ip)],
             "{\n .reg .b8 b0, b1, b2, b3;\n"
             " mov.b32 {b0, b1, b2, b3}, $4;\n"
             " cvt.rn.f16x2.e2m1x2 $0, b0;\n"
             " cvt.rn.f16x2.e2m1x2 $1, b1;\n"
             " cvt.rn.f16x2.e2m1x2 $2, b2;\n"
             " cvt.rn.f16x2.e2m1x2 $3, b3;\n}",
             "=r,=r,=r,=r,r", loc=loc, ip=ip)
    return _unpack(r, 4, T.i32(), Uint32, loc, ip)


@dsl_user_op
def hfma2(a, b, c, *, loc=None, ip=None) -> Uint32:
    """f16x2 fused multiply-add, round to nearest (exact whenever the result is representable)."""
    return Uint32(_asm(T.i32(), [_u32(a, loc, ip), _u32(b, loc, ip), _u32(c, loc, ip)],
                       "fma.rn.f16x2 $0, $1, $2, $3;", "=r,r,r,r", loc=loc, ip=ip))


@dsl_user_op
def f16x2_sum_f32(h, *, loc=None, ip=None) -> Float32:
    """low + high half of an f16x2, added in f32 (exact: both halves are exact in f32)."""
    return Float32(_asm(T.f32(), [_u32(h, loc, ip)],
                        "{\n .reg .b16 l16, h16;\n .reg .f32 lf, hf;\n"
                        " mov.b32 {l16, h16}, $1;\n"
                        " cvt.f32.f16 lf, l16;\n cvt.f32.f16 hf, h16;\n"
                        " add.rn.f32 $0, lf, hf;\n}",
                        "=f,r", loc=loc, ip=ip))


__all__ = [
    "E2M1X2_TABLE_HI", "E2M1X2_TABLE_LO", "SIGN_BITS",
    "ld_global_nc_v4", "prefetch_l2", "ld_global_nc_v2", "ld_global_nc_u16", "ld_global_nc_u32",
    "ld_shared_v4", "ld_shared_v2_f32", "st_shared_v4", "st_shared_v2_f32", "st_shared_f32",
    "ld_shared_f32", "prmt", "dp4a", "e2m1x4_magnitudes", "e2m1x8_pos_neg", "signed_lanes",
    "e2m1x8_to_s8x8", "dot_e2m1x8_s8", "e4m3x2_to_f32x2", "e2m1x8_to_f16x8", "hfma2", "f16x2_sum_f32",
]
