"""Do the decodes of the sm90 GEMM kernels run under their wgmmas, or beside them? (issue 34: what bounds the
shapes that stay: dual 512x3072x7168, gemm 128x4096x7168 and 128x7168x2048)

    python lab/decode_overlap.py [--config NAME] [--set field:v,...] [--rows 104,128] [--tiles-m 5] [--json OUT.json]
    python lab/decode_overlap.py [--problem gemm] --config NAME [--set ...] --shape MxN[xK] [--inputs I] [--json J]
    e.g. python lab/decode_overlap.py --set chunk_k:32,a_slots:7 --rows 96,104,112,120,128

For each S tile height R: the dual GEMM's candidate NAME (default wide_104) with smem_rows = R on M = tiles_m x R,
N = 3072, K = 7168, a grid of one wave (5 x 24 = 120 CTAs), so that every R runs the same CTAs with R/104 of the
MMA work.
The kernel is timed with timing-only `debug_skip` bits (Sm90Config: wrong results on purpose; only bit 0, the
kernel as it is, is checked against the reference, outputs NaN-poisoned first) in CUDA-graph replay over INPUTS
(default 6) inputs, all variants interleaved, median of REPS replays:

    as is (0) | no S decode (1): the kernel without the decoder warps' decode (their hand-offs kept) |
    no R scales (64): the consumers' scales a constant, not loaded and converted | no decode (3): the wgmmas, loads,
    barriers, epilogue | no wgmma (32): both decodes, the consumers' kept alive by a sink | S decode only (34): the
    decoder warps' | skeleton (35): loads, barriers, epilogue

Parts: mma = (3) - (35), R decode = (32) - (34) (the consumers' decode into wgmma registers), S decode = (34) - (35)
(the decoder warps' into shared memory); hidden = 1 - ((0) - (3)) / ((32) - (35)), the share of the decodes'
own time that the kernel as it is hides under its wgmmas (1: fully, 0: they add up); S in call = (0) - (1), what the
S decode adds to the kernel as it is (the most an S side decoded elsewhere could save); R scales = (0) - (64), what the
consumers' scale loads and conversions add (the most scales converted elsewhere could save). With --shape, one row: the
config of PROBLEM (gemm or dual_gemm) as it is on M x N x K (K default 7168; any roles: with swap_ab the S tile
holds rows of B). With --json, rows already in that file for the same config are kept (one process per height: a
crash of one does not lose the others). --plot draws a heights file: the kernel as it is beside what it would take
if the decodes added to the wgmmas and if they hid under them.
"""

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

VARIANTS = {0: "as is", 1: "no S decode", 64: "no R scales", 3: "no decode", 32: "no wgmma", 34: "S decode only",
            35: "skeleton"}
N, K = 3072, 7168


