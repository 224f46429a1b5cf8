"""Reading a results JSON file (the evaluator's, or submit's from popcorn-cli): a file that is not one
is a one-line ResultsFileError, and every case's timing statistics come out in nanoseconds whatever
unit the file declares.

Files written before the top-level "units" map have their per-case "stats" in ns; a file with
"units": {"stats": UNIT} has them in UNIT (ns, us, ms or s).
"""

from __future__ import annotations

import json
from pathlib import Path

NS_PER = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
REQUIRED = ("problem", "mode", "date", "environment", "impls")  # what the report and the comparison read


class ResultsFileError(ValueError):
    """The file cannot be read as results; the message is one line naming the file and why."""


def read_results(path: str | Path) -> dict:
    """The results document at `path`, with its path under "_path"."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ResultsFileError(f"{path}: a directory, not a results JSON file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsFileError(f"{path}: cannot be read ({type(e).__name__}: {e})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsFileError(f"{path}: not a results JSON file (not JSON: {e.msg} at line {e.lineno})") from None
    missing = [k for k in REQUIRED if not isinstance(doc, dict) or k not in doc]
    if missing:
        raise ResultsFileError(f"{path}: not a results JSON file of the evaluator (no {', '.join(missing)})")
    # the unit is the declaration's first word ("ns", or "ns per call (runs: a count)" as the evaluator of
    # 2026-11-26 wrote it)
    declared = str((doc.get("units") or {}).get("stats", "ns"))
    unit = declared.split()[0] if declared.split() else declared
    if unit not in NS_PER:
        raise ResultsFileError(f"{path}: stats in unit {unit!r}; expected one of {', '.join(NS_PER)}")
    if unit != "ns":
        doc = _stats_in_ns(doc, NS_PER[unit])
    return {**doc, "_path": str(path)}


def _stats_in_ns(doc: dict, scale: float) -> dict:
    """The document with every case's stats (all but the count of runs) multiplied by `scale`."""
    def case_in_ns(case: dict) -> dict:
        stats = case.get("stats")
        if not stats:
            return case
        return {**case, "stats": {k: v * scale if k != "runs" and isinstance(v, int | float) else v
                                  for k, v in stats.items()}}

    impls = {name: {**r, "cases": [case_in_ns(c) for c in r["cases"]]} for name, r in doc["impls"].items()}
    return {**doc, "impls": impls, "units": {**doc["units"], "stats": "ns"}}


def device_of(doc: dict) -> str:
    return doc["environment"]["device"]
