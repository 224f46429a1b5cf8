"""The leaderboard's timing loop (LEADERBOARD.md 8.4), on CUDA and, for laptops and CI, on the CPU.

One sample = flush L2, record a start event, call the kernel on `inputs_per_sample` inputs back to
back, record the end event, synchronize; the sample is the elapsed time divided by the number of
inputs. After each sample: stop once there are at least 3 samples and 100 ms have passed, and the
relative standard error is under 0.1 %, or mean*runs exceeds max_time, or 120 s have passed; never
more than max_repeats samples.

The leaderboard's flush allocates 62.5 GiB (gemm, dual, group) or 4 GiB (gemv) of randn; that does
not fit beside the data on an 80 GB card, so the flush here is capped (FLUSH_CAP_BYTES, still far
above any L2) and the size used is reported with the results.

Beyond the leaderboard, three things an impl could otherwise use to look faster:
- Clocks bound at import. The worker imports this module before it loads any impl, and the timing
  reads the host clock, CUDA events and the device synchronize only through the references taken
  below: an impl that rebinds time.perf_counter_ns, torch.cuda.Event's methods or torch.cuda.synchronize
  changes nothing measured (and harness/integrity.py fails it for trying).
- Work left running. Per sample, after the end event has completed, the whole device is synchronized
  and the host time that took is kept (`lags_ns`): work on another CUDA queue that the end event does
  not wait for shows there (Samples.unfinished_error).
- Persisting L2. The clock sets the persisting-L2 carve-out to 0 before any impl is loaded (cuda-python's
  runtime); before each sample a carve-out found set again is the impl's: it is reset with the
  persisting lines, so nothing pinned in L2 survives the flush, and reported (Clock.persisting_l2_error).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

# ---- bound before any impl is loaded (see the module docstring) --------------------------------------
_now_ns = time.perf_counter_ns
_sqrt, _log, _exp, _isfinite = math.sqrt, math.log, math.exp, math.isfinite
_EventBase = getattr(torch._C, "_CudaEventBase", None)
_Event = torch.cuda.Event
_current_stream = torch.cuda.current_stream
# (a CPU build of torch has the class without its methods)
_record = getattr(_EventBase, "record", None)
_elapsed_ms = getattr(_EventBase, "elapsed_time", None)
_wait_event = getattr(_EventBase, "synchronize", None)
_device_sync = torch.cuda.synchronize  # replaced below by the C function where torch has CUDA
if hasattr(torch._C, "_cuda_synchronize"):
    _device_sync = torch._C._cuda_synchronize

FLUSH_CAP_BYTES = 8 * 1024**3
WALL_CAP_NS = 120e9
MIN_WALL_NS = 1e8
TARGET_REL_ERR = 1e-3


@dataclass(frozen=True)
class Stats:
    """Per-call times in ns, as the leaderboard reports them; `median` beside them (not a leaderboard
    key: on a loaded CPU it moves far less than the mean)."""

    runs: int
    mean: float
    std: float
    err: float
    best: float
    worst: float
    median: float = 0.0

    LEADERBOARD_KEYS = ("runs", "mean", "std", "err", "best", "worst")

    def as_dict(self) -> dict:
        return asdict(self)


class TimingError(ValueError):
    """Samples that no honest measurement gives (none, zero, negative, not finite)."""


def stats_of(durations_ns: list[float]) -> Stats:
    n = len(durations_ns)
    if n == 0:
        raise TimingError("no samples")
    bad = [d for d in durations_ns if not (_isfinite(d) and d > 0)]
    if bad:
        raise TimingError(f"{len(bad)} of {n} samples are not a positive finite time (e.g. {bad[0]!r} ns)")
    mean = sum(durations_ns) / n
    std = _sqrt(sum((d - mean) ** 2 for d in durations_ns) / (n - 1)) if n > 1 else 0.0
    ordered = sorted(durations_ns)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return Stats(n, mean, std, std / _sqrt(n), ordered[0], ordered[-1], median)


def should_stop(durations_ns: list[float], wall_ns: float, max_time_ns: float) -> bool:
    """The stopping rule, evaluated after each sample."""
    if len(durations_ns) < 3 or wall_ns <= MIN_WALL_NS:
        return False
    s = stats_of(durations_ns)
    return s.err / s.mean < TARGET_REL_ERR or s.mean * s.runs > max_time_ns or wall_ns > WALL_CAP_NS


def flush_bytes_for(problem_flush_bytes: int) -> int:
    return min(int(problem_flush_bytes), FLUSH_CAP_BYTES)


# A sample whose device ran on past its end event: flagged when the median lag exceeds both this and the
# median sample itself. A synchronize of an idle device returns within a few us on the H100's host; an
# impl that leaves its real work on another queue lags by that work's whole time.
LAG_FLOOR_NS = 25e3


@dataclass
class Samples:
    """What the loop measured: per sample, the event time per input (ns) and, on CUDA, how long the
    device stayed busy after the end event had completed (host ns; 0 on the CPU)."""

    per_sample_inputs: int = 1
    durations_ns: list[float] = field(default_factory=list)
    lags_ns: list[float] = field(default_factory=list)

    def stats(self) -> Stats:
        return stats_of(self.durations_ns)

    def median_lag_us(self) -> float | None:
        return _median(self.lags_ns) / 1e3 if self.lags_ns else None

    def unfinished_error(self) -> str | None:
        """The unfinished-work check: None, or why the event times cannot be trusted."""
        if not self.lags_ns:
            return None
        lag, sample = _median(self.lags_ns), _median(self.durations_ns) * self.per_sample_inputs
        if lag > LAG_FLOOR_NS and lag > sample:
            return (f"{UNFINISHED}: the device stayed busy a median {lag / 1e3:.1f} us after the end event, "
                    f"longer than the timed sample itself ({sample / 1e3:.1f} us): work the end event does not "
                    "wait for (another CUDA queue) is not timed")
        return None


UNFINISHED = "unfinished-work check"
PERSISTING_L2 = "persisting-L2 guard"


def _median(xs: list[float]) -> float:
    ordered = sorted(xs)
    return ordered[len(ordered) // 2]


def _l2_runtime():
    """cuda-python's runtime calls for the persisting-L2 reset, or (None, why)."""
    try:
        from cuda.bindings import runtime as cudart
    except Exception as e:  # noqa: BLE001 - any import failure means: no reset here
        return None, f"cuda-python unavailable ({type(e).__name__}: {e})"
    return cudart, None


