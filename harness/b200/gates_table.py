"""The gates table, results/b200/gates.json: what a B200 run's variants stage found per benchmark case, which
shared/sm100_variants.gate serves and `nox -s package` bakes into the bundles. Written only from a B200."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GATES_PATH = ROOT / "results" / "b200" / "gates.json"


def device_record() -> dict:
    """The device and versions a table is measured with (harness.eval's environment record)."""
    import torch

    from harness.eval import environment

    env = environment("cuda")
    cap = list(torch.cuda.get_device_capability(0))
    return {"device": env.get("device"), "capability": cap,
            "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
            "versions": {k: env.get(k) for k in ("python", "torch", "nvidia-cutlass-dsl", "cuda")},
            "commit": env.get("commit"), "dirty": env.get("dirty")}


class NotB200(Exception):
    """A gates table may only come from a B200 (compute capability 10.0)."""


def write_gates(problems: dict, record: dict, path: Path | None = None, date: str | None = None) -> dict:
    """Write (or update, problem by problem) the gates table. `problems`: {problem: {"cases": [...]}} from
    variant_runs; `record`: device_record() of the device that ran them. Refuses any device but a B200."""
    from shared.sm100_variants import SCHEMA

    if list(record.get("capability") or []) != [10, 0]:
        raise NotB200(f"the gates table is written only from a B200 (compute capability 10.0); this run's device "
                      f"is {record.get('device')!r} with capability {record.get('capability')!r}")
    path = path or GATES_PATH
    date = date or dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    old = json.loads(path.read_text()) if path.is_file() else {}
    if old.get("sm_count") not in (None, record["sm_count"]) or old.get("schema") not in (None, SCHEMA):
        old = {}  # another device or schema: its cases are not comparable with these
    table = {"schema": SCHEMA, **{k: record.get(k) for k in ("device", "capability", "sm_count", "versions",
                                                              "commit", "dirty")}, "date": date,
             "problems": dict(old.get("problems") or {})}
    for problem, part in problems.items():
        table["problems"][problem] = {"commit": record.get("commit"), "date": date, "cases": part["cases"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table, indent=1, sort_keys=True, default=str) + "\n")
    return table
