"""The bf16-predecoded peers' cache (shared/peers.py): a decoded operand is reused only while its
input tensors are unchanged."""

import torch

from shared.peers import PredecodeCache


def test_predecode_cache_rebuilds_after_an_in_place_change():
    builds = []
    cache = PredecodeCache(lambda data: builds.append(1) or data[0].sum().item())
    a = torch.ones(4)
    data = (a, torch.zeros(2))
    assert cache.get(data) == 4.0 and cache.get(data) == 4.0 and len(builds) == 1  # a repeat call hits
    a.mul_(2)  # same address and shape, new values
    assert cache.get(data) == 8.0 and len(builds) == 2


def test_writing_the_output_keeps_the_decode():
    """The impl writes its output on every call: that must not count as a changed input (a timed
    re-decode on every call made the grouped peer 30x slower on the H100, 2026-11-24 run adc1eed)."""
    builds = []
    cache = PredecodeCache(lambda data: builds.append(1) or data[0].sum().item())
    data = (torch.ones(4), torch.zeros(2))
    for _ in range(3):
        cache.get(data)
        data[-1].add_(1)  # the impl's write into c
    assert len(builds) == 1
    groups = ([(torch.ones(2), torch.ones(2), torch.zeros(2))],)
    grouped = PredecodeCache(lambda data: builds.append(1), outputs=lambda data: [c for _, _, c in data[0]])
    for _ in range(3):
        grouped.get(groups)
        groups[0][0][2].add_(1)
    assert len(builds) == 2


def test_the_cache_holds_every_input_the_evaluator_rotates_over():
    """A miss inside a CUDA-graph capture would decode there (group_gemm copies its CPU-resident scales,
    which a capture refuses): the cache must hold the graph replay's inputs, not only a sample's 50."""
    from harness import worker as W

    assert PredecodeCache(lambda data: None).capacity >= max(W.GRAPH_MAX_INPUTS, 50)
