"""Scale layouts, checked byte by byte without any kernel."""

import pytest
import torch

from shared import scales as S


def plain_scales(rows, sf_k, n_l, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(1, 255, (n_l, rows, sf_k), dtype=torch.uint8, generator=g).permute(1, 2, 0)


@pytest.mark.parametrize("rows,sf_k,n_l", [(128, 4, 1), (256, 8, 2), (384, 448, 3), (80, 16, 1), (40, 6, 2)])
def test_permuted_bytes_sit_at_the_spec_offsets(rows, sf_k, n_l):
    plain = plain_scales(rows, sf_k, n_l)
    perm = S.to_permuted(plain)
    assert tuple(perm.shape) == S.permuted_shape(rows, sf_k, n_l)
    rest_m, rest_k = S.ceil_div(rows, 128), S.ceil_div(sf_k, 4)
    assert perm.stride() == (16, 4, rest_k * 512, 1, 512, rest_m * rest_k * 512)
    storage = S.permuted_storage(perm)
    assert storage.numel() == n_l * rest_m * rest_k * 512
    for i, j, b in [(0, 0, 0), (rows - 1, sf_k - 1, n_l - 1), (rows // 2, sf_k // 2, n_l // 2), (33, 1, 0)]:
        i = min(i, rows - 1)
        off = S.blocked_offset(i, j, b, rows, sf_k)
        assert storage[off] == plain[i, j, b]
        assert off == ((((b * rest_m + i // 128) * rest_k + j // 4) * 32 + i % 32) * 4 + (i % 128) // 32) * 4 + j % 4
    # every plain byte lands at its offset
    i, j, b = torch.meshgrid(torch.arange(rows), torch.arange(sf_k), torch.arange(n_l), indexing="ij")
    assert torch.equal(storage[S.blocked_offset(i, j, b, rows, sf_k)], plain[i, j, b])


@pytest.mark.parametrize("rows,sf_k,n_l", [(256, 8, 2), (72, 16, 1), (130, 5, 1)])
def test_round_trip_and_blocked_agree(rows, sf_k, n_l):
    plain = plain_scales(rows, sf_k, n_l, seed=1)
    perm = S.to_permuted(plain)
    assert torch.equal(S.from_permuted(perm, rows, sf_k), plain)
    slab = S.ceil_div(rows, 128) * S.ceil_div(sf_k, 4) * 512
    for b in range(n_l):
        blocked = S.to_blocked(plain[:, :, b])
        assert torch.equal(blocked, S.permuted_storage(perm)[b * slab:(b + 1) * slab])  # zero padding both


def test_padding_keeps_filler_and_blocked_pads_with_zero():
    rows, sf_k = 72, 6  # M tail (72 of 128 rows) and K tail (6 of 8 scale columns)
    plain = plain_scales(rows, sf_k, 1)
    filler = torch.full(S.storage_shape(rows, sf_k, 1), 0xAB, dtype=torch.uint8)
    perm = S.to_permuted(plain, filler)
    storage = S.permuted_storage(perm)
    i, j, b = torch.meshgrid(torch.arange(rows), torch.arange(sf_k), torch.arange(1), indexing="ij")
    valid = torch.zeros_like(storage, dtype=torch.bool)
    valid[S.blocked_offset(i, j, b, rows, sf_k).flatten()] = True
    assert bool((storage[~valid] == 0xAB).all()) and int((~valid).sum()) == 128 * 8 - rows * sf_k
    assert bool((S.to_blocked(plain[:, :, 0])[~valid] == 0).all())


def test_fp8_dtype_is_preserved_and_shape_errors_are_clear():
    plain = plain_scales(128, 4, 1).view(torch.float8_e4m3fn)
    assert S.to_permuted(plain).dtype == torch.float8_e4m3fn
    with pytest.raises(ValueError, match="filler shape"):
        S.to_permuted(plain, torch.zeros(1, 2, 3))
    with pytest.raises(ValueError, match="does not fit"):
        S.from_permuted(S.to_permuted(plain), 256, 4)
