"""Committed results for people.

    python -m harness.report results/*.json                 the evaluator's table, per file
    python -m harness.report --plot OUT.png results/*.json  one picture of one device's results: a panel per
                                                           problem, each impl's mean time per case as a
                                                           multiple of the case's speed of light (lower is
                                                           better), from the newest file per problem
    python -m harness.report --summary                      the same from results/*.json into
                                                           results/summary.png (what `nox -s report` runs)

A picture shows one device: a speed of light belongs to the device it was measured on, and a CPU run
has none. --device NAME (a part of the name, e.g. H100) picks it; the default is the device of the
newest GPU results. Files of other devices are left out and named on stderr.
"""

from __future__ import annotations

import json
import sys

from harness import eval as E
from harness import problem as P


class ReportError(ValueError):
    """Nothing sensible to draw from the files and options given; the message says why."""


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


def timed_results(paths: list[str]) -> list[dict]:
    """The timed (benchmark or leaderboard mode) results documents among `paths`, each with its path."""
    docs = []
    for path in paths:
        doc = json.load(open(path))
        if "impls" in doc and doc.get("mode") != "test":
            docs.append({**doc, "_path": path})
    return docs


def device_of(doc: dict) -> str:
    return doc["environment"]["device"]


def is_gpu_run(doc: dict) -> bool:
    """The evaluator names a CPU device `cpu (ARCH, N threads)`; anything else is a GPU's name."""
    return not device_of(doc).startswith("cpu")


def has_bars(doc: dict) -> bool:
    """Whether any case of any impl has both a mean and a speed of light (a CPU run has no SOL)."""
    return any(c.get("stats") and c.get("sol_us") for r in doc["impls"].values() for c in r["cases"])


def choose_device(docs: list[dict], wanted: str | None = None) -> str:
    """The one device to draw: the one named `wanted`, or else the one whose name contains it (case
    ignored); by default the device of the newest GPU results."""
    devices = sorted({device_of(d) for d in docs})
    if wanted:
        matches = [d for d in devices if wanted.lower() == d.lower()] or [
            d for d in devices if wanted.lower() in d.lower()]
        if len(matches) != 1:
            raise ReportError(f"--device {wanted!r} matches {len(matches)} of the results' devices "
                              f"({'; '.join(devices) or 'none'}): name exactly one")
        return matches[0]
    gpu_docs = [d for d in docs if is_gpu_run(d)]
    if not gpu_docs:
        raise ReportError(f"no GPU results among the files (devices: {'; '.join(devices) or 'none'}); "
                          "a CPU run has no speed of light to draw against")
    return device_of(max(gpu_docs, key=lambda d: d["date"]))


def newest_per_problem(docs: list[dict]) -> list[dict]:
    """The newest document (by its date) of each problem among `docs`, in problem order."""
    newest: dict[str, dict] = {}
    for doc in docs:
        if doc["problem"] not in newest or doc["date"] > newest[doc["problem"]]["date"]:
            newest[doc["problem"]] = doc
    return [newest[p] for p in P.PROBLEM_NAMES if p in newest]


def summary_docs(docs: list[dict], device: str) -> list[dict]:
    """What the picture of `device` shows: per problem, the newest of that device's documents that
    has something to draw (so no panel is empty)."""
    chosen = newest_per_problem([d for d in docs if device_of(d) == device and has_bars(d)])
    if not chosen:
        raise ReportError(f"no results of {device} with a speed of light: nothing to draw")
    return chosen


# Tick values per decade, coarse to fine; the axis takes the coarsest that gives at least 4 ticks.
TICK_MANTISSAS = ((1,), (1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9))


def ratio_ticks(low: float, high: float) -> list[float]:
    """Round values between `low` and `high` for a log axis of time / SOL, to be labelled 1x, 1.5x, 10x."""
    import math

    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    for mantissas in TICK_MANTISSAS:
        ticks = [round(m * 10.0**e, 6) for e in decades for m in mantissas if low <= m * 10.0**e <= high]
        if len(ticks) >= 4:
            break
    return ticks


def impl_label(name: str, problem: str) -> str:
    """One legend entry per impl across panels: dist/gemm/submission.py -> dist/<problem>/submission.py."""
    return name.replace(f"/{problem}/", "/<problem>/")


