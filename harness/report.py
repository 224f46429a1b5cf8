"""Committed results for people.

    python -m harness.report results/*.json                 the evaluator's table, per file
    python -m harness.report --problem gemm --device H100 --newest
                                                           the same of the files that match (without FILES:
                                                           results/*.json and the user's results/local/*.json)
    python -m harness.report --compare OLD.json NEW.json    per case and impl the ratio of the means,
                                                           new / old, and its geomean (harness/compare.py)
    python -m harness.report --plot OUT.png results/*.json  one picture of one device's results: a panel per
                                                           problem, each impl's mean time per case as a
                                                           multiple of the case's speed of light (lower is
                                                           better), from the newest file per problem
    python -m harness.report --summary                      the same from results/*.json into
                                                           results/summary.png (what `nox -s report` runs)

A picture shows one device: a speed of light belongs to the device it was measured on, and a CPU run
has none. --device NAME (a part of the name, e.g. H100) picks it; the default is the device of the
newest GPU results. Files of other devices are left out and named on stderr.

Filters: --problem P, --device NAME (a part of one device's name), --newest (the newest file of each
problem and device). Exit status: 0 done; 2 a mistake (a file that is not a results file, no file
matching the filters, an unknown problem, nothing to compare), said in one line.
"""

from __future__ import annotations

import glob
import os
import sys

from harness import eval as E
from harness import problem as P
from harness.arguments import EXIT_USAGE, OneLineParser, Usage, problem_name
from harness.compare import CompareError, compare
from harness.results_doc import ResultsFileError, device_of, read_results

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What a report without FILES reads: the committed results, then the user's own runs
DEFAULT_RESULTS = ("results/*.json", "results/local/*.json")


class ReportError(ValueError):
    """Nothing sensible to draw from the files and options given; the message says why."""


def render(path: str) -> str:
    """The evaluator's table of one results file."""
    return render_doc(read_results(path))


def render_doc(doc: dict) -> str:
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
    return [doc for doc in map(read_results, paths) if doc["mode"] != "test"]


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
    return newest_by(docs, lambda doc: doc["problem"])


def newest_by(docs: list[dict], key) -> list[dict]:
    """The newest document (by its date) per key(doc), in problem order, then by device."""
    newest: dict = {}
    for doc in docs:
        k = key(doc)
        if k not in newest or doc["date"] > newest[k]["date"]:
            newest[k] = doc
    order = {p: i for i, p in enumerate(P.PROBLEM_NAMES)}
    return sorted(newest.values(), key=lambda d: (order.get(d["problem"], len(order)), device_of(d)))


def select(docs: list[dict], problem: str | None, device: str | None, newest: bool) -> list[dict]:
    """The documents the filters keep: of `problem`, of the one device whose name contains `device`,
    the newest of each problem and device. ReportError where none is left."""
    chosen = [d for d in docs if problem is None or d["problem"] == problem]
    if device:
        name = choose_device(chosen, device)
        chosen = [d for d in chosen if device_of(d) == name]
    if newest:
        chosen = newest_by(chosen, lambda d: (d["problem"], device_of(d)))
    if not chosen:
        asked = ", ".join(x for x in (problem and f"problem {problem}", device and f"device {device}") if x)
        raise ReportError(f"no results file{' of ' + asked if asked else ''} among the {len(docs)} read")
    return chosen


def default_results(root: str = REPO) -> list[dict]:
    """The results files a report reads when given none (DEFAULT_RESULTS); other JSON there is skipped."""
    docs = []
    for pattern in DEFAULT_RESULTS:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            try:
                docs.append(read_results(path))
            except ResultsFileError:
                continue
    return docs


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


def build_parser() -> OneLineParser:
    p = OneLineParser(prog="python -m harness.report", description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="*", help="results JSON files (default with a filter: "
                                            f"{' and '.join(DEFAULT_RESULTS)})")
    p.add_argument("--problem", type=problem_name, help="only the files of this problem")
    p.add_argument("--device", metavar="NAME", help="only the files of the one device whose name contains NAME; "
                                                     "with --plot or --summary: the device to draw (default: the "
                                                     "device of the newest GPU results)")
    p.add_argument("--newest", action="store_true", help="only the newest file of each problem and device")
    p.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"),
                   help="per case and impl, NEW's mean time over OLD's, and the geomean of those ratios")
    p.add_argument("--plot", metavar="OUT.png", help="draw the newest file per problem into OUT.png")
    p.add_argument("--summary", action="store_true", help=f"draw {SUMMARY} from the newest results/ files")
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        return run(build_parser().parse_args(sys.argv[1:] if argv is None else argv))
    except (Usage, ReportError, ResultsFileError, CompareError) as e:
        print(f"report: {e}", file=sys.stderr)
        return EXIT_USAGE


def run(args) -> int:
    if args.compare:
        print("\n".join(compare(*map(read_results, args.compare))))
        return 0
    if args.summary:
        args.paths = args.paths or sorted(glob.glob(os.path.join(REPO, "results", "*.json")))
        args.plot = args.plot or os.path.join(REPO, SUMMARY)
    if args.plot:
        if not args.paths:
            raise Usage("--plot needs results files (or --summary: the committed ones)")
        return draw(args.paths, args.plot, args.device)
    filtered = args.problem or args.device or args.newest
    if not args.paths and not filtered:
        raise Usage("no results files given: name some, or filter results/ and results/local/ "
                    "(--problem, --device, --newest); --help for more")
    docs = [read_results(p) for p in args.paths] if args.paths else default_results()
    if filtered:
        docs = select(docs, args.problem, args.device, args.newest)
    print("\n\n".join(render_doc(doc) for doc in docs))
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
