"""An impl that drops the batch dimension."""

from problems.gemv.reference import ref_kernel


def custom_kernel(data):
    return ref_kernel(data)[:, :, 0]
