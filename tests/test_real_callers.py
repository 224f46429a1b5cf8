"""The submissions as real callers use them (GPU tier): inside a non-default torch queue, and
captured in a CUDA graph. A serving stack runs its work on torch's current queue and captures its
decode steps in graphs; a kernel launched on another queue races with the ops around it and is not
captured (shared/cute/launch_queue.py).
"""

from __future__ import annotations

import gc
import importlib

import pytest
import torch

from shared.cute import launch_queue
from tests.test_host_path import PROBLEMS, _matches, _outputs, _problem_and_submission
from tests.test_reference import tensors_of

SLEEP_CYCLES = 50_000_000  # ~25 ms on an H100: the side queue is busy long after the host returns




def _copy_inputs(problem, dst, src):
    """New input values into the same tensors (a graph replays on fixed addresses); the outputs are
    left alone (src's hold whatever its generator or a reference call put there)."""
    outputs = {id(c) for c in _outputs(problem, dst)}
    for d, s in zip(tensors_of(dst), tensors_of(src)):
        if id(d) not in outputs:
            d.copy_(s)


def _race_case(problem, prob, sub, queue, rounds=3, case=None):
    """On `queue`: a long kernel, then NaN into C, then new inputs copied into the same tensors, then
    the call, then C compared with the reference at once (on `case`, default the last test case).
    Returns the first failed check, or None."""
    case = case or prob.tests[-1]
    data = prob.reference.generate_stress_input(**case, device="cuda")
    news = [prob.reference.generate_stress_input(**{**case, "seed": case["seed"] + 7 * (i + 1)}, device="cuda")
            for i in range(rounds)]
    wants = [prob.reference.ref_kernel(n) for n in news]
    sub.custom_kernel(data)  # prepared (compiled, checked, bound) outside the timed pattern
    torch.cuda.synchronize()
    failure = None
    with torch.cuda.stream(queue):
        for new, want in zip(news, wants):
            torch.cuda._sleep(SLEEP_CYCLES)
            for c in _outputs(problem, data):
                c.fill_(float("nan"))
            _copy_inputs(problem, data, new)
            out = sub.custom_kernel(data)
            ok, msg = _matches(problem, prob, out, want)  # torch ops on `queue`, right after the call
            failure = failure or (None if ok else msg)
    torch.cuda.synchronize()
    return failure


def _forget_prepared_launches(sub, queue) -> list:
    """What a caller's later calls can do to a captured call: the submission's cache of prepared launches
    emptied (it is cleared when full) and garbage collected, the freed device memory handed to new
    tensors full of 0xFF bytes (returned: keep them alive while the graph replays). `queue`: where the
    launch was prepared (torch's allocator gives a freed block back to its own queue first)."""
    getattr(sub, "_dispatch", sub.custom_kernel).prepared.clear()
    gc.collect()
    with torch.cuda.stream(queue):
        return [torch.full((size,), 0xFF, dtype=torch.uint8, device="cuda")
                for size in (512, 1024, 2048, 4096, 16384, 65536) for _ in range(64)]


