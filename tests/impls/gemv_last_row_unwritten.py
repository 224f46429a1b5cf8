"""Deliberately wrong gemv impl: computes every row but the last and leaves c's last row as it was."""

from problems.gemv.reference import ref_kernel


def custom_kernel(data):
    c = data[-1]
    last = c[-1].clone()
    out = ref_kernel(data)
    out[-1] = last
    return out
