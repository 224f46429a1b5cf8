"""Does one field of an sm90 kernel's config change the CUDA-graph replay time? (issue 34's metric)

    python lab/graph_config_ab.py PROBLEM FIELD=V1,V2,... [REPS] [--case=N]
    e.g. python lab/graph_config_ab.py gemm pdl=0,1,0,1 20
         python lab/graph_config_ab.py dual_gemm config=wide,wide_dk 20 --case=1

For each benchmark case of gemv, gemm, dual_gemm or group_gemm: the chooser's config with FIELD set to each
value (integers; repeat a value to see the run's spread), or for gemm and dual_gemm with FIELD `config` the
candidates of that name (SM90_CANDIDATES in problems/<p>/config.py; NAME/field:v/... changes integer fields of
one, e.g. config=wide_104,wide_swap/share_s:1/owned_rows:1; the name `chosen` is the chooser's config, the only
name gemv and group_gemm take, e.g. group_gemm config=chosen,chosen/a_slots:4/a_batch:2), one graph per value capturing
the call
over rotating inputs (enough to exceed L2 four times, at most the evaluator's GRAPH_MAX_INPUTS; unlike its
--graph, not at least the problem's inputs per sample; the inputs alternate the leaderboard and the stress
generator). Each graph's replay is checked against the reference (outputs NaN-poisoned first), then the graphs
are replayed interleaved, REPS times each (default 15), and replayed once more and checked again (a kernel that keeps
state between launches, as dealt K's flags, must leave it as it found it); the table gives the median us per
call. Needs an sm_90 GPU and CuTe DSL; the answer for pdl is in results/pdl/.
"""

import math
import statistics
import sys
from dataclasses import replace

import torch

sys.path.insert(0, ".")
from harness.check import check  # noqa: E402
from harness.problem import load_problem  # noqa: E402
from harness.worker import GRAPH_MAX_INPUTS, clone_data  # noqa: E402


def changed(config, field: str, value):
    """config with FIELD = value; for FIELD `config`, value's /field:v parts applied (its name chose config)."""
    if field != "config":
        return replace(config, **{field: value})
    _, *sets = value.split("/")
    return replace(config, **{f: int(v) for f, v in (s.split(":") for s in sets)})


def launcher(problem: str, data, field: str, value):
    """The call's bound launch with the chooser's config, FIELD = value."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    name = value.split("/")[0] if field == "config" else "chosen"
    if name != "chosen" and problem in ("gemv", "group_gemm"):
        sys.exit(f"{problem} has no named candidates: config=chosen[/field:v...], got {value}")
    if problem == "group_gemm":
        from problems.group_gemm import kernel_sm90 as K

        sizes = [tuple(s) for s in data[3]]
        config = K.choose_config(tuple(sizes), "long_first", sms)
        return K.prepare(data, sizes, config=changed(config, field, value))
    if problem == "gemv":
        from problems.gemv import kernel_sm90 as K
        from problems.gemv.config import choose_sm90

        m, half_k, l = data[0].shape
        return K.prepare(data, changed(choose_sm90(m, 2 * half_k, l, sms), field, value), sms)
    kernel = __import__(f"problems.{problem}.kernel_sm90", fromlist=["prepare"])
    configs = __import__(f"problems.{problem}.config", fromlist=["choose_sm90", "SM90_CANDIDATES"])
    a, b = data[0], data[1]
    # NAME, or NAME/field:v/field:v: the candidate with integer fields changed (0 / 1 for the flags)
    config = (configs.choose_sm90(a.shape[0], b.shape[0], 2 * a.shape[1]) if name == "chosen"
              else configs.SM90_CANDIDATES[name])
    return kernel.prepare(data, changed(config, field, value))


def rotating_inputs(ref, case: dict, l2: int, device: str = "cuda") -> tuple[list, list]:
    """(inputs, their copies) of one case for a graph over rotating inputs: enough to exceed L2 four times (at
    least 2, at most the evaluator's GRAPH_MAX_INPUTS), alternating the leaderboard and the stress generator."""
    count = max(2, min(GRAPH_MAX_INPUTS, math.ceil(4 * l2 / ref.cost(**case)[0])))
    gens = (ref.generate_input, ref.generate_stress_input)
    datas = [gens[i % 2](**{**case, "seed": case["seed"] + 42 * (i + 1)}, device=device) for i in range(count)]
    return datas, [clone_data(d) for d in datas]


def replay_and_check(prob, graph, datas, copies, what: str) -> None:
    """Poison every output with NaN, replay the graph, check each output against the reference; exit on
    the first wrong one."""
    run_and_check(prob, graph.replay, datas, copies, what)


def run_and_check(prob, run, datas, copies, what: str) -> None:
    """Poison every output with NaN, run() (the calls of every input), check each output against the reference;
    exit on the first wrong one."""
    ref = prob.reference
    for d in datas:
        out = ref.output_of(d)
        for t in out if isinstance(out, list | tuple) else [out]:
            t.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    for i, d in enumerate(datas):
        ok, msg = check(prob, clone_data(copies[i]), ref.output_of(d))
        if not ok:
            sys.exit(f"{what}, input {i}: wrong result: {msg}")


def capture(calls):
    """The calls run once (compile, bind and allocate outside the capture), then captured into one CUDA graph."""
    for call in calls:
        call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    return graph


def replay_interleaved(graphs, reps: int, calls: int) -> list[list[float]]:
    """Per graph, us per call of each of its `reps` replays (of `calls` calls each), the graphs taking turns so
    that drift hits every one alike."""
    times = [[] for _ in graphs]
    for _ in range(reps):
        for graph, t in zip(graphs, times):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            t.append(start.elapsed_time(end) * 1e3 / calls)
    return times


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--case=")]
    only = next((int(a[7:]) for a in sys.argv[1:] if a.startswith("--case=")), None)
    problem, setting = args[0], args[1]
    reps = int(args[2]) if len(args) > 2 else 15
    field, values = setting.split("=")
    values = values.split(",") if field == "config" else [int(v) for v in values.split(",")]
    prob = load_problem(problem)
    ref = prob.reference
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    table = []
    for ci, case in enumerate(prob.benchmarks):
        if only is not None and ci != only:
            continue
        datas, copies = rotating_inputs(ref, case, l2)
        n = len(datas)
        graphs, keep = [], []
        for value in values:
            launches = [launcher(problem, d, field, value) for d in datas]
            graph = capture(launches)
            replay_and_check(prob, graph, datas, copies, f"case {ci}, {field}={value}")
            graphs.append(graph)
            keep.append(launches)
        times = replay_interleaved(graphs, reps, n)
        for graph, value in zip(graphs, values):
            replay_and_check(prob, graph, datas, copies, f"case {ci}, {field}={value}, after the timed replays")
        table.append((ci, n, [statistics.median(t) for t in times]))
        print(f"case {ci} ({n} inputs): " + "  ".join(f"{field}={v} {m:.2f}" for v, m in zip(values, table[-1][2])),
              flush=True)
    print(f"== {problem}: graph replay us per call, median of {reps} replays")
    labels = [str(v) if field == "config" else f"{field}={v}" for v in values]
    widths = [max(10, len(label) + 2) for label in labels]
    print("case  inputs" + "".join(f"{label:>{w}}" for label, w in zip(labels, widths)))
    for ci, n, medians in table:
        print(f"{ci:<6}{n:>6}" + "".join(f"{m:{w}.2f}" for m, w in zip(medians, widths)))


if __name__ == "__main__":
    main()
