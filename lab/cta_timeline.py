"""Where does one call of an sm90 GEMM kernel spend its time, CTA by CTA? (issue 34: what bounds the shapes that stay)

    python lab/cta_timeline.py PROBLEM CASE [--config NAME] [--set field:v,...] [--json OUT] [--plot OUT.png]
    python lab/cta_timeline.py --from-json RUN.json [--plot OUT.png]
    e.g. python lab/cta_timeline.py gemm 2 --json gemm-2.json --plot gemm-2.png

Benchmark CASE (its index in the manifest) of gemm or dual_gemm with the chooser's config, or candidate NAME,
built a second time with Sm90Config.timeline: the first thread of each role stores %globaltimer, %clock and
%smid at fixed points of the call (Sm90BlockScaledGemm.STAMPS) into a buffer whose address is compiled in.
Every build is checked against the reference first (outputs NaN-poisoned). Two scenarios:

    alone     one call on an idle queue, L2 flushed before it (as the leaderboard's loop flushes)
    in graph  the last of INPUTS calls over rotating inputs in one CUDA graph (the evaluator's graph replay: its
              launch and prologue overlap the call before it, Sm90Config.pdl); the calls before it stamp into a
              scratch buffer

Printed per scenario: each stamp's time after the first CTA's entry (min / median / max over the CTAs), then
each phase of a CTA (median / max): resident (entry to the earlier grid's end), first R stage (its wait for the
first R data), K loop (first R data to its last wgmma), per K tile (between the first and the last R stage),
split (the other CTA's sums added), epilogue (stores issued); then the time the first consumer thread waited over
its K loop for R stages, decoded S and wgmmas, and the first decoder thread for packed S stages and free decoded
slots (the first stage's waits included). Also the graph replay of the plain build and of the stamped one,
interleaved (what the stamps cost). %globaltimer is compared across SMs; where it ticks
coarser than 0.5 us, times inside a CTA come from its %clock, at the cycles per ns that the whole run's
stamps give. --plot draws both scenarios, a bar per CTA.
"""

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

MAX_CTAS = 1024
# stamps that hold summed %clock cycles (Sm90BlockScaledGemm.STAMPS), not times: the names of their three values
WAITS = {"consumer_waits": ("consumer: R stages", "consumer: decoded S", "consumer: wgmmas"),
         "decoder_waits": ("decoder: packed S", "decoder: free slots", None)}
PHASES = (  # name, from stamp, to stamp
    ("resident", "entry", "resident"),
    ("first R stage", "resident", "r_stage_first"),
    ("K loop", "r_stage_first", "loop_done"),
    ("split", "loop_done", "sums_added"),
    ("epilogue", "sums_added", "stored"),
)


def read_stamps(buf: torch.Tensor, names) -> list[dict]:
    """Per CTA that stamped its entry: {stamp: (globaltimer ns, clock, smid)} of the stamps it wrote, and under
    "waits" {wait: cycles} from the WAITS stamps."""
    from shared.cute.sm90_config import TIMELINE_STAMPS

    raw = buf.view(MAX_CTAS, TIMELINE_STAMPS, 4).cpu().tolist()
    ctas = []
    for stamps in raw:
        got = {n: ((s[1] % 2**32) << 32 | (s[0] % 2**32), s[2] % 2**32, s[3]) for n, s in zip(names, stamps)
               if s != [0, 0, 0, 0] and n not in WAITS}
        got["waits"] = {w: v % 2**32 for n, s in zip(names, stamps) if n in WAITS and s != [0, 0, 0, 0]
                        for w, v in zip(WAITS[n], s[:3]) if w}
        if "entry" in got:
            ctas.append(got)
    return ctas


def to_us(ctas: list[dict]) -> tuple[list[dict], dict]:
    """Each CTA's stamps as us after the first CTA's entry. %globaltimer across CTAs; inside a CTA its %clock when
    the timer ticks coarser than 0.5 us (cycles per ns from all the run's stamps)."""
    stamped = [{n: v for n, v in c.items() if n != "waits"} for c in ctas]
    times = [g for c in stamped for g, _, _ in c.values()]
    tick = math.gcd(*[t - times[0] for t in times]) or 1
    t0 = min(c["entry"][0] for c in stamped)
    spans = [((c[n][1] - c["entry"][1]) % 2**32, c[n][0] - c["entry"][0]) for c in stamped for n in c if n != "entry"]
    per_ns = sum(cy for cy, _ in spans) / max(1, sum(ns for _, ns in spans))
    use_clock = tick >= 500
    out = []
    for c, waits in zip(stamped, (c["waits"] for c in ctas)):
        g0, c0, _ = c["entry"]
        out.append({n: ((g0 - t0) + (((cy - c0) % 2**32) / per_ns if use_clock else g - g0)) / 1e3
                    for n, (g, cy, _) in c.items()} | {"sm": c["entry"][2]}
                   | {"waits_us": {w: cy / per_ns / 1e3 for w, cy in waits.items()}})
    clocks = {"timer_tick_ns": tick, "clock_per_ns": round(per_ns, 4), "inside_cta": "clock" if use_clock else "timer"}
    return out, clocks


