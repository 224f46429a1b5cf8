"""What a call needs to know of the CUDA device its tensors live on: the kernel family it takes
(device_arch), its SM count (sm_count, the choosers' input) and its index (device_index). Each is asked
of the driver once per device and remembered, because a call pays for every question it asks.

The SM counts the choosers default to where no device is at hand are shared/devices.py's.
"""

from __future__ import annotations

import torch

_ARCH_OF_DEVICE: dict[torch.device, str] = {}


def device_arch(device: torch.device | str | None = None) -> str:
    """The kernel family a device takes: 'sm90' (Hopper, 9.x), 'sm100' (Blackwell, 10.x), 'other' for
    any other CUDA device, 'cpu' when there is none or the device is the CPU. Remembered per indexed
    torch.device (a tensor's device): asking the driver costs ~8 us per call."""
    arch = _ARCH_OF_DEVICE.get(device) if isinstance(device, torch.device) else None
    if arch is None:
        arch = _device_arch(device)
        if isinstance(device, torch.device) and (device.index is not None or device.type == "cpu"):
            _ARCH_OF_DEVICE[device] = arch
    return arch


def _device_arch(device: torch.device | str | None) -> str:
    if device is not None and torch.device(device).type != "cuda":
        return "cpu"
    if not torch.cuda.is_available():
        return "cpu"
    major, _ = torch.cuda.get_device_capability(device)
    return {9: "sm90", 10: "sm100"}.get(major, "other")


def device_index(device: torch.device) -> int:
    """The CUDA device's index ("cuda" without one: the current device)."""
    return device.index if device.index is not None else torch.cuda.current_device()


def sm_count(device: torch.device) -> int:
    """The device's SM count (a persistent grid's size, the choosers' input), asked once per device."""
    index = device_index(device)
    count = _SM_COUNTS.get(index)
    if count is None:
        count = _SM_COUNTS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return count


_SM_COUNTS: dict[int, int] = {}