def _graph_case(problem, prob, sub, case=None, forget=False):
    """Capture one call on `case` (default the last test case), then replay it 3 times on new values
    copied into the same tensors, C poisoned before each replay; asserts each replay's result. forget:
    the submission lets go of the call's prepared launch between capture and replays."""
    case = case or prob.tests[-1]
    data = prob.reference.generate_stress_input(**case, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up off the default queue, as torch's graph docs ask
        for _ in range(2):
            sub.custom_kernel(data)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        sub.custom_kernel(data)
    junk = _forget_prepared_launches(sub, side) if forget else []
    for i in range(3):
        new = prob.reference.generate_stress_input(**{**case, "seed": case["seed"] + 11 * (i + 1)}, device="cuda")
        want = prob.reference.ref_kernel(new)
        _copy_inputs(problem, data, new)
        for c in _outputs(problem, data):
            c.fill_(float("nan"))
        graph.replay()
        out = _outputs(problem, data) if problem == "group_gemm" else data[-1]
        ok, msg = _matches(problem, prob, out, want)
        assert ok, f"replay {i}: {msg}"
    torch.cuda.synchronize()
    del junk


@pytest.mark.gpu
@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_call_inside_a_non_default_queue_sees_its_inputs_and_its_reader_sees_c(problem):
    prob, sub = _problem_and_submission(problem)
    failure = _race_case(problem, prob, sub, torch.cuda.Stream())
    assert failure is None, failure


@pytest.mark.gpu
@pytest.mark.parametrize("problem", PROBLEMS)
def test_the_race_test_fails_when_the_launch_is_forced_onto_the_default_queue(problem, monkeypatch):
    """The control: the same pattern with every launch sent to the default queue must be caught."""
    prob, sub = _problem_and_submission(problem)
    monkeypatch.setattr(launch_queue, "current", lambda device_index: 0)
    failure = _race_case(problem, prob, sub, torch.cuda.Stream())
    assert failure is not None, "a launch on the default queue went unnoticed"


@pytest.mark.gpu
@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_captured_call_replays_on_new_values_in_the_same_tensors(problem):
    prob, sub = _problem_and_submission(problem)
    _graph_case(problem, prob, sub)


@pytest.mark.gpu
@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_captured_call_replays_after_the_submission_lets_go_of_it(problem):
    """A graph replays a launch with the addresses it had at capture: the device tables the launch points
    into (the grouped GEMM's group and tile tables and TMA descriptors) outlive the prepared launch."""
    prob, sub = _problem_and_submission(problem)
    _graph_case(problem, prob, sub, forget=True)


@pytest.mark.gpu
@pytest.mark.parametrize("problem", PROBLEMS)
def test_inference_mode_callers_get_the_kernel_on_every_call(problem):
    """Serving code runs under torch.inference_mode(): its tensors have no version counter. The same
    tuple, called again with new values copied in and C poisoned, must give the reference's result."""
    prob, sub = _problem_and_submission(problem)
    case = prob.tests[-1]
    with torch.inference_mode():
        data = prob.reference.generate_stress_input(**case, device="cuda")
        assert all(t.is_inference() for t in tensors_of(data))
        for i in range(3):
            new = prob.reference.generate_stress_input(**{**case, "seed": case["seed"] + 5 * (i + 1)}, device="cuda")
            want = prob.reference.ref_kernel(new)
            _copy_inputs(problem, data, new)
            for c in _outputs(problem, data):
                c.fill_(float("nan"))
            ok, msg = _matches(problem, prob, sub.custom_kernel(data), want)
            assert ok, f"call {i}: {msg}"


def _force_group_config(monkeypatch, name: str, **kwargs) -> list:
    """Every group_gemm prepare from here on with config.<name> (and kwargs); returns the list of the
    sizes each prepare took."""
    from problems.group_gemm import config, kernel_sm90

    taken, real = [], kernel_sm90.prepare

    def prepare(data, sizes, **_):
        taken.append(sizes)
        return real(data, sizes, config=getattr(config, name), **kwargs)

    monkeypatch.setattr(kernel_sm90, "prepare", prepare)
    return taken


# a case the split kernel takes: every K an even count of K tiles, one pair tile per cluster
SPLIT_CASE = dict(m=[96, 200, 40], n=[384, 256, 640], k=[1024, 512, 2048], g=3, seed=31)


@pytest.fixture
def pair_kernel_forced(monkeypatch):
    """group_gemm prepared with the pair kernel, every tile a pair of B tiles: the test cases fit one wave,
    where choose_config keeps the single-tile kernel."""
    from problems.group_gemm.kernel_sm90 import ALL_PAIRS

    return _force_group_config(monkeypatch, "SM90_PAIRS", pairs=ALL_PAIRS)


@pytest.fixture
def split_kernel_forced(monkeypatch):
    """group_gemm prepared with the pair kernel split over 2-CTA clusters (the test cases have K tiles in
    odd counts or too few for choose_config to pick it)."""
    return _force_group_config(monkeypatch, "SM90_PAIRS_SPLIT")




# the last test case's A tiles all hold more than 64 rows; SPLIT_CASE's group of 40 rows gives pair tiles
# that run the half-width wgmmas (Sm90Config.half_s_tiles)
PAIR_CASES = pytest.mark.parametrize("case", [None, SPLIT_CASE], ids=["last-test-case", "half-width-tiles"])


@pytest.mark.gpu
@PAIR_CASES
def test_the_pair_kernel_inside_a_non_default_queue(pair_kernel_forced, case):
    prob, sub = _problem_and_submission("group_gemm")
    failure = _race_case("group_gemm", prob, sub, torch.cuda.Stream(), case=case)
    assert pair_kernel_forced, "no call was prepared with the pair kernel"
    assert failure is None, failure


@pytest.mark.gpu
@PAIR_CASES
def test_the_pair_kernel_captured_and_replayed(pair_kernel_forced, case):
    prob, sub = _problem_and_submission("group_gemm")
    _graph_case("group_gemm", prob, sub, case=case)
    assert pair_kernel_forced, "no call was prepared with the pair kernel"


@pytest.mark.gpu
def test_the_split_pair_kernel_inside_a_non_default_queue(split_kernel_forced):
    prob, sub = _problem_and_submission("group_gemm")
    failure = _race_case("group_gemm", prob, sub, torch.cuda.Stream(), case=SPLIT_CASE)
    assert split_kernel_forced, "no call was prepared with the split pair kernel"
    assert failure is None, failure


@pytest.mark.gpu
def test_the_split_pair_kernel_captured_and_replayed(split_kernel_forced):
    prob, sub = _problem_and_submission("group_gemm")
    _graph_case("group_gemm", prob, sub, case=SPLIT_CASE)
    assert split_kernel_forced, "no call was prepared with the split pair kernel"


# The sm90 kernels whose CTAs hand data to other CTAs of the launch, forced onto the last test case (512x1536x7168
# and 4096x768x512): dealt K tiles (Stream-K; partial sums through a workspace in device memory, 96 tiles of 28 K
# tiles and 192 of 2 on one CTA per SM) and the A decode shared by pairs of CTAs (decoded rows bulk-copied into
# the other CTA's ring; 4096x768x512 in 3 pairs of N tiles, 40 or 32 A tiles, more CTAs than one wave).
HANDING_OVER = [("gemm", "SM90_M64_WIDE_DK"), ("dual_gemm", "SM90_WIDE_DK"), ("dual_gemm", "SM90_WIDE_104_SHARED"),
                ("dual_gemm", "SM90_WIDE_SHARED")]


@pytest.fixture(params=HANDING_OVER, ids=lambda p: f"{p[0]}-{p[1]}")
def handing_over_forced(request, monkeypatch):
    """Every sm90 call of the problem prepared with the config: (problem, the shapes it took)."""
    problem, name = request.param
    cmod, taken = importlib.import_module(f"problems.{problem}.config"), []

    def choose(m, n, k):
        taken.append((m, n, k))
        return getattr(cmod, name)

    monkeypatch.setattr(cmod, "choose_sm90", choose)
    return problem, taken


@pytest.mark.gpu
def test_a_kernel_handing_over_between_ctas_inside_a_non_default_queue(handing_over_forced):
    """Three calls in a row on a busy side queue, each on new values, each checked as soon as it is queued."""
    problem, taken = handing_over_forced
    prob, sub = _problem_and_submission(problem)
    failure = _race_case(problem, prob, sub, torch.cuda.Stream())
    assert taken, "no call was prepared with the forced config"
    assert failure is None, failure


@pytest.mark.gpu
def test_a_kernel_handing_over_between_ctas_captured_and_replayed(handing_over_forced):
    """A replay must find the state the launch keeps between CTAs as the capture left it (dealt K's workspace
    flags, cleared by each launch; the pairs' barriers), and the workspace must outlive the prepared launch
    (the submission lets go of it here)."""
    problem, taken = handing_over_forced
    prob, sub = _problem_and_submission(problem)
    _graph_case(problem, prob, sub, forget=True)
    assert taken, "no call was prepared with the forced config"
