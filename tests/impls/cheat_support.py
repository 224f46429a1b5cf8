"""What the cheating impls share: the reference of the problem a tuple belongs to, so that each cheat
computes correct values on any of the four problems and is caught only by what it cheats on."""

import importlib


def reference_for(data):
    """problems.<name>.reference for a gemv, gemm, dual_gemm or group_gemm input tuple."""
    if isinstance(data[0], list):
        name = "group_gemm"  # (abc list, scales list, permuted scales list, sizes)
    elif len(data) == 10:
        name = "dual_gemm"  # (a, b1, b2, 3 plain scales, 3 permuted scales, c)
    elif data[-1].shape[1] == 1:
        name = "gemv"  # c is [M, 1, L]
    else:
        name = "gemm"
    return importlib.import_module(f"problems.{name}.reference")


def tensors(data) -> list:
    """Every tensor of a (nested) input tuple, in order."""
    if isinstance(data, list | tuple):
        return [t for x in data for t in tensors(x)]
    return [data] if hasattr(data, "data_ptr") else []