class Clock:
    """CUDA events on the current CUDA queue, or the CPU's monotonic clock."""

    def __init__(self, device: str, flush_bytes: int):
        self.cuda = torch.device(device).type == "cuda"
        self.flush_elems = flush_bytes // 4
        self.cudart, self.l2_unavailable = _l2_runtime() if self.cuda else (None, None)
        self.persisting_l2_at_start = self._reset_persisting_l2() if self.cudart is not None else None

    def sync(self) -> None:
        if self.cuda:
            _device_sync()

    def flush(self) -> None:
        if self.cuda:  # evict L2 the leaderboard's way: a large randn, then free it
            junk = torch.randn(self.flush_elems, dtype=torch.float32, device="cuda")
            del junk

    def persisting_l2_error(self) -> str | None:
        """Before a sample: None, or the persisting-L2 guard's message. The clock set the carve-out to 0
        before any impl was loaded (some machines start with one: 9.8 MB on the lent H100), so a carve-out
        found now is the impl's: it goes back to 0 and the persisting lines are reset."""
        if not self.cuda or self.cudart is None:
            return None
        carve_out = self._reset_persisting_l2()
        if carve_out:
            return (f"{PERSISTING_L2}: a persisting-L2 carve-out of {carve_out} bytes was set "
                    "(cudaLimitPersistingL2CacheSize): lines kept there survive the L2 flush between samples")
        return None

    def _reset_persisting_l2(self) -> int:
        """Returns the carve-out found; where there was one, it goes to 0 and the persisting lines are
        reset. (With a carve-out of 0 no line can be kept persisting, so there is nothing to reset.)"""
        rt = self.cudart
        limit = rt.cudaLimit.cudaLimitPersistingL2CacheSize
        _, carve_out = rt.cudaDeviceGetLimit(limit)
        if carve_out:
            rt.cudaDeviceSetLimit(limit, 0)
            rt.cudaCtxResetPersistingL2Cache()
        return carve_out

    def time_ns(self, work: Callable[[], object]) -> tuple[float, object]:
        """Elapsed ns of `work()` (the device time between two events on CUDA)."""
        ns, result, _ = self.time_with_lag_ns(work)
        return ns, result

    def time_with_lag_ns(self, work: Callable[[], object]) -> tuple[float, object, float]:
        """(elapsed ns of `work()`, its result, lag ns): on CUDA the event time on the queue current at
        the start, and the host time from the end event's completion until the whole device is idle,
        less what the same wait and synchronize take on an idle device."""
        if self.cuda:
            stream = _current_stream()
            start, end = _Event(enable_timing=True), _Event(enable_timing=True)
            _record(start, stream)
            result = work()
            _record(end, stream)
            lag = _idle_after(end)
            # the same again, the device now idle: the host's own share of `lag`, which a host slow
            # to return from the wait and the synchronize would otherwise pass off as work left running
            idle = _Event()
            _record(idle, stream)
            own = _idle_after(idle)
            return _elapsed_ms(start, end) * 1e6, result, float(max(lag - own, 0))
        t0 = _now_ns()
        result = work()
        return float(_now_ns() - t0), result, 0.0


