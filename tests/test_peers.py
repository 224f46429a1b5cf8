"""The bf16-predecoded peers' cache (harness/peers.py): a decoded operand is reused only while its
input tensors are unchanged."""

import torch

from harness.peers import PredecodeCache


def test_predecode_cache_rebuilds_after_an_in_place_change():
    builds = []
    cache = PredecodeCache(lambda data: builds.append(1) or data[0].sum().item())
    a = torch.ones(4)
    data = (a, torch.zeros(2))
    assert cache.get(data) == 4.0 and cache.get(data) == 4.0 and len(builds) == 1  # a repeat call hits
    a.mul_(2)  # same address and shape, new values
    assert cache.get(data) == 8.0 and len(builds) == 2
