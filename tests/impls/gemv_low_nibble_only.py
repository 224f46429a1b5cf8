"""Deliberately wrong gemv impl: decodes only the low nibble of each byte (every odd-K value read as 0).

It passes on the leaderboard's GEMV data, whose odd-K values are all zero, and must fail on stress data.
"""


from shared.nvfp4 import as_bytes


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    low = [as_bytes(x) & 0x0F for x in (a, b)]
    masked = [t.view(a.dtype) for t in low]
    from problems.gemv.reference import ref_kernel

    return ref_kernel((masked[0], masked[1], sfa, sfb, None, None, c))
