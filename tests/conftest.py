"""Test tiers by marker: unmarked = CPU; `gpu` = any CUDA device; `sm90` / `sm100` = that architecture.
A tier that cannot run here is skipped with its reason in the pytest summary (-ra)."""

from __future__ import annotations

import os

import pytest
import torch

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Under pytest-xdist each worker (and the evaluator processes it spawns, which inherit the
    # environment) takes one core: two workers with two BLAS threads each on two cores thrash.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)


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


@pytest.fixture(scope="session")
def dump_root(tmp_path_factory):
    """Where the sm100 CPU tier keeps compiled PTX and cubins (tests/sm100_common.artifacts)."""
    return tmp_path_factory.mktemp("sm100")