def measure(args) -> dict:
    from graph_config_ab import capture, replay_and_check, replay_interleaved

    from harness.eval import environment
    from harness.problem import load_problem
    from harness.worker import clone_data

    kernel_sm90 = __import__(f"problems.{args.problem}.kernel_sm90", fromlist=["prepare"])
    candidates = __import__(f"problems.{args.problem}.config", fromlist=["SM90_CANDIDATES"]).SM90_CANDIDATES

    prob = load_problem(args.problem)
    ref = prob.reference
    sets = dict(s.split(":") for s in args.set.split(",")) if args.set else {}
    base = replace(candidates[args.config], **{f: int(v) for f, v in sets.items()})
    if not args.shape and (base.swap_ab or args.problem != "dual_gemm"):
        sys.exit("decode_overlap: heights are the dual GEMM's with S tiles of A rows (no swap_ab); else use --shape")
    runs = []
    for rows in [base.smem_rows] if args.shape else args.rows:
        m, n, k = (*args.shape, K)[:3] if args.shape else (args.tiles_m * rows, N, K)
        datas = [ref.generate_input(m=m, n=n, k=k, l=1, seed=7 + i, device="cuda") for i in range(args.inputs)]
        copies = [clone_data(d) for d in datas]
        for skip in VARIANTS:
            launches = [kernel_sm90.prepare(d, replace(base, smem_rows=rows, debug_skip=skip)) for d in datas]
            graph = capture(launches)
            if skip == 0:
                replay_and_check(prob, graph, datas, copies, f"{m}x{n}x{k}, smem_rows {rows}")
            runs.append({"rows": rows, "m": m, "n": n, "k": k, "skip": skip, "graph": graph, "keep": launches})
        print(f"rows {rows}: captured and checked", flush=True)
    times = replay_interleaved([r["graph"] for r in runs], args.reps, args.inputs)
    table = {}
    for r, t in zip(runs, times):
        table.setdefault(r["rows"], {"m": r["m"], "n": r["n"], "k": r["k"]})[VARIANTS[r["skip"]]] = statistics.median(t)
    return {"problem": args.problem, "config": repr(base), "n": N, "k": K, "tiles_m": args.tiles_m, "reps": args.reps,
            "inputs": args.inputs,
            "us": {str(rows): v for rows, v in table.items()},
            "environment": environment("cuda"), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def parts(us: dict) -> dict:
    """The table's derived columns for one tile height (us)."""
    decodes = us["no wgmma"] - us["skeleton"]
    return {"mma": us["no decode"] - us["skeleton"], "R decode": us["no wgmma"] - us["S decode only"],
            "S decode": us["S decode only"] - us["skeleton"],
            "hidden": 1 - (us["as is"] - us["no decode"]) / decodes if decodes > 0 else float("nan"),
            "S in call": us["as is"] - us["no S decode"] if "no S decode" in us else float("nan"),
            "R scales": us["as is"] - us["no R scales"] if "no R scales" in us else float("nan")}


def report(doc: dict) -> str:
    lines = [f"{doc['environment']['device']}, {doc['date']}, {doc['environment']['commit']}: "
             f"{doc.get('problem', 'dual_gemm')}, {doc['config']}, graph replay over {doc['inputs']} inputs, "
             f"median of {doc['reps']}, us",
             "R      M     N      K  " + "".join(f"{v:>15}" for v in VARIANTS.values())
             + f"{'mma':>8}{'R decode':>10}{'S decode':>10}{'hidden':>8}{'S in call':>10}{'R scales':>10}"]
    for rows, us in doc["us"].items():
        p = parts(us)
        lines.append(f"{rows:>3}{us['m']:>6}{us.get('n', doc['n']):>6}{us.get('k', doc['k']):>7}  "
                     + "".join(f"{us.get(v, float('nan')):15.2f}" for v in VARIANTS.values())  # older: no (1), (64)
                     + f"{p['mma']:8.2f}{p['R decode']:10.2f}{p['S decode']:10.2f}{p['hidden']:8.2f}"
                     + f"{p['S in call']:10.2f}{p['R scales']:10.2f}")
    return "\n".join(lines)


def plot(doc: dict, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [int(r) for r in doc["us"]]
    us = list(doc["us"].values())
    added = [u["no decode"] + u["no wgmma"] - u["skeleton"] for u in us]
    hidden = [max(u["no decode"], u["no wgmma"]) for u in us]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(rows, [u["as is"] for u in us], "o-", color="C3", lw=2, label="as is (checked)")
    ax.plot(rows, added, "s--", color="C1", label="no decode + the decodes alone (they add up)")
    ax.plot(rows, hidden, "^--", color="C2", label="the longer of the two (they hide)")
    ax.plot(rows, [u["no decode"] for u in us], ".:", color="C0", label="no decode: wgmmas, loads, epilogue")
    ax.plot(rows, [u["skeleton"] for u in us], ".:", color="grey", label="skeleton: loads, barriers, epilogue")
    ax.set_xlabel("S tile rows R (M = 5 R, 120 CTAs, N = 3072, K = 7168)")
    env = doc["environment"]
    finish_plot(fig, ax, f"dual_gemm sm90 kernel's parts, {env['device']}, {env['commit']}", out)


def finish_plot(fig, ax, title: str, out: str) -> None:
    """A plot of us per call in CUDA-graph replay (lab/tma_stream.py's too): the axis from 0, grid, legend, title,
    saved to `out`."""
    ax.set_ylabel("us per call, CUDA-graph replay")
    ax.set_ylim(0, None)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--problem", default="dual_gemm", choices=["dual_gemm", "gemm"])
    p.add_argument("--config", default="wide_104")
    p.add_argument("--set", default="", help="integer fields of the config, e.g. chunk_k:32,a_slots:7")
    p.add_argument("--rows", default="104", type=lambda s: [int(r) for r in s.split(",")])
    p.add_argument("--tiles-m", type=int, default=5)
    p.add_argument("--reps", type=int, default=12)
    p.add_argument("--shape", type=lambda s: tuple(int(v) for v in s.split("x")),
                   help="MxN or MxNxK: one shape, the config as is")
    p.add_argument("--inputs", type=int, default=6, help="rotating inputs per graph")
    p.add_argument("--json")
    p.add_argument("--show", help="print the table of a JSON file written earlier")
    p.add_argument("--plot", help="with --show: draw it into this PNG")
    args = p.parse_args()
    doc = json.loads(Path(args.show).read_text()) if args.show else measure(args)
    if args.json and not args.show and Path(args.json).exists():
        old = json.loads(Path(args.json).read_text())
        if old["config"] == doc["config"]:
            doc["us"] = {**old["us"], **doc["us"]}
            doc["us"] = dict(sorted(doc["us"].items(), key=lambda kv: int(kv[0])))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    print(report(doc))
    if args.plot:
        plot(doc, args.plot)


if __name__ == "__main__":
    main()
