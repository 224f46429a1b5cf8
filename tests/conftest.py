"""Test tiers by marker: unmarked = CPU; `gpu` = any CUDA device; `sm90` / `sm100` = that architecture.
A tier that cannot run here is skipped with its reason in the pytest summary (-ra)."""

from __future__ import annotations

import pytest
import torch


def _capability():
    return torch.cuda.get_device_capability() if torch.cuda.is_available() else None


def pytest_collection_modifyitems(config, items):
    cap = _capability()
    reasons = {
        "gpu": None if cap else "no CUDA device (torch.cuda.is_available() is False)",
        "sm90": None if cap and cap[0] == 9 else f"needs a Hopper sm_90 GPU (have {cap or 'none'})",
        "sm100": None if cap and cap[0] == 10 else f"needs a Blackwell sm_100 GPU (have {cap or 'none'})",
    }
    for item in items:
        for marker, reason in reasons.items():
            if reason and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))
                break


@pytest.fixture
def device():
    return "cuda" if torch.cuda.is_available() else "cpu"
