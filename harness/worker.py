"""What runs inside the evaluator's worker process: one impl, one mode, all cases.

Like the leaderboard, each mode gets a fresh process (harness/worker_start.py), so an impl's module
level caches (compiled kernels) live across the cases of one mode and nothing leaks between modes.
Everything returned to the parent is plain data (dicts, strings, floats).
"""

from __future__ import annotations

import copy
import importlib.util
import os
import sys
import time
import traceback
import types
from pathlib import Path

import torch

from harness import check as chk
from harness import guards as G
from harness import problem as P
from harness import timing as T
from harness.fresh_values import SET_SEED_STRIDE, SETS, ValueSets
from harness.integrity import REBINDING, Snapshot
from harness.progress import Progress

CPU_MAX_TIME_NS = 1e9  # wall clock per case on the CPU (GPU: 10 s); the small cpu cases get 3-200 samples
CPU_WARMUP_NS = 1e8  # wall clock of the warm-up of each case on the CPU
# Benchmark mode rechecks the outputs of one of the first three samples and this share of the rest
# (leaderboard mode rechecks every sample): an impl cannot know which samples are looked at.
BENCH_RECHECK_SHARE = 0.1
GRAPH_MAX_INPUTS = 64  # the most inputs a CUDA-graph replay rotates over (enough to exceed L2 four times)


def cpu_knobs(knobs: dict, inputs_per_sample: int) -> dict:
    """The timing budgets on a CPU, where every case is warmed up first: a CPU's first calls of a shape
    can run many times slower than the rest (allocator, caches, the scheduler). The wall clock is too
    noisy for the 0.1 % stopping rule, so each case gets CPU_MAX_TIME_NS. The loop's budgets count time
    per input, so they are divided by the inputs a sample times (50 for gemm: else 50 times as long)."""
    return {**knobs,
            "max_time_ns": min(knobs["max_time_ns"], CPU_MAX_TIME_NS) / inputs_per_sample,
            "warmup_max_time_ns": min(knobs["warmup_max_time_ns"], CPU_WARMUP_NS) / inputs_per_sample}


class ImplError(Exception):
    """The impl cannot be used at all (import failure, no custom_kernel)."""


def install_task_module() -> None:
    """Leaderboard files start with `from task import input_t, output_t`; the leaderboard provides
    task.py next to them. Provide the same names when no real task module is importable."""
    if "task" in sys.modules:
        return
    try:
        importlib.import_module("task")
    except ImportError:
        task = types.ModuleType("task")
        task.input_t = tuple
        task.output_t = object
        task.TestSpec = dict
        sys.modules["task"] = task


def load_impl(path: str, name: str) -> types.ModuleType:
    """Import an impl file from its own directory (as the leaderboard runs it from its CWD)."""
    install_task_module()
    file = Path(path)
    sys.path.insert(0, str(file.parent))
    spec = importlib.util.spec_from_file_location(f"_impl_{name.replace('-', '_')}", file)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - any failure is reported as one line
        raise ImplError(f"impl {name!r} ({path}) failed to import: {type(e).__name__}: {e}") from None
    if not callable(getattr(module, "custom_kernel", None)):
        raise ImplError(f"impl {name!r} ({path}) defines no custom_kernel(data) function")
    return module


def clone_data(data):
    """Deep copy of an input tuple: tensors cloned with their strides, lists and tuples rebuilt."""
    if isinstance(data, torch.Tensor):
        return data.clone()
    if isinstance(data, list | tuple):
        return type(data)(clone_data(x) for x in data)
    return copy.copy(data)


def _outputs(out) -> list:
    return list(out) if isinstance(out, list | tuple) else [out]


def output_type_error(out) -> str | None:
    """The leaderboard only compares values; a wrong dtype is named here before it confuses anyone."""
    for t in _outputs(out):
        if isinstance(t, torch.Tensor) and t.dtype != torch.float16:
            return f"output dtype is {t.dtype}, expected torch.float16"
    return None


