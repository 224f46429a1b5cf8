"""Statistics and the stopping rule of the timing loop."""

import math
from pathlib import Path

import pytest

from harness import timing as T


def test_stats_match_the_leaderboard_definitions():
    s = T.stats_of([1.0, 2.0, 3.0, 6.0])
    assert s.runs == 4 and s.mean == 3.0 and s.best == 1.0 and s.worst == 6.0
    assert s.std == pytest.approx(math.sqrt(14 / 3)) and s.err == pytest.approx(s.std / 2)


def test_stopping_rule():
    steady = [100.0] * 3
    assert not T.should_stop(steady[:2], 1e9, 1e12)  # fewer than 3 samples
    assert not T.should_stop(steady, 5e7, 1e12)  # under 100 ms of wall time
    assert T.should_stop(steady, 2e8, 1e12)  # relative error 0 < 0.1 %
    noisy = [100.0, 200.0, 50.0]
    assert not T.should_stop(noisy, 2e8, 1e12)
    assert T.should_stop(noisy, 2e8, 100.0)  # mean * runs beyond max_time
    assert T.should_stop(noisy, 121e9, 1e12)  # 120 s cap


def test_timed_loop_on_cpu_honours_caps_and_errors():
    clock = T.Clock("cpu", 0)
    calls = []
    stats, err = T.timed_loop(clock, lambda: calls.append(1), max_repeats=5, max_time_ns=1e12)
    assert err is None and stats.runs == 5 == len(calls)
    stats, err = T.timed_loop(clock, lambda: None, 5, 1e12, after=lambda r: "bad output")
    assert stats is None and err == "bad output"
    assert T.flush_bytes_for(10**12) == T.FLUSH_CAP_BYTES


def test_geometric_mean():
    assert T.geometric_mean([1e-6, 1e-4]) == pytest.approx(1e-5)


def test_host_idle_us_syncs_before_every_timed_call_and_takes_the_median():
    events, now = [], [0]

    def clock():
        events.append("clock")
        return now[0]

    def call():
        events.append("call")
        now[0] += 1000 * len([e for e in events if e == "call"])  # the i-th call takes i us

    us = T.host_idle_us([call], n=5, warm=2, sync=lambda: events.append("sync"), clock=clock)
    assert events == ["sync", "clock", "call", "clock"] * 7 + ["sync"]
    assert us == 5.0  # calls 3..7 are timed (3, 4, 5, 6, 7 us): the median is 5


def test_host_idle_us_takes_the_calls_in_turn():
    seen = []
    T.host_idle_us([lambda: seen.append("a"), lambda: seen.append("b")], n=3, warm=1, sync=lambda: None)
    assert seen == ["a", "b", "a", "b"]


# ----- the CPU benchmark path (harness/worker.py): the GPU path is the leaderboard's loop, unchanged ----

IMPLS = Path(__file__).resolve().parent / "impls"


def test_cpu_benchmark_warms_up_each_case_before_timing_it():
    """A CPU's first calls of a shape can be many times slower than the rest; no timed sample may
    include them. The case's shape differs from tests[0], which the worker warms up in any case."""
    from harness import worker as W

    runner = W.Runner("gemv", str(IMPLS / "slow_first_calls.py"), "slow-first-calls", "cpu", "leaderboard")
    [result] = runner.benchmark([{"m": 128, "k": 512, "l": 1, "seed": 5}], leaderboard=False)
    assert result["status"] == "pass", result["error"]
    assert result["stats"]["worst"] < runner.module.PAUSE_S * 1e9, result["stats"]


def test_cpu_benchmark_of_a_batched_problem_keeps_to_its_wall_clock_budget():
    """gemm times 50 inputs per sample and the stopping rule counts time per input: the CPU budget
    must still be about CPU_MAX_TIME_NS of wall clock per case, not 50 times that."""
    from harness import worker as W

    runner = W.Runner("gemm", str(IMPLS / "gemm_sleepy.py"), "sleepy", "cpu", "leaderboard")
    [result] = runner.benchmark([{"m": 128, "n": 128, "k": 256, "l": 1, "seed": 5}], leaderboard=False)
    assert result["status"] == "pass", result["error"]
    s, n = result["stats"], runner.problem.inputs_per_sample
    timed_ns = s["runs"] * s["mean"] * n
    # the budget and the sample that crossed it, or the stopping rule's three samples on a slow machine
    assert timed_ns <= max(W.CPU_MAX_TIME_NS + s["worst"] * n, 3 * s["worst"] * n), s


# ----- what an impl cannot reach: the clocks bound at import, the score's arithmetic ---------------------


