"""What the sm90 tuners share: the check against the reference, the timing loop, the bf16 peer.

The timing loop differs from the evaluator's (harness/timing.py) on purpose: it compares configs
with each other, not with the leaderboard, so it takes a fixed number of samples, interleaves the
configs and reports the median and the best, which move less between runs than the mean.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import torch

from harness.check import check_tensor
from harness.problem import Problem

FLUSH_BYTES = 256 * 1024 * 1024  # written before every sample: far above the H100's 50 MB of L2
SLEEP_CYCLES = 400_000  # ~0.2 ms of GPU spin after the flush, so that the host is ahead of the GPU
WARMUP_ROUNDS = 3  # rounds of samples run first and discarded
# The two generators, by the names the evaluator's --data gives them.
GENERATORS = {"leaderboard": "generate_input", "stress": "generate_stress_input"}


@dataclass(frozen=True)
class Check:
    """One run of a config on one generator's input against ref_kernel."""

    data: str  # "leaderboard" or "stress"
    ok: bool
    message: str  # check_tensor's reason when not ok
    max_err: float  # largest |got - want|, NaN counted as 1e9


def check_on_both_generators(problem: Problem, case: dict, run: Callable, device: str = "cuda") -> list[Check]:
    """`run(data) -> output` on each generator's input for `case`, the output poisoned with NaN first
    (so that an element the kernel never writes fails), compared with ref_kernel at the manifest's
    tolerance."""
    ref = problem.reference
    checks = []
    for data_name, generator in GENERATORS.items():
        data = getattr(ref, generator)(**case, device=device)
        want = ref.ref_kernel(tuple(t.clone() for t in data))
        data[-1].fill_(float("nan"))
        got = run(data)
        if device == "cuda":
            torch.cuda.synchronize()
        ok, message = check_tensor(got, want, problem.rtol, problem.atol)
        max_err = (got.float() - want.float()).abs().nan_to_num(1e9).max().item()
        checks.append(Check(data_name, ok, message, max_err))
    return checks


@dataclass(frozen=True)
class Timing:
    median_us: float
    best_us: float


def time_us(subjects: Sequence[Sequence[Callable[[], object]]], samples: int, per_sample: int = 1) -> list[Timing]:
    """Per-call GPU time of each subject: a sample is an L2 flush, then `per_sample` calls between two
    CUDA events. A subject is a list of calls taken in turn (one per input, for inputs that rotate
    through more memory than L2 holds). The subjects are interleaved, one sample of each per round,
    so that clock or neighbour drift during the run hits every subject alike, and a GPU sleep after
    the flush keeps the host's launch time out of the figure: on the lent H100 the same kernel
    measured up to 30% apart between runs without both."""
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    times: list[list[float]] = [[] for _ in subjects]
    for round_ in range(WARMUP_ROUNDS + samples):
        for calls, subject_times in zip(subjects, times):
            flush.fill_(1.0)
            torch.cuda._sleep(SLEEP_CYCLES)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for j in range(per_sample):
                calls[(round_ * per_sample + j) % len(calls)]()
            end.record()
            torch.cuda.synchronize()
            if round_ >= WARMUP_ROUNDS:
                subject_times.append(start.elapsed_time(end) * 1e3 / per_sample)
    return [Timing(statistics.median(t), min(t)) for t in times]


def warm_gpu(seconds: float = 2.0) -> None:
    """Keep the GPU busy for a while so that the first timed kernels do not run at ramping clocks
    (a fresh process measured up to 30% slow otherwise, H100 2026-11-22)."""
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < seconds:
        for _ in range(20):
            x @ x
        torch.cuda.synchronize()


def peer_calls(problem: Problem, inputs: Sequence[tuple]) -> list[Callable[[], object]]:
    """The evaluator's bf16-predecoded peer (operands decoded once, outside the timed calls), one call
    per input."""
    peer = importlib.import_module(f"problems.{problem.name}.bf16_predecoded")
    for data in inputs:
        peer.prepare(data)
    return [partial(peer.custom_kernel, data) for data in inputs]


def describe_device() -> str:
    props = torch.cuda.get_device_properties(0)
    return f"device: {props.name}, {props.multi_processor_count} SMs, torch {torch.__version__}"
