"""How much of a call is fixed (pipeline fill, split hand-over, epilogue, launch) and how much grows with K, for
our sm90 kernel and for the cublas-predecoded peer? (issue 34: which of the two keeps a shape above its goal)

    python lab/k_lines.py PROBLEM M N K1,K2,... [--config NAME | --config-k K] [--reps R] [--json OUT.json]
    e.g. python lab/k_lines.py gemm 128 4096 2048,3584,7168,14336 --config-k 7168 --json k.json
    python lab/k_lines.py --plot k1.json k2.json ... --out k.png

For each K (gemm or dual_gemm, L = 1): one CUDA graph per side capturing the call over rotating inputs (enough to
exceed L2 four times, as lab/graph_config_ab.py), every output NaN-poisoned and checked against the reference
before and after the timed replays; the two graphs replayed interleaved, REPS times; the median us per call. One
config for every K (a candidate by name, or the chooser's at --config-k, default the largest K), so the line is
one kernel's. A least-squares line over K gives us per 1024 K and the intercept (the fixed part). --plot draws the
lines of several JSON files beside the goal's 2.0x the floor (issue 34's 790 TFLOP/s).
"""

import argparse
import json
import math
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripts.peer_table import FLOOR_FLOPS, GOAL_OVER_FLOOR  # noqa: E402


def measure(args) -> dict:
    import torch
    from graph_config_ab import capture, replay_and_check, replay_interleaved

    from harness.eval import environment
    from harness.problem import load_problem
    from harness.worker import GRAPH_MAX_INPUTS, clone_data

    problem, m, n = args.problem, args.m, args.n
    prob = load_problem(problem)
    ref = prob.reference
    kernel = __import__(f"problems.{problem}.kernel_sm90", fromlist=["prepare"])
    configs = __import__(f"problems.{problem}.config", fromlist=["choose_sm90"])
    peer = __import__(f"problems.{problem}.cublas_predecoded", fromlist=["prepare"])
    cfg = (configs.SM90_CANDIDATES[args.config] if args.config
           else configs.choose_sm90(m, n, args.config_k or max(args.ks)))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows = []
    for k in args.ks:
        case = dict(m=m, n=n, k=k, l=1, seed=7)
        count = max(2, min(GRAPH_MAX_INPUTS, math.ceil(4 * l2 / ref.cost(**case)[0])))
        gens = (ref.generate_input, ref.generate_stress_input)
        datas = [gens[i % 2](**{**case, "seed": 7 + 42 * i}, device="cuda") for i in range(count)]
        copies = [clone_data(d) for d in datas]
        ours = [kernel.prepare(d, cfg) for d in datas]
        for d in datas:
            peer.prepare(d)
        graphs = []
        for name, calls in (("ours", ours), ("peer", [lambda d=d: peer.custom_kernel(d) for d in datas])):
            graphs.append(capture(calls))
            replay_and_check(prob, graphs[-1], datas, copies, f"{name}, K={k}")
        times = replay_interleaved(graphs, args.reps, count)
        for graph, name in zip(graphs, ("ours", "peer")):
            replay_and_check(prob, graph, datas, copies, f"{name}, K={k}, after the timed replays")
        row = {"k": k, "inputs": count, "ours_us": statistics.median(times[0]), "peer_us": statistics.median(times[1]),
               "floor_us": ref.cost(**case)[2] / FLOOR_FLOPS * 1e6}  # the case's FLOPs at issue 34's rate
        rows.append(row)
        print(f"{problem} {m}x{n}x{k} ({count} inputs): ours {row['ours_us']:.2f}  peer {row['peer_us']:.2f}  "
              f"2x floor {GOAL_OVER_FLOOR * row['floor_us']:.2f} us", flush=True)
        del graphs, ours, datas, copies
        torch.cuda.empty_cache()
    ks = [r["k"] for r in rows]
    fits = {side: dict(zip(("us_per_1024k", "intercept_us"),
                           statistics.linear_regression([k / 1024 for k in ks], [r[f"{side}_us"] for r in rows])))
            for side in ("ours", "peer")}
    for side, f in fits.items():
        print(f"== {problem} {m}x{n} {side}: {f['us_per_1024k']:.3f} us per 1024 K + {f['intercept_us']:.2f} us")
    return {"problem": problem, "m": m, "n": n, "config": str(cfg), "reps": args.reps, "rows": rows, "lines": fits,
            "environment": environment("cuda"), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def config_label(text: str) -> str:
    """S rows x R rows, splits and roles of an Sm90Config's repr (the tile a CTA multiplies)."""
    f = dict(re.findall(r"(\w+)=(\w+)", text))
    label = f"{f['smem_rows']} S x {64 * int(f['n_cwg'])} R rows"
    label += f", {f['splits']} splits" if f["splits"] != "1" else ""
    return label + (", swapped" if f["swap_ab"] == "True" else "")


def plot(paths, out) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    docs = [json.loads(Path(p).read_text()) for p in paths]
    fig, axes = plt.subplots(1, len(docs), figsize=(4.2 * len(docs), 3.8), squeeze=False)
    for ax, d in zip(axes[0], docs):
        ks = [r["k"] for r in d["rows"]]
        for side, color in (("ours", "tab:blue"), ("peer", "tab:orange")):
            f = d["lines"][side]
            ax.plot(ks, [r[f"{side}_us"] for r in d["rows"]], "o", color=color,
                    label=f"{'ours' if side == 'ours' else 'cuBLAS pre-decoded'}: "
                          f"{f['us_per_1024k']:.2f}/1024 K + {f['intercept_us']:.1f}")
            ax.plot([0, max(ks)], [f["intercept_us"], f["intercept_us"] + f["us_per_1024k"] * max(ks) / 1024],
                    color=color, lw=0.8)
        last = max(d["rows"], key=lambda r: r["k"])  # the floor grows in proportion to K
        ax.plot([0, last["k"]], [0, GOAL_OVER_FLOOR * last["floor_us"]], "--", color="tab:red", lw=1,
                label=f"goal: {GOAL_OVER_FLOOR}x the floor")
        ax.set_title(f"{d['problem']} {d['m']}x{d['n']}xK, {config_label(d['config'])}, {d['environment']['commit']}",
                     fontsize=8)
        ax.set_xlabel("K")
        ax.set_ylabel("graph replay, us per call")
        ax.legend(fontsize=7)
    fig.suptitle(f"{docs[0]['environment']['device']}, {docs[0]['date'][:10]}: CUDA-graph replay over K, one config "
                 f"per line", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--plot", nargs="+", help="draw these JSON files instead of measuring")
    p.add_argument("--out", default="k-lines.png")
    p.add_argument("problem", nargs="?", choices=("gemm", "dual_gemm"))
    p.add_argument("m", nargs="?", type=int)
    p.add_argument("n", nargs="?", type=int)
    p.add_argument("ks", nargs="?", type=lambda s: [int(k) for k in s.split(",")])
    p.add_argument("--config", help="a candidate of SM90_CANDIDATES by name")
    p.add_argument("--config-k", type=int, help="the chooser's config at this K (default: the largest K)")
    p.add_argument("--reps", type=int, default=12)
    p.add_argument("--json")
    args = p.parse_args()
    if args.plot:
        plot(args.plot, args.out)
        return
    if None in (args.problem, args.m, args.n, args.ks) or len(args.ks) < 2:
        p.error("give PROBLEM M N and at least two K values")
    doc = measure(args)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