def test_a_patched_clock_cannot_change_a_measured_time(monkeypatch):
    """harness/timing.py took its clock before any impl: rebinding time.perf_counter_ns after import (as
    tests/impls/cheat_patches_clock.py does) leaves the measured sample as long as it really was."""
    import time

    real = time.perf_counter_ns
    monkeypatch.setattr(time, "perf_counter_ns", lambda: real() // 200)
    samples, err = T.sample_loop(T.Clock("cpu", 0), lambda: time.sleep(0.02), max_repeats=3, max_time_ns=1e12)
    assert err is None and min(samples.durations_ns) >= 0.02e9


def test_the_score_neither_underflows_nor_takes_a_zero():
    assert T.geometric_mean([1e-6] * 400) == pytest.approx(1e-6)  # the product form gives 0.0
    for bad in ([0.0, 1e-5], [1e-5, float("nan")], [-1e-5]):
        with pytest.raises(T.TimingError):
            T.geometric_mean(bad)
    with pytest.raises(T.TimingError):
        T.stats_of([10.0, 0.0])


def test_work_left_past_the_end_event_is_flagged():
    honest = T.Samples(50, [20e3] * 5, [4e3] * 5)  # 50 calls of 20 us; the device idle 4 us after the end
    assert honest.unfinished_error() is None
    hidden = T.Samples(50, [0.5e3] * 5, [900e3] * 5)  # the events saw 25 us; the device ran 900 us more
    assert hidden.unfinished_error().startswith(f"{T.UNFINISHED}: the device stayed busy a median 900.0 us")


class _SimulatedCuda:
    """harness.timing's CUDA calls on a simulated device and host clock (ns): the host takes
    `host_ns` to return from each wait and synchronize; work ends `work_ns` after it starts on the
    queue, and `hidden_ns` more run on another queue that only the synchronize waits for."""

    def __init__(self, monkeypatch, host_ns, work_ns, hidden_ns=0.0):
        self.now, self.busy_until = 0.0, 0.0
        sim = self

        class Event:
            def __init__(self, **_):
                self.t = 0.0

        def record(ev, _stream):
            ev.t = sim.now

        def wait(ev):
            sim.now = max(sim.now, ev.t) + host_ns

        def sync():
            sim.now = max(sim.now, sim.busy_until) + host_ns

        def work():
            sim.now += work_ns
            sim.busy_until = sim.now + hidden_ns

        self.work = work
        for name, value in [("_Event", Event), ("_record", record), ("_wait_event", wait), ("_device_sync", sync),
                            ("_now_ns", lambda: sim.now), ("_current_stream", lambda: None),
                            ("_elapsed_ms", lambda a, b: (b.t - a.t) / 1e6)]:
            monkeypatch.setattr(T, name, value)

    def samples(self, n=5):
        clock = object.__new__(T.Clock)
        clock.cuda = True
        out = T.Samples()
        for _ in range(n):
            ns, _, lag = clock.time_with_lag_ns(self.work)
            out.durations_ns.append(ns)
            out.lags_ns.append(lag)
        return out


def test_a_host_slow_to_synchronize_is_not_taken_for_work_left_running(monkeypatch):
    # 40 us to come back from a wait or a synchronize, a 12 us kernel: the lag is the host's own
    slow_host = _SimulatedCuda(monkeypatch, host_ns=40e3, work_ns=12e3).samples()
    assert slow_host.unfinished_error() is None and max(slow_host.lags_ns) == 0
    # the same host, 900 us of work left on another queue: still flagged
    hidden = _SimulatedCuda(monkeypatch, host_ns=40e3, work_ns=12e3, hidden_ns=900e3).samples()
    assert hidden.unfinished_error().startswith(f"{T.UNFINISHED}: the device stayed busy a median")
    assert 800e3 < T._median(hidden.lags_ns) < 900e3


def test_a_rejected_reference_read_leaves_its_column_empty_with_a_note(monkeypatch, capsys):
    # the evaluator's own read-once kernel, timed in the leaderboard's loop for the `read loop us` column:
    # where the loop's checks reject its samples, the column is empty and the run goes on (it used to end
    # the whole benchmark run with a traceback)
    from types import SimpleNamespace

    from harness import sol

    fake_torch = SimpleNamespace(
        int32=None, randint=lambda *a, **k: None, empty=lambda *a, **k: None,
        cuda=SimpleNamespace(is_available=lambda: True,
                             get_device_properties=lambda _: SimpleNamespace(multi_processor_count=1)))
    monkeypatch.setattr(sol, "torch", fake_torch)
    monkeypatch.setattr(sol, "read_kernel", lambda: lambda buf, out: None)

    def rejected(*_args, **_kw):
        raise RuntimeError(f"single_call_mean_us: {T.UNFINISHED}: the device stayed busy a median 25.4 us")

    monkeypatch.setattr(T, "single_call_mean_us", rejected)
    assert sol.read_once_loop_us(1 << 20, 0) is None
    assert f"not measured: single_call_mean_us: {T.UNFINISHED}" in capsys.readouterr().err


def test_a_cpu_case_whose_samples_spread_too_wide_gets_a_line():
    from harness import eval as E

    def result(p10_us, p90_us, median_us):
        return {"cases": [{"case": {"m": 128, "seed": 1}, "spread_us": [p10_us, p90_us],
                           "stats": {"median": median_us * 1e3}}]}

    assert E.spread_notes("ref", result(90, 150, 100)) == []  # an idle machine's spread
    [line] = E.spread_notes("ref", result(90, 400, 100))  # a busy core
    assert line.startswith("note: ref [m: 128; seed: 1]: samples spread 90..400 us (p10..p90) around a median of "
                           "100 us: too wide to compare")