def _idle_after(event) -> float:
    """Host ns from `event`'s completion until the whole device is idle."""
    _wait_event(event)
    t = _now_ns()
    _device_sync()
    return _now_ns() - t


def sample_loop(clock: Clock, sample: Callable[[], object], max_repeats: int, max_time_ns: float,
                after: Callable[[object], str | None] | None = None, per_sample_inputs: int = 1,
                before: Callable[[], str | None] | None = None) -> tuple[Samples | None, str | None]:
    """Run samples until the stopping rule says stop. `before()` runs untimed ahead of each sample (fresh
    values, resets) and may return an error message; `after(result)` likewise after it (rechecks). An
    error aborts the loop: (None, message)."""
    samples = Samples(per_sample_inputs)
    t_start = _now_ns()
    for _ in range(max_repeats):
        if before is not None:
            err = before()
            if err:
                return None, err
        clock.sync()
        err = clock.persisting_l2_error()
        if err:
            return None, err
        clock.flush()
        ns, result, lag = clock.time_with_lag_ns(sample)
        samples.durations_ns.append(ns / per_sample_inputs)
        if clock.cuda:
            samples.lags_ns.append(lag)
        if after is not None:
            err = after(result)
            if err:
                return None, err
        if should_stop(samples.durations_ns, _now_ns() - t_start, max_time_ns):
            break
    return samples, None


def timed_loop(clock: Clock, sample: Callable[[], object], max_repeats: int, max_time_ns: float,
               after: Callable[[object], str | None] | None = None, per_sample_inputs: int = 1,
               before: Callable[[], str | None] | None = None) -> tuple[Stats | None, str | None]:
    """sample_loop, summed up: (Stats, None) or (None, the first error)."""
    samples, err = sample_loop(clock, sample, max_repeats, max_time_ns, after, per_sample_inputs, before)
    err = err or samples.unfinished_error()
    return (None, err) if err else (samples.stats(), None)


def single_call_mean_us(call: Callable[[], object], flush_bytes: int, max_repeats: int = 100,
                        max_time_ns: float = 10e9) -> float:
    """Mean us of `call()` on CUDA in the leaderboard's loop: one warm-up call, then one call per
    sample after an L2 flush of `flush_bytes` (capped), until the stopping rule says stop."""
    clock = Clock("cuda", flush_bytes_for(flush_bytes))
    call()
    stats, err = timed_loop(clock, call, max_repeats, max_time_ns)
    if err:
        raise RuntimeError(f"single_call_mean_us: {err}")
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
        _device_sync()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outputs = [call() for call in calls]
        _device_sync()
    except Exception as e:  # noqa: BLE001 - a capture failure is a result, not a crash
        _device_sync()
        return None, f"not capturable: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    # A kernel launched on another CUDA queue than torch's current one runs at capture time and is
    # not in the graph: the replay would time nothing. Poison the outputs and check the replay writes.
    written = [t for out in outputs for t in (out if isinstance(out, list | tuple) else [out])
               if isinstance(t, torch.Tensor) and t.is_floating_point()]
    for t in written:
        t.fill_(float("nan"))
    graph.replay()
    _device_sync()
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
    _device_sync()
    t0 = _now_ns()
    for i in range(3):
        calls[i % len(calls)]()
    rough_ms = (_now_ns() - t0) / 3e6
    _device_sync()
    spin_ms = min(max(20.0, 3 * (n + warm) * rough_ms), 2000.0)
    for _ in range(3):
        torch.cuda._sleep(int(spin_ms * _sleep_cycles_per_ms()))
        spun = torch.cuda.Event()
        spun.record()
        times = []
        for i in range(warm + n):
            call = calls[i % len(calls)]
            t = _now_ns()
            call()
            times.append(_now_ns() - t)
        busy = not spun.query()
        _device_sync()
        if busy or spin_ms >= 2000.0:
            break
        spin_ms = min(4 * spin_ms, 2000.0)
    times = sorted(times[warm:])
    return times[n // 2] / 1e3, busy


def geometric_mean(values: list[float]) -> float:
    """exp(mean(log v)): no product that could underflow to 0 however many small values come; a value
    that is not positive and finite has no place in a score (TimingError)."""
    if not values:
        raise TimingError("a geometric mean of no values")
    bad = [v for v in values if not (_isfinite(v) and v > 0)]
    if bad:
        raise TimingError(f"a score over a non-positive or non-finite time: {bad[0]!r}")
    return _exp(sum(_log(v) for v in values) / len(values))


def host_idle_us(calls: list[Callable[[], object]], n: int = 50, warm: int = 5,
                 sync: Callable[[], object] = _device_sync,
                 clock: Callable[[], int] = _now_ns) -> float:
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
