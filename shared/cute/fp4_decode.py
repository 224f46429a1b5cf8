"""Register-level NVFP4 decodes as CuTe DSL ops, built from the instructions of ptx.py.

Every helper works on 32-bit registers holding packed data (8 FP4 codes, 4 int8 lanes, 2 E4M3
scales) and is exact.

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

FP4 decode to fp16 on sm_90 for wgmma (the GEMMs, sm90_gemm.py): `decode_e2m1x8_f16` moves every
code into an E4M3 byte whose value is exactly e2m1 * 2^-6 and converts pairs with Hopper's
cvt.rn.f16x2.e4m3x2; one fp16 multiply by scale * 2^6 gives e2m1 * scale, exact in normal fp16.
`decode_e2m1x8_f16_bits` builds the fp16 bit patterns themselves (worth e2m1 * 2^-14) with the same
number of bit operations and a byte permute per pair instead of a conversion; its scale needs no
multiply by a power of two, which the caller's fp32 sums take out instead.
"""

from __future__ import annotations

from cutlass import Float32, Int32, Uint32
from cutlass.cutlass_dsl import T, dsl_user_op

from shared.cute.ptx import asm, dp4a, i32, prmt, struct, u32, unpack

# 2 * E2M1 magnitude for codes 0..7, bytes 0..7 of the prmt table (little-endian words).
E2M1X2_TABLE_LO = 0x03020100  # 0, 1, 2, 3
E2M1X2_TABLE_HI = 0x0C080604  # 4, 6, 8, 12
SIGN_BITS = 0x88888888  # bit 3 of every nibble: the FP4 sign


# ---------------------------------------------------------------------------------------------
# integer path (sm_90 and newer): prmt lookups + dp4a
# ---------------------------------------------------------------------------------------------
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
    st = struct(2, "f32")
    r = asm(st, [u32(bits, loc, ip)],
             "{\n .reg .b16 l16, h16, in16;\n .reg .b32 pair;\n"
             " cvt.u16.u32 in16, $2;\n"
             " cvt.rn.f16x2.e4m3x2 pair, in16;\n"
             " mov.b32 {l16, h16}, pair;\n"
             " cvt.f32.f16 $0, l16;\n"
             " cvt.f32.f16 $1, h16;\n}",
             "=f,=f,r", loc=loc, ip=ip)
    return unpack(r, 2, T.f32(), Float32, loc, ip)


# ---------------------------------------------------------------------------------------------
# f16 path (sm_100a: hardware E2M1 conversion)
# ---------------------------------------------------------------------------------------------
@dsl_user_op
def e2m1x8_to_f16x8(word, *, loc=None, ip=None) -> list:
    """8 FP4 codes (one u32) -> 4 u32 each holding an f16x2 (codes 2i in the low half, 2i+1 high).

    cvt.rn.f16x2.e2m1x2 (sm_100a and newer) takes one byte; the low nibble lands in the low half.
    """
    st = struct(4)
    r = asm(st, [u32(word, loc, ip)],
             "{\n .reg .b8 b0, b1, b2, b3;\n"
             " mov.b32 {b0, b1, b2, b3}, $4;\n"
             " cvt.rn.f16x2.e2m1x2 $0, b0;\n"
             " cvt.rn.f16x2.e2m1x2 $1, b1;\n"
             " cvt.rn.f16x2.e2m1x2 $2, b2;\n"
             " cvt.rn.f16x2.e2m1x2 $3, b3;\n}",
             "=r,=r,=r,=r,r", loc=loc, ip=ip)
    return unpack(r, 4, T.i32(), Uint32, loc, ip)


@dsl_user_op
def f16x2_sum_f32(h, *, loc=None, ip=None) -> Float32:
    """low + high half of an f16x2, added in f32 (exact: both halves are exact in f32)."""
    return Float32(asm(T.f32(), [u32(h, loc, ip)],
                        "{\n .reg .b16 l16, h16;\n .reg .f32 lf, hf;\n"
                        " mov.b32 {l16, h16}, $1;\n"
                        " cvt.f32.f16 lf, l16;\n cvt.f32.f16 hf, h16;\n"
                        " add.rn.f32 $0, lf, hf;\n}",
                        "=f,r", loc=loc, ip=ip))


