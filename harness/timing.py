"""The leaderboard's timing loop (LEADERBOARD.md 8.4), on CUDA and, for laptops and CI, on the CPU.

One sample = flush L2, record a start event, call the kernel on `inputs_per_sample` inputs back to
back, record the end event, synchronize; the sample is the elapsed time divided by the number of
inputs. After each sample: stop once there are at least 3 samples and 100 ms have passed, and the
relative standard error is under 0.1 %, or mean*runs exceeds max_time, or 120 s have passed; never
more than max_repeats samples.

The leaderboard's flush allocates 62.5 GiB (gemm, dual, group) or 4 GiB (gemv) of randn; that does
not fit beside the data on an 80 GB card, so the flush here is capped (FLUSH_CAP_BYTES, still far
above any L2) and the size used is reported with the results.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

FLUSH_CAP_BYTES = 8 * 1024**3
WALL_CAP_NS = 120e9
MIN_WALL_NS = 1e8
TARGET_REL_ERR = 1e-3


@dataclass(frozen=True)
class Stats:
    """Per-call times in ns, as the leaderboard reports them."""

    runs: int
    mean: float
    std: float
    err: float
    best: float
    worst: float

    def as_dict(self) -> dict:
        return asdict(self)


def stats_of(durations_ns: list[float]) -> Stats:
    n = len(durations_ns)
    if n == 0:
        raise ValueError("stats_of: no samples")
    mean = sum(durations_ns) / n
    std = math.sqrt(sum((d - mean) ** 2 for d in durations_ns) / (n - 1)) if n > 1 else 0.0
    return Stats(n, mean, std, std / math.sqrt(n), min(durations_ns), max(durations_ns))


def should_stop(durations_ns: list[float], wall_ns: float, max_time_ns: float) -> bool:
    """The stopping rule, evaluated after each sample."""
    if len(durations_ns) < 3 or wall_ns <= MIN_WALL_NS:
        return False
    s = stats_of(durations_ns)
    return s.err / s.mean < TARGET_REL_ERR or s.mean * s.runs > max_time_ns or wall_ns > WALL_CAP_NS


def flush_bytes_for(problem_flush_bytes: int) -> int:
    return min(int(problem_flush_bytes), FLUSH_CAP_BYTES)


class Clock:
    """CUDA events on the current CUDA queue, or the CPU's monotonic clock."""

    def __init__(self, device: str, flush_bytes: int):
        self.cuda = torch.device(device).type == "cuda"
        self.flush_elems = flush_bytes // 4

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def flush(self) -> None:
        if self.cuda:  # evict L2 the leaderboard's way: a large randn, then free it
            junk = torch.randn(self.flush_elems, dtype=torch.float32, device="cuda")
            del junk

    def time_ns(self, work: Callable[[], object]) -> tuple[float, object]:
        """Elapsed ns of `work()` (the device time between two events on CUDA)."""
        if self.cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            result = work()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) * 1e6, result
        t0 = time.perf_counter_ns()
        result = work()
        return float(time.perf_counter_ns() - t0), result


def timed_loop(clock: Clock, sample: Callable[[], object], max_repeats: int, max_time_ns: float,
               after: Callable[[object], str | None] | None = None, per_sample_inputs: int = 1,
               before: Callable[[], None] | None = None) -> tuple[Stats | None, str | None]:
    """Run samples until the stopping rule says stop. `before()` runs untimed ahead of each sample
    (fresh data for rechecks); `after(result)` may return an error message, which aborts the loop."""
    durations: list[float] = []
    t_start = time.perf_counter_ns()
    for _ in range(max_repeats):
        if before is not None:
            before()
        clock.sync()
        clock.flush()
        ns, result = clock.time_ns(sample)
        durations.append(ns / per_sample_inputs)
        if after is not None:
            err = after(result)
            if err:
                return None, err
        if should_stop(durations, time.perf_counter_ns() - t_start, max_time_ns):
            break
    return stats_of(durations), None


def single_call_mean_us(call: Callable[[], object], flush_bytes: int, max_repeats: int = 100,
                        max_time_ns: float = 10e9) -> float:
    """Mean us of `call()` on CUDA in the leaderboard's loop: one warm-up call, then one call per
    sample after an L2 flush of `flush_bytes` (capped), until the stopping rule says stop."""
    clock = Clock("cuda", flush_bytes_for(flush_bytes))
    call()
    stats, _ = timed_loop(clock, call, max_repeats, max_time_ns)
    return stats.mean / 1e3


