"""CuTe global-memory pointers: a tensor's address for a launch (gmem_ptr), a null one for compiling
without tensors (null_ptr). CuTe DSL is optional here so that the modules importing this one load
where it is absent (the portable torch path and the CPU tests); a pointer then asks for it by name."""

from __future__ import annotations

from typing import Any

try:  # CuTe DSL is optional: the portable torch path and the CPU tests run without it
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    HAVE_CUTE = True
except ImportError:  # pragma: no cover - exercised only where the DSL is absent
    cute = make_ptr = None
    HAVE_CUTE = False


def require_cute() -> None:
    if not HAVE_CUTE:
        raise RuntimeError("nvidia-cutlass-dsl is not installed: pip install 'nvidia-cutlass-dsl'")


def gmem_ptr(tensor, dtype: Any, align: int = 16):
    """The tensor's device address as a CuTe global-memory pointer of element type `dtype`.

    The alignment promise lets the compiler emit wide loads; it is checked here because a broken
    promise is a silent wrong answer or a fault in the kernel.
    """
    require_cute()
    addr = tensor.data_ptr()
    if addr % align:
        raise ValueError(f"tensor at 0x{addr:x} is not {align}-byte aligned")
    return make_ptr(dtype, addr, cute.AddressSpace.gmem, assumed_align=align)


def null_ptr(dtype: Any, align: int = 16):
    """A placeholder pointer for compiling without real tensors."""
    require_cute()
    return make_ptr(dtype, 0, cute.AddressSpace.gmem, assumed_align=align)
