"""Draw issue 34's table (scripts/peer_table.py) as one picture: per case of every problem given, the CUDA-graph
replay time over the floor of the submission, of an earlier commit's submission run in the same lease (--before)
and of the cuBLAS peer, with the goal's line at 2.0x the floor.

    python lab/plot_peer.py RESULTS.json ... [--before EARLIER.json ...] [--out OUT.png]
"""

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from scripts.peer_table import GOAL_OVER_FLOOR, rows  # noqa: E402

SHORT = {"gemm": "gemm", "dual_gemm": "dual", "group_gemm": "group"}


def label(problem: str, case: str) -> str:
    """gemm 128x7168x2048 / group n 7168, k 2048 (the groups' M lists are long)."""
    f = dict(part.split(": ", 1) for part in case.split("; "))
    if problem == "group_gemm":
        return f"group\nn {f['n']}, k {f['k']}"
    return f"{SHORT[problem]}\n{f['m']}x{f['n']}x{f['k']}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+")
    p.add_argument("--before", nargs="*", default=[])
    p.add_argument("--out", default=None)
    args = p.parse_args()
    befores = {d["problem"]: d for d in (json.loads(Path(b).read_text()) for b in args.before)}
    names, series = [], {"before": [], "after": [], "cuBLAS pre-decoded": []}
    runs = []  # (problem, commit) per results file: several files may come from different commits and days
    for path in args.results:
        doc = json.loads(Path(path).read_text())
        env = doc.get("environment", {})
        runs.append((doc["problem"], env.get("commit")))
        title = f"{doc['ceilings']['device']}, {doc['date'][:10]}"
        for r in rows(doc, path, befores.get(doc["problem"])):
            names.append(label(doc["problem"], r["case"]))
            series["after"].append(r["ours_over_floor"])
            series["before"].append(r["before_graph"] / r["floor_us"] if r.get("before_graph") else None)
            series["cuBLAS pre-decoded"].append(r["peer_graph"] / r["floor_us"])
    fig, ax = plt.subplots(figsize=(12.5, 4.5))
    width = 0.27
    for j, (name, color) in enumerate(zip(series, ["tab:gray", "tab:blue", "tab:orange"])):
        values = series[name]
        xs = [i + j * width for i, v in enumerate(values) if v is not None]
        if xs:  # no --before: no bars and no legend entry for them; the submission's bars are then "ours"
            ax.bar(xs, [v for v in values if v is not None], width, color=color,
                   label=name if args.before or name != "after" else "ours")
    ax.axhline(GOAL_OVER_FLOOR, color="tab:red", lw=1, ls="--", label=f"goal: {GOAL_OVER_FLOOR}x the floor")
    ax.set_xticks([i + width for i in range(len(names))], names, fontsize=7)
    ax.set_ylabel("graph replay / floor (2MNK at 790 TFLOP/s)")
    which = f", commit {runs[0][1]}" if len(runs) == 1 else ": " + ", ".join(f"{p} {c}" for p, c in runs)
    ax.set_title(title + which, fontsize=9)
    ax.legend(fontsize=8, ncol=4, loc="upper left")
    fig.tight_layout()
    out = args.out or str(Path(args.results[0]).with_suffix(".png"))
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
