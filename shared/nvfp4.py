"""NVFP4 codec: FP4 E2M1 values packed two per byte, FP8 E4M3 scales, one scale per 16 values along K.

Everything here works on CPU and CUDA tensors alike and never calls `.to()` on a
`torch.float4_e2m1fn_x2` tensor (on sm_90 that is a device-side assert that poisons the CUDA
context): packed values are always reinterpreted as `uint8` first and decoded through a table.

Packing (LEADERBOARD.md 2.1): the element with even K index sits in the low nibble, odd K in the high.
"""

from __future__ import annotations

import torch

SF_VEC = 16  # FP4 values per E4M3 scale, along K
FP4_DTYPE = torch.float4_e2m1fn_x2
SF_DTYPE = torch.float8_e4m3fn

# Code -> value. Bit 3 is the sign, bits 2..1 the exponent (bias 1), bit 0 the mantissa.
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
E2M1_MAX = 6.0
E4M3_MAX = 448.0

# Midpoints between consecutive E2M1 magnitudes; a tie goes to the even code (round to nearest even).
_E2M1_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)

_TABLES: dict[tuple[str, torch.device], torch.Tensor] = {}


def _table(name: str, device: torch.device) -> torch.Tensor:
    key = (name, torch.device(device))
    if key not in _TABLES:
        if name == "e2m1":
            t = torch.tensor(E2M1_VALUES, dtype=torch.float32)
        else:  # all 256 E4M3 bit patterns, converted once on the CPU
            t = torch.arange(256, dtype=torch.uint8).view(SF_DTYPE).to(torch.float32)
        _TABLES[key] = t.to(device)
    return _TABLES[key]


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    """Reinterpret an FP4x2 / FP8 / uint8 / int8 tensor as uint8 (a view, same shape and strides)."""
    if t.dtype == torch.uint8:
        return t
    if t.element_size() != 1:
        raise TypeError(f"as_bytes: expected a 1-byte dtype, got {t.dtype}")
    return t.view(torch.uint8)


def unpack_nibbles(packed: torch.Tensor) -> torch.Tensor:
    """[..., n] bytes -> [..., 2n] 4-bit codes (uint8); code 2i is the low nibble of byte i."""
    b = as_bytes(packed)
    return torch.stack((b & 0x0F, b >> 4), dim=-1).flatten(-2)


def pack_nibbles(codes: torch.Tensor) -> torch.Tensor:
    """[..., 2n] 4-bit codes -> [..., n] uint8, even index in the low nibble."""
    if codes.shape[-1] % 2:
        raise ValueError(f"pack_nibbles: last dimension must be even, got {codes.shape[-1]}")
    c = codes.to(torch.uint8)
    if bool((c > 15).any()):
        raise ValueError("pack_nibbles: codes must be in 0..15")
    return c[..., 0::2] | (c[..., 1::2] << 4)


def decode_e2m1(codes: torch.Tensor) -> torch.Tensor:
    """4-bit codes (any integer dtype, values 0..15) -> float32 values."""
    return _table("e2m1", codes.device)[codes.long()]


def encode_e2m1(x: torch.Tensor) -> torch.Tensor:
    """float -> 4-bit E2M1 codes (uint8), round to nearest even, saturating at +-6. NaN is refused."""
    x = x.to(torch.float32)
    if bool(torch.isnan(x).any()):
        raise ValueError("encode_e2m1: NaN has no E2M1 encoding")
    mag = x.abs()
    mids = torch.tensor(_E2M1_MIDPOINTS, dtype=torch.float32, device=x.device)
    above = (mag.unsqueeze(-1) > mids).sum(-1)
    # At a tie between code j and j+1 take the even one: j+1 is even exactly when j is odd.
    tie = mag.unsqueeze(-1) == mids
    odd_low = torch.arange(len(_E2M1_MIDPOINTS), device=x.device) % 2 == 1
    code = above + (tie & odd_low).sum(-1)
    sign = torch.signbit(x).to(torch.int64) << 3
    return (code | sign).to(torch.uint8)


def e4m3_to_float(scales: torch.Tensor) -> torch.Tensor:
    """E4M3 scales (float8_e4m3fn or their uint8 bits) -> float32, by table (NaN stays NaN)."""
    return _table("e4m3", scales.device)[as_bytes(scales).long()]


def float_to_e4m3(x: torch.Tensor) -> torch.Tensor:
    """float -> float8_e4m3fn, round to nearest even, saturating at +-448 (torch's cast makes NaN)."""
    return x.to(torch.float32).clamp(-E4M3_MAX, E4M3_MAX).to(SF_DTYPE)


def dequantize(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """Exact NVFP4 decode.

    values: [rows, K/2, L] float4_e2m1fn_x2 (or uint8), scales: [rows, K/16, L] float8_e4m3fn.
    Returns float32 [rows, K, L]; every element is exact (an E2M1 value times an E4M3 scale fits in
    float32 with room to spare).
    """
    if values.dim() != 3 or scales.dim() != 3:
        raise ValueError(f"dequantize: expected 3-D [rows, K/2, L] and [rows, K/16, L], got "
                         f"{tuple(values.shape)} and {tuple(scales.shape)}")
    rows, half_k, n_l = values.shape
    k = 2 * half_k
    if tuple(scales.shape) != (rows, -(-k // SF_VEC), n_l):
        raise ValueError(f"dequantize: scales shape {tuple(scales.shape)} does not match values "
                         f"{tuple(values.shape)} (expected {(rows, -(-k // SF_VEC), n_l)})")
    codes = unpack_nibbles(as_bytes(values).permute(0, 2, 1))  # [rows, L, K]
    vals = decode_e2m1(codes)
    sf = e4m3_to_float(scales.to(values.device) if scales.device != values.device else scales)
    sf = sf.permute(0, 2, 1).repeat_interleave(SF_VEC, dim=-1)[..., :k]  # [rows, L, K]
    return (vals * sf).permute(0, 2, 1)
