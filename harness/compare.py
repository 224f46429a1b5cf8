"""Two results files of one problem side by side: per case and impl, the ratio of the mean times
(new / old: below 1 is faster), and per impl the geometric mean of those ratios.

    python -m harness.report --compare OLD.json NEW.json

Cases are matched by their spec (sizes and seed); impls by name. A case or impl in only one file is
left out and a line says how many; files of two problems have nothing to compare (CompareError).
"""

from __future__ import annotations

import math

from harness.problem import describe_case
from harness.results_doc import device_of
from harness.text_table import plain_table


class CompareError(ValueError):
    """Nothing to compare; the message is one line saying why."""


def _key(case: dict) -> str:
    return describe_case(case)


def _means_ns(doc: dict, impl: str) -> dict[str, float | None]:
    """{case spec: mean ns, or None where the case failed or was not timed} of one impl."""
    return {_key(c["case"]): (c.get("stats") or {}).get("mean") for c in doc["impls"][impl]["cases"]}


def compare(old: dict, new: dict) -> list[str]:
    """The comparison's lines: a head naming both files, notes on what does not match, a table of
    case, impl, old us, new us, new/old, and a geomean row per impl."""
    if old["problem"] != new["problem"]:
        raise CompareError(f"{old['_path']} is {old['problem']}, {new['_path']} is {new['problem']}: "
                           "nothing to compare")
    lines = [f"{old['problem']}: old {_describe(old)}", f"{' ' * len(old['problem'])}  new {_describe(new)}"]
    if device_of(old) != device_of(new):
        lines.append(f"note: the files come from two devices ({device_of(old)}; {device_of(new)}): "
                     "the ratios compare the devices too")
    impls = [name for name in old["impls"] if name in new["impls"]]
    alone = sorted(set(old["impls"]) ^ set(new["impls"]))
    if alone:
        lines.append(f"note: impls in one file only, left out: {', '.join(alone)}")
    if not impls:
        raise CompareError(f"no impl in both files (old: {', '.join(old['impls'])}; new: {', '.join(new['impls'])})")
    rows, ratios = [], {name: [] for name in impls}
    only_old = only_new = 0
    for name in impls:
        before, after = _means_ns(old, name), _means_ns(new, name)
        only_old, only_new = max(only_old, len(before.keys() - after)), max(only_new, len(after.keys() - before))
        for spec in (s for s in before if s in after):
            a, b = before[spec], after[spec]
            ratio = b / a if a and b else None
            if ratio is not None:
                ratios[name].append(ratio)
            rows.append([spec, name, _us(a), _us(b), f"{ratio:.3f}" if ratio is not None else "-"])
    if not rows:
        raise CompareError("no case in both files: they ran different cases (compare files of the same "
                           "--mode and --data, both --full or neither)")
    if only_old or only_new:
        lines.append(f"note: the files ran different cases; left out: {only_old} case(s) of old only, "
                     f"{only_new} of new only")
    for name in impls:
        xs = ratios[name]
        geo = f"{math.exp(sum(map(math.log, xs)) / len(xs)):.3f}" if xs else "-"
        rows.append([f"geomean of ratios ({len(xs)} cases)", name, "-", "-", geo])
    lines += plain_table(["case", "impl", "old mean us", "new mean us", "new/old"], rows)
    return lines


def _describe(doc: dict) -> str:
    env = doc["environment"]
    return f"{doc['_path']} ({env['device']}, commit {env.get('commit')}, {doc['date']}, --mode {doc['mode']})"


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.2f}"
