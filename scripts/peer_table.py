"""The submission against the cuBLAS peer, per case, from an evaluator results JSON:

    python scripts/peer_table.py RESULTS.json ... [--before EARLIER.json ...]

RESULTS.json is one `python -m harness.eval P --mode benchmark --graph --impl submission cublas-predecoded
[bf16-predecoded] [an earlier packaged file] --json ...` run (scripts/device_bench.sh peer). Per case:
the submission's mean in the leaderboard's loop and its CUDA-graph replay time (rotating inputs, no
flush), the peer's graph time, ours / peer, the floor, ours / floor, and whether the case meets issue 34's
goal (faster than the peer and within 2.0x of the floor, both in graph replay). The floor is the case's
FLOPs (2·M·N·K, twice that for dual_gemm, summed over groups) at issue 34's fixed 790 TFLOP/s, not at the
bf16 rate the run measured (the evaluator's `ceilings`, shown beside it): that rate moves between runs
(741-792 on the lent H100), and a verdict must not turn "met" because a run measured a slower GPU. Other
impls of the run (bf16-predecoded, an earlier packaged file: a bundle is never graph-captured, so only its
mean) get a column each; --before adds an earlier run's submission of the same problem (its mean and
graph time), e.g. the previous commit's tree run in the same lease.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from harness import problem as P  # noqa: E402
from harness.timing import geometric_mean  # noqa: E402

OURS, PEER = "submission", "cublas-predecoded"
GOAL_OVER_FLOOR = 2.0  # issue 34: within 2.0x of the floor in graph replay
FLOOR_FLOPS = 790e12  # issue 34: the floor's FLOP rate, fixed


def _us(ns) -> float | None:
    return None if ns is None else ns / 1e3


def _cases(doc: dict, impl: str, path: str, count: int | None = None) -> list[dict]:
    if impl not in doc["impls"]:
        raise ValueError(f"{path}: no impl {impl!r} in this run (has: {', '.join(doc['impls'])})")
    cases = doc["impls"][impl]["cases"]
    if count is not None and len(cases) != count:
        raise ValueError(f"{path}: {impl} has {len(cases)} cases, expected {count} (the submission's)")
    return cases


def _mean_us(case: dict) -> float | None:
    return _us(case["stats"]["mean"]) if case.get("stats") else None


def case_text(case: dict) -> str:
    """The case without its seed; a list whose groups all share one value is that value (g: 8; n: 4096)."""
    def value(v):
        return v[0] if isinstance(v, list | tuple) and len(set(v)) == 1 else v

    return "; ".join(f"{k}: {value(v)}" for k, v in case.items() if k != "seed")


def _other_column(name: str, cases: list[dict]) -> tuple[str, list[float | None]]:
    """An impl other than ours and the peer: its graph times where the run captured it, else its means
    (a packaged file is never captured); titled by its name (a file by its last two path parts)."""
    short = "/".join(Path(name).parts[-2:]) if name.endswith(".py") else name
    if any(c.get("graph_ns") for c in cases):
        return f"{short} graph", [_us(c.get("graph_ns")) for c in cases]
    return f"{short} mean", [_mean_us(c) for c in cases]


def rows(doc: dict, path: str = "results", before: dict | None = None) -> list[dict]:
    """One dict per case: case text, ours_mean, ours_graph, peer_graph, ours_over_peer, floor_us,
    ours_over_floor, goal (True / False, None where a figure is missing), `others` (column title -> us,
    _other_column) and, with `before`, before_mean and before_graph. ValueError (one line) for a run that
    lacks the submission, the peer or its ceilings."""
    if not doc.get("ceilings"):
        raise ValueError(f"{path}: no ceilings (a CPU run? the floor needs the bf16 rate measured on the GPU)")
    reference = P.load_problem(doc["problem"]).reference
    ours = _cases(doc, OURS, path)
    peer = _cases(doc, PEER, path, len(ours))
    others = dict(_other_column(name, _cases(doc, name, path, len(ours)))
                  for name in doc["impls"] if name not in (OURS, PEER))
    earlier = _cases(before, OURS, "--before", len(ours)) if before else None
    out = []
    for i, (o, p) in enumerate(zip(ours, peer)):
        floor = reference.cost(**o["case"])[2] / FLOOR_FLOPS * 1e6
        og, pg = _us(o.get("graph_ns")), _us(p.get("graph_ns"))
        row = {"case": case_text(o["case"]),
               "ours_mean": _mean_us(o), "ours_graph": og, "peer_graph": pg,
               "ours_over_peer": og / pg if og and pg else None, "floor_us": floor,
               "ours_over_floor": og / floor if og else None,
               "others": {title: values[i] for title, values in others.items()}}
        row["goal"] = (None if row["ours_over_peer"] is None
                       else row["ours_over_peer"] < 1 and row["ours_over_floor"] <= GOAL_OVER_FLOOR)
        if earlier:
            row["before_mean"], row["before_graph"] = _mean_us(earlier[i]), _us(earlier[i].get("graph_ns"))
        out.append(row)
    return out


def _fmt(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "met" if value else "no"
    return f"{value:.{digits}f}"


def render(doc: dict, path: str = "results", before: dict | None = None) -> str:
    table = rows(doc, path, before)
    env, ce = doc.get("environment", {}), doc["ceilings"]
    lines = [f"{doc['problem']} on {ce['device']}, commit {env.get('commit')}, floor at {FLOOR_FLOPS / 1e12:.0f} "
             f"TFLOP/s (issue 34; bf16 measured in the run: {ce['flops'] / 1e12:.0f}); us; ours = submission, "
             f"peer = cublas-predecoded"]
    columns = [("ours mean", "ours_mean", 1), ("ours graph", "ours_graph", 1), ("peer graph", "peer_graph", 1),
               ("ours/peer", "ours_over_peer", 2), ("floor", "floor_us", 1), ("ours/floor", "ours_over_floor", 2)]
    if before:
        columns += [("before mean", "before_mean", 1), ("before graph", "before_graph", 1)]
    extra = list(table[0]["others"]) if table else []
    width = max([len("case")] + [len(r["case"]) for r in table])
    titles = [t for t, _, _ in columns] + extra + ["goal"]
    lines.append(f"{'case':<{width}}  " + "  ".join(titles))
    for r in table:
        cells = [f"{_fmt(r[key], d):>{len(t)}}" for t, key, d in columns]
        cells += [f"{_fmt(r['others'][name]):>{len(t)}}" for name, t in zip(extra, titles[len(columns):])]
        lines.append(f"{r['case']:<{width}}  " + "  ".join(cells + [_fmt(r["goal"])]))
    for label, key in (("ours/peer", "ours_over_peer"), ("ours/floor", "ours_over_floor")):
        values = [r[key] for r in table]
        if values and None not in values:
            lines.append(f"geomean {label}: {geometric_mean(values):.2f}")
    met = [r["goal"] for r in table]
    lines.append(f"goal (faster than the peer and within {GOAL_OVER_FLOOR}x of the floor, graph replay): "
                 f"{sum(g is True for g in met)} of {len(met)} cases")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python scripts/peer_table.py", description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", help="evaluator results JSON, one per problem")
    p.add_argument("--before", nargs="*", default=[], help="earlier runs' results JSON, matched by problem")
    args = p.parse_args(argv)
    path = None
    try:
        befores = {}
        for path in args.before:
            doc = json.loads(Path(path).read_text())
            befores[doc["problem"]] = doc
        for path in args.results:
            doc = json.loads(Path(path).read_text())
            print(render(doc, path, befores.get(doc["problem"])))
    except (OSError, ValueError) as e:
        print(f"peer_table: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"peer_table: {path}: not an evaluator results JSON (no {e})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