# ---------------------------------------------------------------------------------------------
# f16 path on sm_90 (no E2M1 conversion): through E4M3, for the GEMMs (sm90_gemm.py)
# ---------------------------------------------------------------------------------------------
# The power of two folded into every scale of a decode (sm90_gemm.py): "e4m3" undoes the 2^-6 of the codes
# decoded through E4M3 bytes (decode_e2m1x8_f16); the codes decoded through fp16 bit patterns
# (decode_e2m1x8_f16_bits) are worth e2m1 * 2^-14, and the kernel's fp32 sums take out what is left: none of
# it on the consumers' R side ("r": the scale as converted, no multiply), 2^-7 on the decoders' S side ("s":
# 448 * 2^7, the largest E4M3 scale, still inside fp16), so that a product of two is never below 2^-41 (fp32 sums).
SCALE_POW2 = {"e4m3": 6, "r": 0, "s": 7}


def f16x2_pow2(e: int) -> int:
    """2^e in both halves of an f16x2 word (0 <= e <= 15)."""
    return ((15 + e) << 10) * 0x10001


@dsl_user_op
def e4m3x2_to_f16x2_pair(two: Int32, pow2: int = 6, *, loc=None, ip=None):
    """Two E4M3 scales (bytes 0 and 1) -> (scale 0 * 2^pow2 twice, scale 1 * 2^pow2 twice) as f16x2.
    One conversion and one multiply (none for pow2 = 0) serve both scales; the two broadcasts become half
    selectors (.H0_H0 / .H1_H1) of the decode's multiplies, not instructions (SASS checked in the tests)."""
    times = f"mov.b32 k, {f16x2_pow2(pow2):#010x};\n\tmul.rn.f16x2 t, t, k;\n\t" if pow2 else ""
    res = asm(
        struct(2), [i32(two, loc, ip)],
        "{.reg .b32 t, k; .reg .b16 lo, hi, s0, s1;\n\t"
        "mov.b32 {lo, hi}, $2;\n\t"
        "cvt.rn.f16x2.e4m3x2 t, lo;\n\t"
        f"{times}"
        "mov.b32 {s0, s1}, t;\n\t"
        "mov.b32 $0, {s0, s0};\n\t"
        "mov.b32 $1, {s1, s1};}",
        "=r,=r,r", False, loc, ip)
    return unpack(res, 2, T.i32(), Int32, loc, ip)


# The nibbles of a word held by output pair p of decode_e2m1x8_f16 (low half, high half).
PAIR_NIBBLES = ((0, 2), (4, 6), (1, 3), (5, 7))


def e4m3_bytes_of_codes(w: int) -> tuple[int, int]:
    """The bit operations of decode_e2m1x8_f16 on a 32-bit word, in Python (for tests): the E4M3
    bytes of nibbles 0, 2, 4, 6 and of nibbles 1, 3, 5, 7, each as a 32-bit word."""
    low = ((w << 4) & 0x80808080) | ((w << 2) & 0x1C1C1C1C)
    high = (w & 0x80808080) | ((w >> 2) & 0x1C1C1C1C)
    return low, high


