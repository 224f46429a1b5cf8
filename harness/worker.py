"""What runs inside the evaluator's spawned worker process: one impl, one mode, all cases.

Like the leaderboard, each mode gets a fresh process (`multiprocessing` spawn), so an impl's module
level caches (compiled kernels) live across the cases of one mode and nothing leaks between modes.
Everything returned to the parent is plain data (dicts, strings, floats).
"""

from __future__ import annotations

import copy
import importlib.util
import sys
import traceback
import types
from pathlib import Path

import torch

from harness import check as chk
from harness import guards as G
from harness import problem as P
from harness import timing as T
from harness.progress import Progress

CPU_MAX_TIME_NS = 2e9  # wall clock per case on the CPU (benchmark mode's GPU budget is 10 s)
CPU_WARMUP_NS = 1e8  # wall clock of the warm-up of each case on the CPU


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
        self.module = load_impl(impl_path, impl_name)
        # A leaderboard bundle launches on the default CUDA queue, where the runner calls it
        # (shared/cute/launch_queue_default.py); the repository's code launches on the current one.
        self.bundle = hasattr(self.module, "_BUNDLE")
        self.prepare = getattr(self.module, "prepare", None)
        self.device = device
        self.gen = self.ref.generate_stress_input if data_kind == "stress" else self.ref.generate_input
        self.clock = T.Clock(device, T.flush_bytes_for(self.problem.timing["flush_bytes"]))
        self.premise_checked = not (self.bundle and self.clock.cuda)
        self.graph = graph and self.clock.cuda

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

    def run_and_check(self, data) -> str | None:
        """The leaderboard's test step: run on a clone, compare with the reference on the original."""
        return self.check_on_clone(data)[0]

    def check_on_clone(self, data):
        """run_and_check's step; returns (error or None, the reference output on `data`)."""
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
            err, expected = self.check_on_clone(data)
            if not err:
                err = self.guard_case(case, untouched, expected)
            results.append({"case": case, "status": "fail" if err else "pass", "error": err})
            if err and "custom_kernel raised" in err:
                break  # the CUDA context may be unusable after a kernel fault
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
        if not warm_all:
            self.bench_case(self.problem.tests[0], False, knobs["warmup_max_repeats"], knobs["warmup_max_time_ns"])
        for i, case in enumerate(cases):
            progress.step(i + 1, P.describe_case(case))
            if warm_all:
                self.bench_case(case, False, knobs["warmup_max_repeats"], knobs["warmup_max_time_ns"])
            stats, err = self.bench_case(case, leaderboard, knobs["max_repeats"], knobs["max_time_ns"])
            result = {"case": case, "status": "fail" if err else "pass", "error": err,
                      "stats": stats.as_dict() if stats else None}
            if self.graph and not err:
                result["graph_ns"], result["graph_error"] = self.graph_case(case)
            if self.clock.cuda and not leaderboard and not err:
                result.update(self.host_case(case, stats.mean / 1e3))
            results.append(result)
            if err and leaderboard:
                break  # the leaderboard stops at the first failing case
        progress.done()
        return results

    def graph_case(self, case: dict):
        """CUDA-graph replay time of the impl over rotating inputs (enough that they exceed L2 x 4)."""
        n = max(self.problem.inputs_per_sample, 2)
        read = self.ref.cost(**case)[0]
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        n = max(n, min(64, -(-4 * l2 // max(read, 1))))
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

    def host_check(self) -> str | None:
        """How the impl checks a repeated tuple (shared/cute/host_check.kind(): 'compiled' or 'python
        (why)'), read from the impl's own copy of the module (a bundle carries its own); None where
        the impl never loaded it (no kernel path)."""
        bundle = getattr(self.module, "_BUNDLE", None)
        checker = bundle.modules.get("shared.cute.host_check") if bundle else sys.modules.get("shared.cute.host_check")
        return checker.kind() if checker is not None else None

    def host_idle(self, call) -> dict:
        """Host us until `call` returns with the GPU idle (timing.host_idle_us: one input repeated,
        a synchronize before each call), and the same for an empty torch op on this device measured
        the same way right after: the floor a launch onto an idle GPU costs on this host."""
        one = torch.zeros(1, device=self.device)
        empty_op = lambda: one.add_(1)  # noqa: E731
        empty_op()
        return {"host_idle_us": T.host_idle_us([call], sync=self.clock.sync),
                "host_idle_empty_us": T.host_idle_us([empty_op], sync=self.clock.sync)}

    def bench_case(self, case: dict, recheck: bool, max_repeats: int, max_time_ns: float):
        n = self.problem.inputs_per_sample
        if n == 1:
            return self._bench_single(dict(case), recheck, max_repeats, max_time_ns)
        return self._bench_batch(case, n, recheck, max_repeats, max_time_ns)

    def _bench_single(self, case, recheck, max_repeats, max_time_ns):
        """eval.py: one call per sample; with recheck, fresh data (seed + 13) every sample."""
        state = {"data": self.generate(case)}
        err = self.run_and_check(state["data"])
        if err:
            return None, err

        def before():
            if recheck:
                case["seed"] += 13
                state["data"] = self.generate(case)
                state["copy"] = clone_data(state["data"])
            if self.prepare:
                self.prepare(state["data"])

        def sample():
            return self.call(state["data"])

        def after(result):
            out, err = result
            if err:
                return err
            return self.compare(out, self.expected(state["copy"])) if recheck else None

        return T.timed_loop(self.clock, sample, max_repeats, max_time_ns, after, 1, before)

    def _bench_batch(self, case, n, recheck, max_repeats, max_time_ns):
        """eval_better_bench: n inputs (seeds +42 each), all checked first, then timed back to back.
        Rechecks compare against the references computed once (the reference is deterministic)."""
        datas = []
        for i in range(n):
            c = dict(case)
            c["seed"] = case["seed"] + 42 * (i + 1)
            datas.append(self.generate(c))
        expected = []
        for d in datas:
            out, err = self.call(clone_data(d))
            if err:
                return None, err
            want = self.expected(clone_data(d))
            err = self.compare(out, want)
            if err:
                return None, err
            expected.append(want)
        if self.prepare:
            for d in datas:
                self.prepare(d)

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
            if err:
                return err
            if recheck:
                for out, want in zip(outs, expected):
                    err = self.compare(out, want)
                    if err:
                        return err
            return None

        return T.timed_loop(self.clock, sample, max_repeats, max_time_ns, after, n)


def run_mode(problem_name: str, impl_path: str, impl_name: str, mode: str, cases: list[dict],
             device: str, data_kind: str, graph: bool = False) -> dict:
    """Entry point of the spawned worker. Returns {"error": str|None, "cases": [...]}."""
    try:
        runner = Runner(problem_name, impl_path, impl_name, device, data_kind, graph)
    except ImplError as e:
        return {"error": str(e), "cases": []}
    if mode == "test":
        return {"error": None, "cases": runner.test(cases)}
    return {"error": None, "cases": runner.benchmark(cases, leaderboard=(mode == "leaderboard"))}


def measure_device(read_bytes: list[int], flush_bytes: int = 0) -> dict:
    """Ceilings for the speed of light and, per case, the time to read its input bytes once: graph
    replayed back to back, and in the leaderboard's loop (flush of `flush_bytes`, one call)."""
    from harness import sol

    ceil = sol.measure_ceilings()
    reads = [sol.read_once_us(b) for b in read_bytes] if ceil else [None] * len(read_bytes)
    loops = [sol.read_once_loop_us(b, flush_bytes) for b in read_bytes] if ceil else [None] * len(read_bytes)
    return {"ceilings": ceil.as_dict() if ceil else None, "read_once_us": reads, "read_once_loop_us": loops}
