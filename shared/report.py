"""Tables from committed results: `python -m shared.report results/*.json` prints, per file, the same
table the evaluator printed when the numbers were taken (device, ceilings, per-case means)."""

from __future__ import annotations

import json
import sys

from shared import eval as E
from shared import problem as P


def render(path: str) -> str:
    doc = json.load(open(path))
    problem = P.load_problem(doc["problem"])
    results = {name: {**r, "mode_run": doc["mode"]} for name, r in doc["impls"].items()}
    cases = [c["case"] for c in next(iter(doc["impls"].values()))["cases"]]
    env, ce = doc["environment"], doc.get("ceilings")
    head = f"{doc['problem']} --mode {doc['mode']} on {env['device']} ({doc['date']}, commit {env.get('commit')})"
    if ce:
        head += f"; {E.ceilings_text(ce)}"
    return head + "\n" + E.table(problem, doc["mode"], results, None, cases)


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m shared.report RESULTS.json ...", file=sys.stderr)
        return 2
    print("\n\n".join(render(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
