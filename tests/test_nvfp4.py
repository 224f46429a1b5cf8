"""The codec against ml_dtypes (an independent implementation of E2M1 and E4M3), exhaustively."""

import ml_dtypes
import numpy as np
import pytest
import torch

from shared import nvfp4 as F


def e2m1_value(code: int) -> float:
    """Independent decode from the bit fields (sign, 2-bit exponent with bias 1, 1-bit mantissa)."""
    sign = -1.0 if code & 8 else 1.0
    exp, man = (code >> 1) & 3, code & 1
    return sign * (man * 0.5 if exp == 0 else (1 + man / 2) * 2.0 ** (exp - 1))


def ml_decode_codes() -> np.ndarray:
    # ml_dtypes stores float4 one value per byte: byte i is code i.
    return np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def test_e2m1_table_matches_ml_dtypes_and_bitfields():
    ours = F.decode_e2m1(torch.arange(16)).double().numpy()
    np.testing.assert_array_equal(ours, ml_decode_codes())
    np.testing.assert_array_equal(ours, [e2m1_value(c) for c in range(16)])
    assert np.signbit(ours[8]) and ours[8] == 0.0  # code 8 is -0


def test_all_256_bytes_unpack_and_decode():
    b = torch.arange(256, dtype=torch.uint8)
    codes = F.unpack_nibbles(b.view(1, 256)).view(256, 2)
    assert torch.equal(codes[:, 0], b & 15) and torch.equal(codes[:, 1], b >> 4)  # even K = low nibble
    vals = F.decode_e2m1(codes).double().numpy()
    ml = ml_decode_codes()
    for byte in range(256):
        assert vals[byte, 0] == ml[byte & 15] and vals[byte, 1] == ml[byte >> 4]
    assert torch.equal(F.pack_nibbles(codes.view(1, 512)).view(256), b)


def test_fp4x2_view_decodes_without_to():
    b = torch.arange(256, dtype=torch.uint8).view(1, 256)
    assert torch.equal(F.unpack_nibbles(b.view(F.FP4_DTYPE)), F.unpack_nibbles(b))


def test_encode_round_to_nearest_even_matches_ml_dtypes():
    grid = torch.linspace(-8, 8, 4097, dtype=torch.float32)
    mids = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    x = torch.cat([grid, mids, -mids, torch.tensor([6.0, 7.0, 100.0, -100.0, 0.0, -0.0])])
    ours = F.decode_e2m1(F.encode_e2m1(x)).double().numpy()
    ml = x.numpy().astype(ml_dtypes.float4_e2m1fn).astype(np.float64)
    ml = np.clip(ml, -6, 6)  # ml_dtypes' float4 also saturates (no inf); keep the check explicit
    np.testing.assert_array_equal(ours, ml)
    assert F.decode_e2m1(F.encode_e2m1(torch.tensor([1e9, -1e9]))).tolist() == [6.0, -6.0]


def test_encode_refuses_nan():
    with pytest.raises(ValueError, match="NaN"):
        F.encode_e2m1(torch.tensor([float("nan")]))


def test_pack_validates():
    with pytest.raises(ValueError, match="even"):
        F.pack_nibbles(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(ValueError, match="0..15"):
        F.pack_nibbles(torch.tensor([16, 0], dtype=torch.uint8))


def test_e4m3_all_256_patterns_match_ml_dtypes():
    bits = torch.arange(256, dtype=torch.uint8)
    ours = F.e4m3_to_float(bits).double().numpy()
    ml = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ml))
    np.testing.assert_array_equal(ours[~np.isnan(ml)], ml[~np.isnan(ml)])
    assert np.isnan(ours[0x7F]) and np.isnan(ours[0xFF])


def test_float_to_e4m3_saturates_and_rounds():
    x = torch.tensor([0.0, 1.0, 2.0, 3.0, 1000.0, -1000.0, 0.96875, 2.0**-10])
    got = F.e4m3_to_float(F.float_to_e4m3(x)).tolist()
    assert got[:4] == [0.0, 1.0, 2.0, 3.0] and got[4] == 448.0 and got[5] == -448.0
    assert got[6] == 1.0  # halfway to 1.0 rounds to even
    assert F.as_bytes(F.float_to_e4m3(torch.tensor([1.0, 2.0, 3.0]))).tolist() == [0x38, 0x40, 0x44]


def float64_dequantize(values: torch.Tensor, scales: torch.Tensor) -> np.ndarray:
    """Independent decode: per element, bit fields -> float64, times the ml_dtypes E4M3 scale."""
    v = F.as_bytes(values).numpy()
    s = F.as_bytes(scales).numpy().view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    table = np.array([e2m1_value(c) for c in range(16)])
    rows, half_k, n_l = v.shape
    out = np.empty((rows, 2 * half_k, n_l))
    out[:, 0::2, :] = table[v & 15]
    out[:, 1::2, :] = table[v >> 4]
    return out * np.repeat(s, 16, axis=1)[:, : 2 * half_k, :]


@pytest.mark.parametrize("rows,k,n_l", [(3, 32, 1), (5, 64, 2), (128, 256, 3)])
def test_dequantize_matches_float64_decode(rows, k, n_l):
    g = torch.Generator().manual_seed(rows * k)
    values = torch.randint(0, 256, (n_l, rows, k // 2), dtype=torch.uint8, generator=g).permute(1, 2, 0)
    scales = torch.randint(0, 0x7F, (n_l, rows, k // 16), dtype=torch.uint8, generator=g).permute(1, 2, 0)
    got = F.dequantize(values.view(F.FP4_DTYPE), scales.view(F.SF_DTYPE)).double().numpy()
    np.testing.assert_array_equal(got, float64_dequantize(values, scales))


def test_dequantize_validates_shapes():
    with pytest.raises(ValueError, match="scales shape"):
        F.dequantize(torch.zeros(4, 16, 1, dtype=torch.uint8), torch.zeros(4, 3, 1, dtype=torch.uint8))
    with pytest.raises(ValueError, match="3-D"):
        F.dequantize(torch.zeros(4, 16, dtype=torch.uint8), torch.zeros(4, 2, dtype=torch.uint8))
    with pytest.raises(TypeError, match="1-byte"):
        F.as_bytes(torch.zeros(2, dtype=torch.float16))