def summarize(ctas: list[dict], names, kt_own: int) -> dict:
    """Min / median / max over the CTAs of every stamp, and median / max of every phase and of a K tile."""
    stamps = {}
    for n in names:
        v = [c[n] for c in ctas if n in c]
        if v:
            stamps[n] = (min(v), statistics.median(v), max(v))
    phases = {}
    for name, a, b in PHASES:
        if a == "sums_added" and "sums_added" not in stamps:
            a = "loop_done"
        v = [c[b] - c[a] for c in ctas if a in c and b in c]
        if v:
            phases[name] = (statistics.median(v), max(v))
    v = [(c["r_stage_last"] - c["r_stage_first"]) / (kt_own - 1) for c in ctas
         if kt_own > 1 and "r_stage_last" in c and "r_stage_first" in c]
    if v:
        phases["per K tile"] = (statistics.median(v), max(v))
    waits = {}
    for w in [w for ws in WAITS.values() for w in ws if w]:
        v = [c["waits_us"][w] for c in ctas if w in c["waits_us"]]
        if v:
            waits[w] = (statistics.median(v), max(v))
    return {"ctas": len(ctas), "stamps_us": stamps, "phases_us": phases, "waits_us": waits}


def report(doc: dict) -> str:
    lines = [f"== {doc['problem']} {doc['shape']} ({doc['config']}), {doc['kt_own']} K tiles per CTA; graph replay us "
             f"per call: plain {doc['graph_us']['plain']:.2f}, stamped {doc['graph_us']['stamped']:.2f}"]
    for scen, s in doc["scenarios"].items():
        lines.append(f"-- {scen}: {s['summary']['ctas']} CTAs, inside a CTA by {s['clocks']['inside_cta']} "
                     f"(timer tick {s['clocks']['timer_tick_ns']} ns)")
        lines.append(f"{'stamp':<20}{'min':>8}{'median':>8}{'max':>8}   us after the first entry")
        lines += [f"{n:<20}" + "".join(f"{x:8.2f}" for x in v) for n, v in s["summary"]["stamps_us"].items()]
        lines.append(f"{'phase':<20}{'median':>8}{'max':>8}")
        lines += [f"{n:<20}" + "".join(f"{x:8.2f}" for x in v) for n, v in s["summary"]["phases_us"].items()]
        lines.append(f"{'waited, us':<24}{'median':>8}{'max':>8}   (the first thread of the role, over its K loop)")
        lines += [f"{n:<24}" + "".join(f"{x:8.2f}" for x in v) for n, v in s["summary"].get("waits_us", {}).items()]
    return "\n".join(lines)