@dsl_user_op
def decode_e2m1x8_f16(word: Int32, scale: Int32, *, loc=None, ip=None):
    """8 E2M1 codes (one 32-bit word) times an f16x2 scale * 2^6 -> 4 f16x2 pairs of e2m1 * scale
    (exact), pair p holding nibbles PAIR_NIBBLES[p]; the E4M3 route of the module docstring."""
    body = [
        "{.reg .b32 lo, hi, t, f0, f1, f2, f3; .reg .b16 h0, h1, h2, h3;",
        # e4m3_bytes_of_codes, low nibbles: signs (bit 3) -> bit 7, exponent and mantissa (bits 0..2) -> bits 2..4
        "shl.b32 t, $4, 4;", "and.b32 t, t, 0x80808080;",
        "shl.b32 lo, $4, 2;", "and.b32 lo, lo, 0x1C1C1C1C;", "or.b32 lo, lo, t;",
        # high nibbles: signs already at bit 7, bits 4..6 -> bits 2..4
        "shr.u32 t, $4, 2;", "and.b32 t, t, 0x1C1C1C1C;",
        "and.b32 hi, $4, 0x80808080;", "or.b32 hi, hi, t;",
        "mov.b32 {h0, h1}, lo;", "mov.b32 {h2, h3}, hi;",
    ]
    body += [f"cvt.rn.f16x2.e4m3x2 f{j}, h{j};" for j in range(4)]  # = e2m1 * 2^-6, exact
    body += [f"mul.rn.f16x2 ${j}, f{j}, $5;" for j in range(4)]  # = e2m1 * scale, exact
    body.append("}")
    res = asm(struct(4), [i32(word, loc, ip), i32(scale, loc, ip)], "\n\t".join(body),
               "=r,=r,=r,=r,r,r", False, loc, ip)
    return unpack(res, 4, T.i32(), Int32, loc, ip)


def f16_bytes_of_codes(w: int) -> tuple[int, int]:
    """The bit operations of decode_e2m1x8_f16_bits on a 32-bit word, in Python (for tests): the high
    bytes of the fp16 patterns of nibbles 0, 2, 4, 6 and of nibbles 1, 3, 5, 7, each as a 32-bit word."""
    low = ((w << 4) & 0x80808080) | ((w << 1) & 0x0E0E0E0E)
    high = (w & 0x80808080) | ((w >> 3) & 0x0E0E0E0E)
    return low, high


@dsl_user_op
def decode_e2m1x8_f16_bits(word: Int32, scale: Int32, *, loc=None, ip=None):
    """decode_e2m1x8_f16 without the conversion unit: 8 E2M1 codes (one 32-bit word) times an f16x2
    scale (scale * 2^k) -> 4 f16x2 pairs of e2m1 * scale * 2^(k - 14) (exact), pair p holding nibbles
    PAIR_NIBBLES[p].

    A code s e1 e0 m laid into an fp16 as sign bit 15, exponent bits 11..10 and mantissa bit 9 is
    exactly e2m1 * 2^-14 (e = 0 gives the fp16 subnormals 0 and 2^-15, as E2M1's 0 and 0.5), and those
    bits all lie in the fp16's high byte: the bit operations build that byte for 4 codes at once, and
    one byte permute per pair puts two of them above zero low bytes. Exact: e2m1 * scale is an integer
    times 2^-10 with at most 6 significant bits, so for 0 <= k <= 7 (448 * 2^7 < 65504) the product is
    an fp16, normal or subnormal, at least 2^-24; the caller takes the 2^(k - 14) out of its fp32 sums."""
    body = [
        "{.reg .b32 lo, hi, t, z;",
        # f16_bytes_of_codes, low nibbles: signs (bit 3) -> bit 7, exponent and mantissa (bits 0..2) -> bits 1..3
        "shl.b32 t, $4, 4;", "and.b32 t, t, 0x80808080;",
        "shl.b32 lo, $4, 1;", "and.b32 lo, lo, 0x0E0E0E0E;", "or.b32 lo, lo, t;",
        # high nibbles: signs already at bit 7, bits 4..6 -> bits 1..3
        "shr.u32 t, $4, 3;", "and.b32 t, t, 0x0E0E0E0E;",
        "and.b32 hi, $4, 0x80808080;", "or.b32 hi, hi, t;",
        "mov.b32 z, 0;",
    ]
    # bytes (0, 1) and (2, 3) of each word as the high bytes of an f16x2 (= e2m1 * 2^-14), times the scale
    pairs = [("lo", "0x1404"), ("lo", "0x3424"), ("hi", "0x1404"), ("hi", "0x3424")]
    body += [f"prmt.b32 t, {src}, z, {sel}; mul.rn.f16x2 ${j}, t, $5;" for j, (src, sel) in enumerate(pairs)]
    body.append("}")
    res = asm(struct(4), [i32(word, loc, ip), i32(scale, loc, ip)], "\n\t".join(body),
               "=r,=r,=r,=r,r,r", False, loc, ip)
    return unpack(res, 4, T.i32(), Int32, loc, ip)