def bars_of(doc: dict, name: str) -> tuple[list[int], list[float]]:
    """(case index, mean / SOL) of each case of impl `name` that has both figures."""
    drawn = [(i, c) for i, c in enumerate(doc["impls"][name]["cases"]) if c.get("stats") and c.get("sol_us")]
    return [i for i, _ in drawn], [c["stats"]["mean"] / 1e3 / c["sol_us"] for _, c in drawn]


def figure(docs: list[dict]):
    """A panel per document: bars of mean / SOL per case and impl on a log axis with plain labels
    (1x, 2x, 5x), the 1x line drawn, one colour per impl in every panel, one legend above the panels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    labels = list(dict.fromkeys(impl_label(n, d["problem"]) for d in docs for n in d["impls"]))
    colour = {label: f"C{i % 10}" for i, label in enumerate(labels)}
    cols = 2 if len(docs) > 2 else len(docs)
    rows = -(-len(docs) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, 4.0 * rows + 0.6), squeeze=False)
    for ax in axes.flat[len(docs):]:
        ax.set_visible(False)
    for ax, doc in zip(axes.flat, docs):
        impls = list(doc["impls"])
        cases = [c["case"] for c in doc["impls"][impls[0]]["cases"]]
        width = 0.8 / len(impls)
        heights = []
        for j, name in enumerate(impls):
            xs, ys = bars_of(doc, name)
            label = impl_label(name, doc["problem"])
            offset = (j - (len(impls) - 1) / 2) * width
            bars = ax.bar([x + offset for x in xs], ys, width, label=label, color=colour[label])
            heights += ys
            if len(cases) <= 4:
                ax.bar_label(bars, fmt="%.2g", fontsize=6, padding=1)
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_yscale("log")
        low, high = min(heights + [1.0]) / 1.15, max(heights + [1.0]) * 1.35  # room for the bar labels
        ax.set_ylim(low, high)
        ax.yaxis.set_major_locator(FixedLocator(ratio_ticks(low, high)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xticks(range(len(cases)), [_short(c) for c in cases], fontsize=7)
        env = doc["environment"]
        ax.set_title(f"{doc['problem']} (commit {env.get('commit')}, {doc['date'][:10]})", fontsize=9)
        ax.set_ylabel("mean time / speed of light\n(lower is better)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[label]) for label in labels]
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.36 / fig.get_figheight()),
               ncol=len(labels), fontsize=8, frameon=False)
    fig.suptitle(f"{device_of(docs[0])}: mean time per case over its speed of light (1x line), lower is better; "
                 "the leaderboard's timing loop", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / fig.get_figheight()))
    return fig


def plot(docs: list[dict], out: str) -> None:
    """Draw `docs` (one device's) into the PNG file `out`."""
    import matplotlib.pyplot as plt

    if len({device_of(d) for d in docs}) != 1:
        raise ReportError(f"one device per picture, got {'; '.join(sorted({device_of(d) for d in docs}))}")
    fig = figure(docs)
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
    p.add_argument("--device", metavar="NAME", help="with --plot or --summary: the device to draw, a part of its "
                                                     "name (default: the device of the newest GPU results)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.summary:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        args.paths = args.paths or sorted(glob.glob(os.path.join(root, "results", "*.json")))
        args.plot = args.plot or os.path.join(root, SUMMARY)
    if not args.paths:
        p.print_usage(sys.stderr)
        return 2
    if args.plot:
        try:
            return draw(args.paths, args.plot, args.device)
        except ReportError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    print("\n\n".join(render(p) for p in args.paths))
    return 0


def draw(paths: list[str], out: str, wanted_device: str | None) -> int:
    """--plot / --summary: one device's newest results per problem into `out`; says which files it
    drew and which devices it left out."""
    docs = timed_results(paths)
    device = choose_device(docs, wanted_device)
    chosen = summary_docs(docs, device)
    plot(chosen, out)
    print(f"device: {device}")
    for d in chosen:
        print(f"{d['problem']}: {d['_path']}")
    others = sorted({device_of(d) for d in docs} - {device})
    if others:
        n = sum(device_of(d) != device for d in docs)
        print(f"left out {n} file(s) of other devices ({'; '.join(others)}); --device picks one", file=sys.stderr)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
