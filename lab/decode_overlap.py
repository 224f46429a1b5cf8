"""Do the decodes of the dual GEMM's sm90 kernel run under its wgmmas, or beside them? (issue 34: what bounds
dual 512x3072x7168)

    python lab/decode_overlap.py [--config NAME] [--set field:v,...] [--rows 104,128] [--tiles-m 5] [--json OUT.json]
    python lab/decode_overlap.py --config NAME [--set ...] --shape 512x3072 [--json OUT.json]
    e.g. python lab/decode_overlap.py --set chunk_k:32,a_slots:7 --rows 96,104,112,120,128

For each S tile height R: the candidate NAME (default wide_104) with smem_rows = R on M = tiles_m x R, N = 3072,
K = 7168, a grid of one wave (5 x 24 = 120 CTAs), so that every R runs the same CTAs with R/104 of the MMA work.
The kernel is timed with timing-only `debug_skip` bits (Sm90Config: wrong results on purpose; only bit 0, the
kernel as it is, is checked against the reference, outputs NaN-poisoned first) in CUDA-graph replay over 6
inputs, all variants interleaved, median of REPS replays:

    as is (0) | no decode (3): the wgmmas, loads, barriers, epilogue | no wgmma (32): both decodes, the consumers'
    kept alive by a sink | S decode only (34): the decoder warps' | skeleton (35): loads, barriers, epilogue

Parts: mma = (3) - (35), R decode = (32) - (34) (the consumers' decode into wgmma registers), S decode = (34) - (35)
(the decoder warps' into shared memory); hidden = 1 - ((0) - (3)) / ((32) - (35)), the share of the decodes'
own time that the kernel as it is hides under its wgmmas (1: fully, 0: they add up). With --shape, one row: the
config as it is on M x N x 7168 (any roles; with swap_ab the S tile holds rows of B1 and B2). With --json, rows
already in that file for the same config are kept (one process per height: a crash of one does not lose the others).
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

VARIANTS = {0: "as is", 3: "no decode", 32: "no wgmma", 34: "S decode only", 35: "skeleton"}
N, K, INPUTS = 3072, 7168, 6


def measure(args) -> dict:
    import torch
    from graph_config_ab import capture, replay_interleaved

    from harness.check import check
    from harness.eval import environment
    from harness.problem import load_problem
    from harness.worker import clone_data
    from problems.dual_gemm import kernel_sm90
    from problems.dual_gemm.config import SM90_CANDIDATES

    prob = load_problem("dual_gemm")
    ref = prob.reference
    sets = dict(s.split(":") for s in args.set.split(",")) if args.set else {}
    base = replace(SM90_CANDIDATES[args.config], **{f: int(v) for f, v in sets.items()})
    if base.swap_ab and not args.shape:
        sys.exit("decode_overlap: heights need the S tile to hold rows of A (no swap_ab); use --shape")
    runs = []
    for rows in [base.smem_rows] if args.shape else args.rows:
        m, n = args.shape if args.shape else (args.tiles_m * rows, N)
        datas = [ref.generate_input(m=m, n=n, k=K, l=1, seed=7 + i, device="cuda") for i in range(INPUTS)]
        copies = [clone_data(d) for d in datas]
        for skip in VARIANTS:
            launches = [kernel_sm90.prepare(d, replace(base, smem_rows=rows, debug_skip=skip)) for d in datas]
            graph = capture(launches)
            if skip == 0:
                for d in datas:
                    ref.output_of(d).fill_(float("nan"))
                graph.replay()
                torch.cuda.synchronize()
                for i, d in enumerate(datas):
                    ok, msg = check(prob, clone_data(copies[i]), ref.output_of(d))
                    if not ok:
                        sys.exit(f"rows {rows}: wrong result on input {i}: {msg}")
            runs.append({"rows": rows, "m": m, "n": n, "skip": skip, "graph": graph, "keep": launches})
        print(f"rows {rows}: captured and checked", flush=True)
    times = replay_interleaved([r["graph"] for r in runs], args.reps, INPUTS)
    table = {}
    for r, t in zip(runs, times):
        table.setdefault(r["rows"], {"m": r["m"], "n": r["n"]})[VARIANTS[r["skip"]]] = statistics.median(t)
    return {"config": repr(base), "n": N, "k": K, "tiles_m": args.tiles_m, "reps": args.reps, "inputs": INPUTS,
            "us": {str(rows): v for rows, v in table.items()},
            "environment": environment("cuda"), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def parts(us: dict) -> dict:
    """The table's derived columns for one tile height (us)."""
    decodes = us["no wgmma"] - us["skeleton"]
    return {"mma": us["no decode"] - us["skeleton"], "R decode": us["no wgmma"] - us["S decode only"],
            "S decode": us["S decode only"] - us["skeleton"],
            "hidden": 1 - (us["as is"] - us["no decode"]) / decodes if decodes > 0 else float("nan")}


def report(doc: dict) -> str:
    lines = [f"{doc['environment']['device']}, {doc['date']}, {doc['environment']['commit']}: dual_gemm "
             f"MxNx{doc['k']}, {doc['config']}, graph replay, median of {doc['reps']}, us",
             "R      M     N  " + "".join(f"{v:>15}" for v in VARIANTS.values())
             + f"{'mma':>8}{'R decode':>10}{'S decode':>10}{'hidden':>8}"]
    for rows, us in doc["us"].items():
        p = parts(us)
        lines.append(f"{rows:>3}{us['m']:>6}{us.get('n', doc['n']):>6}  "
                     + "".join(f"{us[v]:15.2f}" for v in VARIANTS.values())
                     + f"{p['mma']:8.2f}{p['R decode']:10.2f}{p['S decode']:10.2f}{p['hidden']:8.2f}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="wide_104")
    p.add_argument("--set", default="", help="integer fields of the config, e.g. chunk_k:32,a_slots:7")
    p.add_argument("--rows", default="104", type=lambda s: [int(r) for r in s.split(",")])
    p.add_argument("--tiles-m", type=int, default=5)
    p.add_argument("--reps", type=int, default=12)
    p.add_argument("--shape", type=lambda s: tuple(int(v) for v in s.split("x")),
                   help="MxN: one shape, the config as is")
    p.add_argument("--json")
    p.add_argument("--show", help="print the table of a JSON file written earlier")
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


if __name__ == "__main__":
    main()