def plot(doc: dict, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scen = doc["scenarios"]
    fig, axes = plt.subplots(1, len(scen), figsize=(6 * len(scen), 4.8))
    colors = {"resident": "0.75", "first R stage": "C1", "K loop": "C0", "split": "C4", "epilogue": "C2"}
    for ax, (name, s) in zip(axes, scen.items()):
        ctas = sorted(s["ctas_us"], key=lambda c: c["entry"])
        for y, c in enumerate(ctas):
            for phase, a, b in PHASES:
                if a == "sums_added" and a not in c:
                    a = "loop_done"
                if a in c and b in c:
                    ax.barh(y, c[b] - c[a], left=c[a], height=1.0, color=colors[phase], lw=0,
                            label=phase if y == 0 else None)
            if "s_ready_first" in c:
                ax.plot(c["s_ready_first"], y, "k.", ms=2, label="first decoded S ready" if y == 0 else None)
            if "r_stage_last" in c:
                ax.plot(c["r_stage_last"], y, "w|", ms=3, label="last R stage arrived" if y == 0 else None)
        # in a graph the first CTAs enter on the SMs the call before leaves free: start 1 us before any is resident
        left = max(0.0, min(c["resident"] for c in ctas) - 1.0)
        ax.set_xlim(left=left)
        ax.set_xlabel("us after the first CTA's entry")
        ax.set_ylabel("CTA (by entry)")
        ax.set_title(f"{name}" + (f" (from {left:.1f} us: the call before still runs)" if left else ""), fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    env = doc["environment"]
    fig.suptitle(f"{doc['problem']} {doc['shape']} ({doc['config']}), {env['device']}, {env['commit']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def measure(args) -> dict:
    from graph_config_ab import capture, replay_interleaved, rotating_inputs, run_and_check

    from harness.eval import environment
    from harness.problem import load_problem
    from shared.cute.sm90_config import K_TILE, TIMELINE_STAMPS

    kernel = __import__(f"problems.{args.problem}.kernel_sm90", fromlist=["prepare"])
    config = __import__(f"problems.{args.problem}.config", fromlist=["SM90_CANDIDATES", "choose_sm90"])
    names = (kernel.GemmSm90 if args.problem == "gemm" else kernel.DualGemmSm90).STAMPS
    prob = load_problem(args.problem)
    ref = prob.reference
    case = dict(prob.benchmarks[args.case])
    m, n, k = case["m"], case["n"], case["k"]
    base = config.SM90_CANDIDATES[args.config] if args.config else config.choose_sm90(m, n, k)
    sets = dict(s.split(":") for s in args.set.split(",")) if args.set else {}
    base = replace(base, **{f: int(v) for f, v in sets.items()})
    name = args.config or next((c for c, v in config.SM90_CANDIDATES.items() if v == base), "chooser's")
    kt_own = k // K_TILE // base.splits

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    datas, copies = rotating_inputs(ref, case, l2)
    count = len(datas)
    buf = torch.zeros(MAX_CTAS * TIMELINE_STAMPS * 4, dtype=torch.int32, device="cuda")
    scratch = torch.zeros_like(buf)
    plain = [kernel.prepare(d, base) for d in datas]
    watched = [kernel.prepare(d, replace(base, timeline=buf.data_ptr())) for d in datas]
    unwatched = [kernel.prepare(d, replace(base, timeline=scratch.data_ptr())) for d in datas]
    for calls, what in ((plain, "plain"), (watched, "stamped"), (unwatched, "stamped (scratch)")):
        # every call on its own input (the stamped ones each write their stamps)
        run_and_check(prob, lambda calls=calls: [call() for call in calls], datas, copies, f"case {args.case}, {what}")

    scenarios = {}
    flush = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda")
    flush.zero_()
    buf.zero_()
    torch.cuda.synchronize()
    watched[0]()
    torch.cuda.synchronize()
    scenarios["alone"] = read_stamps(buf, names)
    graph = capture(unwatched[:-1] + watched[-1:])
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    buf.zero_()
    graph.replay()
    torch.cuda.synchronize()
    scenarios["in graph"] = read_stamps(buf, names)

    plain_graph, stamped_graph = capture(plain), capture(unwatched)
    times = replay_interleaved([plain_graph, stamped_graph], args.reps, count)
    doc = {"problem": args.problem, "case": args.case, "shape": f"{m}x{n}x{k}", "config": name,
           "config_fields": {f: getattr(base, f) for f in base.__dataclass_fields__}, "kt_own": kt_own,
           "inputs": count, "stamps": list(names),
           "graph_us": {"plain": statistics.median(times[0]), "stamped": statistics.median(times[1])},
           "environment": environment("cuda"), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "scenarios": {}}
    for scen, ctas in scenarios.items():
        if not ctas:
            sys.exit(f"{scen}: no CTA stamped its entry (a build without Sm90Config.timeline?)")
        us, clocks = to_us(ctas)
        doc["scenarios"][scen] = {"clocks": clocks, "summary": summarize(us, names, kt_own), "ctas_us": us}
    return doc


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("problem", nargs="?", choices=["gemm", "dual_gemm"])
    p.add_argument("case", nargs="?", type=int, help="index of the benchmark case in the manifest")
    p.add_argument("--config", default=None, help="a candidate of SM90_CANDIDATES (default: the chooser's)")
    p.add_argument("--set", default="", help="integer fields of the config, e.g. stages:4")
    p.add_argument("--reps", type=int, default=12)
    p.add_argument("--json", default=None)
    p.add_argument("--plot", default=None)
    p.add_argument("--from-json", default=None, help="report (and --plot) a run's JSON instead of measuring")
    args = p.parse_args()
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text())
    elif args.problem is None or args.case is None:
        p.error("PROBLEM and CASE are needed (or --from-json)")
    else:
        doc = measure(args)
    print(report(doc), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    if args.plot:
        plot(doc, args.plot)


if __name__ == "__main__":
    main()