def graph_replay_ns(calls: list[Callable[[], object]], reps: int = 20,
                    check: Callable[[list], str | None] | None = None) -> tuple[float | None, str | None]:
    """Secondary metric: the calls captured once into a CUDA graph and replayed back to back (no L2
    flush, no launch gaps); median ns per call. Impls that synchronize with the host or allocate in
    ways a graph cannot hold are reported as not capturable, with the reason. `check(outputs)`: the
    outputs of a replay onto NaN-poisoned outputs, judged (an error message, or None) before timing."""
    if not torch.cuda.is_available():
        return None, "no CUDA device"
    try:
        for call in calls:  # compile and warm up outside the capture
            call()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outputs = [call() for call in calls]
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - a capture failure is a result, not a crash
        torch.cuda.synchronize()
        return None, f"not capturable: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    # A kernel launched on another CUDA queue than torch's current one runs at capture time and is
    # not in the graph: the replay would time nothing. Poison the outputs and check the replay writes.
    written = [t for out in outputs for t in (out if isinstance(out, list | tuple) else [out])
               if isinstance(t, torch.Tensor) and t.is_floating_point()]
    for t in written:
        t.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    if not written or any(bool(torch.isnan(t).any()) for t in written):
        return None, "not captured: the impl's kernels run outside torch's current CUDA queue"
    err = check(outputs) if check else None
    if err:
        return None, f"the replay's outputs are wrong: {err}"
    clock = Clock("cuda", 0)
    times = sorted(clock.time_ns(graph.replay)[0] for _ in range(reps))
    return times[len(times) // 2] / len(calls), None


_SLEEP_CYCLES_PER_MS: list[float] = []


def _sleep_cycles_per_ms() -> float:
    """torch.cuda._sleep's spin cycles per millisecond on this GPU, measured once."""
    if not _SLEEP_CYCLES_PER_MS:
        cycles = 10_000_000
        torch.cuda._sleep(cycles // 10)  # warm
        ms, _ = Clock("cuda", 0).time_ns(lambda: torch.cuda._sleep(cycles))
        _SLEEP_CYCLES_PER_MS.append(cycles / (ms / 1e6))
    return _SLEEP_CYCLES_PER_MS[0]


def host_us_per_call(calls: list[Callable[[], object]], n: int = 100, warm: int = 20) -> tuple[float, bool]:
    """Median host microseconds of one call: the time until the call returns, with the GPU kept busy
    by a spin kernel queued first, so that launches only enqueue and no device time is counted.
    `calls` are taken in turn (one input repeated, or rotating over several); the calls must have run
    once already (compiled, prepared). Inside the busy window `warm` untimed calls come first: on the
    lent H100's host the first calls after a synchronize run up to twice as long (the CPU idled while
    it waited). Returns (median, gpu_stayed_busy): False means the spin ended before the last call
    returned, so a call that waits for the GPU may have been counted; the spin is then made 4x
    longer and the measurement repeated, up to twice."""
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for i in range(3):
        calls[i % len(calls)]()
    rough_ms = (time.perf_counter_ns() - t0) / 3e6
    torch.cuda.synchronize()
    spin_ms = min(max(20.0, 3 * (n + warm) * rough_ms), 2000.0)
    for _ in range(3):
        torch.cuda._sleep(int(spin_ms * _sleep_cycles_per_ms()))
        spun = torch.cuda.Event()
        spun.record()
        times = []
        for i in range(warm + n):
            call = calls[i % len(calls)]
            t = time.perf_counter_ns()
            call()
            times.append(time.perf_counter_ns() - t)
        busy = not spun.query()
        torch.cuda.synchronize()
        if busy or spin_ms >= 2000.0:
            break
        spin_ms = min(4 * spin_ms, 2000.0)
    times = sorted(times[warm:])
    return times[n // 2] / 1e3, busy


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def host_idle_us(calls: list[Callable[[], object]], n: int = 50, warm: int = 5,
                 sync: Callable[[], object] = torch.cuda.synchronize,
                 clock: Callable[[], int] = time.perf_counter_ns) -> float:
    """Median host microseconds until a call returns when the GPU is idle: `sync()` before every call,
    so nothing is queued ahead of it, as for a caller that synchronizes between calls (a layer-by-layer
    loop, a latency benchmark). host_us_per_call keeps the GPU busy instead, and the two differ: a
    launch onto an idle GPU and a CPU that just waited cost more. `calls` are taken in turn and must
    have run once already; the first `warm` are not counted. `sync` and `clock` (ns) are parameters so
    that the logic can be checked without a GPU."""
    times = []
    for i in range(warm + n):
        call = calls[i % len(calls)]
        sync()
        start = clock()
        call()
        times.append(clock() - start)
    sync()
    times = sorted(times[warm:])
    return times[len(times) // 2] / 1e3