class Runner:
    """Calls one impl on one problem's data and checks the results."""

    def __init__(self, problem_name: str, impl_path: str, impl_name: str, device: str, data_kind: str,
                 graph: bool = False):
        self.problem = P.load_problem(problem_name)
        self.ref = self.problem.reference
        self.impl_name = impl_name
        self.device = device
        self.gen = self.ref.generate_stress_input if data_kind == "stress" else self.ref.generate_input
        # Before the impl is loaded: the clock (and its persisting-L2 reset) and the record of all that
        # the timing and the checks rely on (harness/integrity.py), so that the impl changes neither.
        self.clock = T.Clock(device, T.flush_bytes_for(self.problem.timing["flush_bytes"]))
        self.relied_on = Snapshot(problem_name)
        self.module = load_impl(impl_path, impl_name)
        # A leaderboard bundle launches on the default CUDA queue, where the runner calls it
        # (shared/cute/launch_queue_default.py); the repository's code launches on the current one.
        self.bundle = hasattr(self.module, "_BUNDLE")
        self.prepare = getattr(self.module, "prepare", None)
        self.premise_checked = not (self.bundle and self.clock.cuda)
        self.graph = graph and self.clock.cuda
        # Wall seconds of the last time_case outside its timed samples, by step (the loops' total includes
        # the fresh values and rechecks between samples): what the evaluator's checks cost, per case.
        self.checks_s: dict[str, float] = {}

    def generate(self, case: dict):
        data = self.gen(**case, device=self.device)
        self.clock.sync()
        return data

    def call(self, data):
        """custom_kernel(data); an exception becomes a one-line message (type, text, where)."""
        if not self.premise_checked:  # once: the worker never changes its queue
            if torch.cuda.current_stream() != torch.cuda.default_stream():
                return None, ("a leaderboard bundle launches on the default CUDA queue, where the runner calls it, "
                              "but torch's current queue is another one")
            self.premise_checked = True
        try:
            return self.module.custom_kernel(data), None
        except Exception as e:  # noqa: BLE001
            tb = traceback.extract_tb(e.__traceback__)
            where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
            return None, f"custom_kernel raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}{where}"

    def expected(self, data_copy):
        return self.ref.ref_kernel(data_copy)

    def compare(self, out, expected) -> str | None:
        err = output_type_error(out)
        if err:
            return err
        if isinstance(expected, list | tuple):
            ok, msg = chk.check_groups(out, list(expected), self.problem.rtol, self.problem.atol)
        else:
            ok, msg = chk.check_tensor(out, expected, self.problem.rtol, self.problem.atol)
        return None if ok else msg

    def check_on_clone(self, data):
        """The leaderboard's test step: run on a clone, compare with the reference on the original.
        Returns (error or None, the reference output on `data`)."""
        out, err = self.call(clone_data(data))
        self.clock.sync()
        if err:
            return err, None
        want = self.expected(data)
        return self.compare(out, want), want

    def guard_case(self, case: dict, data, expected) -> str | None:
        """The guards of harness/guards.py on one case. `data` is an input tuple as generated and never
        called; `expected` the reference output on it. Its C's are moved into poisoned buffers and its
        A replaced by another seed's; the first call must not alias an input nor write outside C.
        Then A gets its own values back, in place, and the same tuple object is called again: that
        output must be `expected` (and again alias nothing and write nothing outside C)."""
        guarded, guards = G.guarded_outputs(data, G.as_list(self.ref.output_of(data)))
        views = [g.view for g in guards]
        inputs = [(path, t) for path, t in G.tensors_in(guarded) if not any(t is v for v in views)]
        own_a = [a.clone() for a in G.a_tensors(guarded)]
        G.copy_values(G.a_tensors(guarded), G.a_tensors(self.generate({**case, "seed": case["seed"] + 1})))
        out, err = self.guarded_call(G.OUT_OF_BOUNDS, guarded, inputs, guards)
        if err:
            return err
        G.copy_values(G.a_tensors(guarded), own_a)  # new values in the same tensors, the same tuple
        out, err = self.guarded_call(G.IN_PLACE, guarded, inputs, guards)
        if err:
            return err
        err = self.compare(out, expected)
        if err:
            return f"{G.IN_PLACE}: after A changed in place, the same tuple gave an output that does not follow: {err}"
        return None

    def guarded_call(self, guard: str, data, inputs, guards):
        """(output, error): one call on the guarded tuple; an exception is reported under `guard`, then
        the output's memory is checked against the inputs and the guard bands."""
        out, err = self.call(data)
        self.clock.sync()
        if err:
            return None, f"{guard}: {err}"
        return out, G.aliasing_error(out, inputs) or G.out_of_bounds_error(guards)

    # ----- modes -------------------------------------------------------------------------------

    def test(self, cases: list[dict]) -> list[dict]:
        """Test mode (and the first half of leaderboard mode): per case the leaderboard's check, then
        the guards (guard_case) on a second copy of the same input."""
        results = []
        progress = Progress(f"{self.problem.name} test {self.impl_name}", len(cases))
        for i, case in enumerate(cases):
            progress.step(i + 1, P.describe_case(case))
            data = self.generate(case)
            untouched = clone_data(data)  # for the guards: check_on_clone's reference writes into C
            portable_before = self.portable_calls()
            err, expected = self.check_on_clone(data)
            if not err:
                err = self.guard_case(case, untouched, expected)
            err = err or self.rebinding_error()
            results.append({"case": case, "status": "fail" if err else "pass", "error": err,
                            "path": self.path_taken(portable_before)})
            if err and ("custom_kernel raised" in err or REBINDING in err):
                break  # the CUDA context may be unusable after a kernel fault; a rebinding taints the rest
        progress.done()
        return results

    def benchmark(self, cases: list[dict], leaderboard: bool) -> list[dict]:
        knobs = dict(self.problem.timing["leaderboard" if leaderboard else "benchmark"])
        warm_all = leaderboard and knobs.get("warmup_every_case", False)
        if not self.clock.cuda:
            knobs, warm_all = cpu_knobs(knobs, self.problem.inputs_per_sample), True
        results = []
        progress = Progress(f"{self.problem.name} {'leaderboard' if leaderboard else 'benchmark'} {self.impl_name}",
                            len(cases))
        if not warm_all:  # the leaderboard's one warm-up, on the first test case
            _, err = self.time_case(self.problem.tests[0], False, knobs, timed=False)
            if err:
                progress.done()
                return [{"case": cases[0], "status": "fail", "stats": None,
                         "error": f"{err} (in the warm-up on the first test case)"}]
        for i, case in enumerate(cases):
            progress.step(i + 1, P.describe_case(case))
            portable_before = self.portable_calls()
            samples, err = self.time_case(case, leaderboard, knobs, warm=warm_all)
            err = err or self.rebinding_error()
            result = {"case": case, "status": "fail" if err else "pass", "error": err, "stats": None,
                      "path": self.path_taken(portable_before),
                      "checks_s": {k: round(v, 3) for k, v in self.checks_s.items()}}
            if samples is not None:
                result.update(samples_ns=samples.durations_ns, lags_ns=samples.lags_ns,
                              per_sample_inputs=samples.per_sample_inputs, stats=samples.stats().as_dict())
            if self.graph and not err:
                result["graph_ns"], result["graph_error"] = self.graph_case(case)
            if self.clock.cuda and not leaderboard and not err:
                result.update(self.host_case(case, samples.stats().mean / 1e3))
            results.append(result)
            if err and (leaderboard or REBINDING in err):
                break  # the leaderboard stops at the first failing case; a rebinding taints every later one
        progress.done()
        return results

    def rebinding_error(self) -> str | None:
        return self.relied_on.error()

    def sample_seeds(self, case: dict) -> list[int]:
        """The seeds of a sample's inputs: the case's own for one input per sample (eval.py), else +42,
        +84, ... (eval_better_bench)."""
        n = self.problem.inputs_per_sample
        return [case["seed"]] if n == 1 else [case["seed"] + 42 * (i + 1) for i in range(n)]

    def value_sets(self, case: dict, datas: list, expected: list) -> ValueSets:
        """datas' value sets (harness/fresh_values.py): each input's own, and SETS - 1 more drawn with
        other seeds, each with its reference computed once."""
        others = []
        for seed in self.sample_seeds(case):
            extra = []
            for j in range(1, SETS):
                data = self.generate({**case, "seed": seed + j * SET_SEED_STRIDE})
                extra.append((data, self.expected(clone_data(data))))
            others.append(extra)
        return ValueSets(datas, self.ref.output_of, expected, others)

    def time_case(self, case: dict, leaderboard: bool, knobs: dict, warm: bool = False, timed: bool = True):
        """(Samples, None) or (None, error): the case's inputs checked on clones (the leaderboard's
        correctness step), their value sets built, in leaderboard mode the own-call pass, an optional
        warm-up loop, then the timed loop. Before each sample every input gets another value set in
        place (and, in benchmark mode, the impl's untimed prepare); after it the outputs are rechecked:
        all of every sample in leaderboard mode, those of random samples (at least one among the first
        three) in benchmark mode. timed=False: the warm-up loop only."""
        spent = self.checks_s = dict.fromkeys(("inputs_and_check", "value_sets", "own_call", "fresh_values",
                                                "rechecks", "loops"), 0.0)
        t0 = time.perf_counter()
        datas = [self.generate({**case, "seed": seed}) for seed in self.sample_seeds(case)]
        expected = []
        for d in datas:
            err, want = self.check_on_clone(d)
            if err:
                return None, err
            expected.append(clone_data(want))  # the reference wrote it into d's own C, which the impl writes next
        t1 = time.perf_counter()
        values = self.value_sets(case, datas, expected)
        self.clock.sync()
        t2 = time.perf_counter()
        spent.update(inputs_and_check=t1 - t0, value_sets=t2 - t1)
        if leaderboard and len(datas) > 1:
            err = values.own_call_error(self.call, self.compare, self.clock.sync)
            spent["own_call"] = time.perf_counter() - t2
            if err:
                return None, err
        # The leaderboard has no prepare hook: leaderboard mode never calls it (what it did untimed, the
        # timed call must do); benchmark mode calls it after every change of values, untimed.
        prepare = None if leaderboard else self.prepare
        rng = values.rng
        state = {"sample": 0, "forced": 0}

        def before():
            t = time.perf_counter()
            values.next_sample()
            if prepare:
                for d in datas:
                    prepare(d)
            spent["fresh_values"] += time.perf_counter() - t
            return None

        def sample():
            outs = []
            for d in datas:
                out, err = self.call(d)
                if err:
                    return None, err
                outs.append(out)
            return outs, None

        def after(result):
            outs, err = result
            index = state["sample"]
            state["sample"] += 1
            if err:
                return err
            if leaderboard or index == state["forced"] or rng.random() < BENCH_RECHECK_SHARE:
                t = time.perf_counter()
                err = values.recheck_error(outs, self.compare, index)
                spent["rechecks"] += time.perf_counter() - t
                return err
            return None

        n = len(datas)
        loops = ([(knobs["warmup_max_repeats"], knobs["warmup_max_time_ns"])] if warm or not timed else [])
        loops += [(knobs["max_repeats"], knobs["max_time_ns"])] if timed else []
        samples = None
        for max_repeats, max_time_ns in loops:
            state.update(sample=0, forced=rng.randrange(3))
            t = time.perf_counter()
            samples, err = T.sample_loop(self.clock, sample, max_repeats, max_time_ns, after, n, before)
            spent["loops"] += time.perf_counter() - t
            err = err or (samples.unfinished_error() if samples else None)
            if err:
                return None, err
        return samples, None

    def graph_case(self, case: dict):
        """CUDA-graph replay time of the impl over rotating inputs (enough that they exceed L2 x 4)."""
        n = max(self.problem.inputs_per_sample, 2)
        read = self.ref.cost(**case)[0]
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        n = max(n, min(GRAPH_MAX_INPUTS, -(-4 * l2 // max(read, 1))))
        if self.bundle:
            return None, ("not captured: a leaderboard bundle launches on the default CUDA queue (the runner's); "
                          "the repository's submission launches on the current one and is captured")
        datas = [self.generate({**case, "seed": case["seed"] + 42 * (i + 1)}) for i in range(n)]
        wants = [self.expected(clone_data(d)) for d in datas]
        if self.prepare:
            for d in datas:
                self.prepare(d)

        def check(outputs):  # every replayed output against the reference of its input
            return next((e for e in map(self.compare, outputs, wants) if e), None)

        return T.graph_replay_ns([lambda d=d: self.module.custom_kernel(d) for d in datas], check=check)

    def host_case(self, case: dict, gpu_us: float) -> dict:
        """Host microseconds per call (median, GPU kept busy: timing.host_us_per_call) in two
        patterns: one input called over and over (the leaderboard's), and rotating over the case's
        inputs (seeds as in the timed samples; at least 4). host_over_gpu flags a case whose host
        time exceeds its time per call in the leaderboard's loop: back to back, such calls are
        bound by the host, which the leaderboard's flush hides. Then the same with the GPU idle
        (host_idle)."""
        n = max(self.problem.inputs_per_sample, 4)
        datas = [self.generate({**case, "seed": case["seed"] + 42 * (i + 1)}) for i in range(n)]
        for d in datas:
            if self.prepare:
                self.prepare(d)
            self.module.custom_kernel(d)
        calls = [lambda d=d: self.module.custom_kernel(d) for d in datas]
        same, busy_same = T.host_us_per_call(calls[:1])
        rotating, busy_rot = T.host_us_per_call(calls)
        return {"host_us": same, "host_rotating_us": rotating, "host_over_gpu": max(same, rotating) > gpu_us,
                "host_gpu_busy": busy_same and busy_rot, **self.host_idle(calls[0]), "host_check": self.host_check()}

    def kit_module(self, name: str):
        """The impl's own copy of a kit module (a bundle carries its own), or None where it never loaded it."""
        bundle = getattr(self.module, "_BUNDLE", None)
        return bundle.modules.get(name) if bundle else sys.modules.get(name)

    def host_check(self) -> str | None:
        """How the impl checks a repeated tuple (shared/cute/host_check.kind(): 'compiled' or 'python
        (why)'); None where the impl never loaded it (no kernel path)."""
        checker = self.kit_module("shared.cute.host_check")
        return checker.kind() if checker is not None else None

    def portable_calls(self) -> int | None:
        """How many calls the impl's dispatcher (shared/dispatch.py) has sent down the portable path so
        far; None for an impl that has none."""
        dispatch = self.kit_module("shared.dispatch")
        return getattr(dispatch, "portable_calls", None)

    def path_taken(self, portable_before: int | None) -> str | None:
        """'kernel' or 'portable' (why, where the device has a kernel) for the calls since the count
        `portable_before`; None for an impl without the dispatcher."""
        now = self.portable_calls()
        if now is None:
            return None
        if now == (portable_before or 0):
            return "kernel"
        why = getattr(self.kit_module("shared.dispatch"), "kernel_unavailable", None)
        return "portable" + (f" ({why})" if why else "")

    def host_idle(self, call) -> dict:
        """Host us until `call` returns with the GPU idle (timing.host_idle_us: one input repeated,
        a synchronize before each call), and the same for an empty torch op on this device measured
        the same way right after: the floor a launch onto an idle GPU costs on this host."""
        one = torch.zeros(1, device=self.device)
        empty_op = lambda: one.add_(1)  # noqa: E731
        empty_op()
        return {"host_idle_us": T.host_idle_us([call], sync=self.clock.sync),
                "host_idle_empty_us": T.host_idle_us([empty_op], sync=self.clock.sync)}


def run_mode(problem_name: str, impl_path: str, impl_name: str, mode: str, cases: list[dict],
             device: str, data_kind: str, graph: bool = False) -> dict:
    """Entry point of the worker. Returns {"error": str|None, "cases": [...]}."""
    if device == "cpu" and mode != "test":
        torch.set_num_threads(1)  # CPU timings: one thread, so that another process cannot halve an impl's cores
    problem = P.load_problem(problem_name)
    too_big = fits_error(problem, cases, device)
    if too_big:
        return {"error": too_big, "bad_case": True, "cases": []}
    try:
        runner = Runner(problem_name, impl_path, impl_name, device, data_kind, graph)
    except ImplError as e:
        return {"error": str(e), "cases": []}
    prepared = runner.prepare is not None
    try:
        if mode == "test":
            return {"error": None, "cases": runner.test(cases), "prepare": prepared}
        return {"error": None, "cases": runner.benchmark(cases, leaderboard=(mode == "leaderboard")),
                "prepare": prepared}
    except (torch.OutOfMemoryError, MemoryError) as e:
        return {"error": f"{problem_name}: a case ran out of {device} memory: {str(e).splitlines()[0]}",
                "bad_case": True, "cases": []}


# What one input costs in memory, as a multiple of the bytes it reads and writes: its value sets
# (harness/fresh_values.py), the buffer itself and the clones of the correctness check.
COPIES_PER_INPUT = 6


def fits_error(problem: P.Problem, cases: list[dict], device: str) -> str | None:
    """Why a case's inputs cannot fit this device's free memory (a bad case line, said before anything
    is generated rather than as an allocator's traceback), or None."""
    try:
        free = torch.cuda.mem_get_info()[0] if device == "cuda" else (
            os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError, RuntimeError):
        return None
    for case in cases:
        read, written, _ = problem.reference.cost(**case)
        need = (read + written) * problem.inputs_per_sample * COPIES_PER_INPUT
        if need > free:
            return (f"{problem.name} case {P.describe_case(case)} needs about {need / 2**30:.1f} GiB of {device} "
                    f"memory ({problem.inputs_per_sample} inputs and their value sets); "
                    f"{free / 2**30:.1f} GiB are free")
    return None


def measure_device(read_bytes: list[int], flush_bytes: int = 0) -> dict:
    """Ceilings for the speed of light and, per case, the time to read its input bytes once: graph
    replayed back to back, and in the leaderboard's loop (flush of `flush_bytes`, one call)."""
    from harness import sol

    ceil = sol.measure_ceilings()
    reads = [sol.read_once_us(b) for b in read_bytes] if ceil else [None] * len(read_bytes)
    loops = [sol.read_once_loop_us(b, flush_bytes) for b in read_bytes] if ceil else [None] * len(read_bytes)
    return {"ceilings": ceil.as_dict() if ceil else None, "read_once_us": reads, "read_once_loop_us": loops}
