"""Committed results for people.

    python -m harness.report results/*.json                 the evaluator's table, per file
    python -m harness.report --plot OUT.png results/*.json  one picture: a panel per problem, each impl's
                                                           time per case as a multiple of the case's
                                                           speed of light (the newest file per problem)
    python -m harness.report --summary                      results/summary.png from the newest file per
                                                           problem in results/ (what `nox -s report` runs)
"""

from __future__ import annotations

import json
import sys

from harness import eval as E
from harness import problem as P


def render(path: str) -> str:
    doc = json.load(open(path))
    problem = P.load_problem(doc["problem"])
    results = {name: {**r, "mode_run": doc["mode"]} for name, r in doc["impls"].items()}
    cases = [c["case"] for c in next(iter(doc["impls"].values()))["cases"]]
    env, ce = doc["environment"], doc.get("ceilings")
    head = f"{doc['problem']} --mode {doc['mode']} on {env['device']} ({doc['date']}, commit {env.get('commit')})"
    if ce:
        head += f"; {E.ceilings_text(ce)}"
    return "\n".join([head, E.table(problem, doc["mode"], results, None, cases), *E.host_legend(results)])


def newest_per_problem(paths: list[str]) -> list[dict]:
    """The newest results document (by its date) of each problem among `paths`, in problem order."""
    newest: dict[str, dict] = {}
    for path in paths:
        doc = json.load(open(path))
        if "impls" not in doc or doc.get("mode") == "test":
            continue
        doc["_path"] = path
        if doc["problem"] not in newest or doc["date"] > newest[doc["problem"]]["date"]:
            newest[doc["problem"]] = doc
    return [newest[p] for p in P.PROBLEM_NAMES if p in newest]


def plot(docs: list[dict], out: str) -> None:
    """A panel per problem: bars of mean / SOL per case and impl (log scale), the 1.0 line drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 2 if len(docs) > 2 else len(docs)
    rows = -(-len(docs) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.0 * rows), squeeze=False)
    for ax in axes.flat[len(docs):]:
        ax.set_visible(False)
    for ax, doc in zip(axes.flat, docs):
        impls = list(doc["impls"])
        cases = [c["case"] for c in doc["impls"][impls[0]]["cases"]]
        width = 0.8 / len(impls)
        for j, name in enumerate(impls):
            xs, ys = [], []
            for i, c in enumerate(doc["impls"][name]["cases"]):
                if c.get("stats") and c.get("sol_us"):
                    xs.append(i + (j - (len(impls) - 1) / 2) * width)
                    ys.append(c["stats"]["mean"] / 1e3 / c["sol_us"])
            bars = ax.bar(xs, ys, width, label=name)
            if len(cases) <= 4:
                ax.bar_label(bars, fmt="%.2g", fontsize=6, padding=1)
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_yscale("log")
        ax.set_xticks(range(len(cases)), [_short(c) for c in cases], fontsize=7)
        env = doc["environment"]
        ax.set_title(f"{doc['problem']} (commit {env.get('commit')}, {doc['date'][:10]})", fontsize=9)
        ax.set_ylabel("time / speed of light")
        ax.legend(fontsize=7)
    devices = sorted({d["environment"]["device"] for d in docs})
    fig.suptitle(f"Mean time per case over this device's speed of light (1.0 line), {', '.join(devices)}; "
                 "the leaderboard's timing loop", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def _short(case: dict) -> str:
    """One line per size: m=128 / n=7168 / k=2048; a group case as g=8 / sum m=1016 / n=4096 ..."""
    parts = []
    for key in ("g", "m", "n", "k", "l"):
        if key not in case:
            continue
        x = case[key]
        if isinstance(x, list | tuple):
            parts.append(f"sum m={sum(x)}" if key == "m" else f"{key}={'/'.join(map(str, sorted(set(x))))}")
        else:
            parts.append(f"{key}={x}")
    return "\n".join(parts)


SUMMARY = "results/summary.png"


def main(argv: list[str] | None = None) -> int:
    import argparse
    import glob
    import os

    p = argparse.ArgumentParser(prog="python -m harness.report", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="*", help="results JSON files")
    p.add_argument("--plot", metavar="OUT.png", help="draw the newest file per problem into OUT.png")
    p.add_argument("--summary", action="store_true", help=f"draw {SUMMARY} from the newest results/ files")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.summary:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        args.paths = args.paths or sorted(glob.glob(os.path.join(root, "results", "*.json")))
        args.plot = args.plot or os.path.join(root, SUMMARY)
    if not args.paths:
        p.print_usage(sys.stderr)
        return 2
    if args.plot:
        docs = newest_per_problem(args.paths)
        plot(docs, args.plot)
        for d in docs:
            print(f"{d['problem']}: {d['_path']}")
        print(f"wrote {args.plot}")
        return 0
    print("\n\n".join(render(p) for p in args.paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
