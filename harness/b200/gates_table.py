"""The gates table, results/b200/gates.json: what a B200 run's variants stage found per benchmark case, which
shared/sm100_variants.gate serves and `nox -s package` bakes into the bundles. Written only from a B200,
keyed by what was measured: the SM count, the CuTe DSL version, per problem the code fingerprint and per
variant and case the kernel fingerprint (schema in shared/sm100_variants.py)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from shared.devices import B200_SM_COUNT

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
    """Write (or update, problem by problem) the gates table. `problems`: {problem: variant_runs(...)} (its
    code fingerprint and cases are kept); `record`: device_record() of the device that ran them. Refuses
    any device but a B200. Another SM count, schema or CuTe DSL than the table's starts a new table: their
    verdicts do not mix."""
    from shared.sm100_variants import SCHEMA

    if list(record.get("capability") or []) != [10, 0]:
        raise NotB200(f"the gates table is written only from a B200 (compute capability 10.0); this run's device "
                      f"is {record.get('device')!r} with capability {record.get('capability')!r}")
    path = path or GATES_PATH
    date = date or dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    dsl = (record.get("versions") or {}).get("nvidia-cutlass-dsl")
    old = json.loads(path.read_text()) if path.is_file() else {}
    if (old.get("sm_count"), old.get("schema"), old.get("dsl")) != (record["sm_count"], SCHEMA, dsl):
        old = {}  # another device, schema or compiler: its cases are not comparable with these
    table = {"schema": SCHEMA, **{k: record.get(k) for k in ("device", "capability", "sm_count", "versions",
                                                              "commit", "dirty")}, "dsl": dsl, "date": date,
             "problems": dict(old.get("problems") or {})}
    for problem, part in problems.items():
        table["problems"][problem] = {"commit": record.get("commit"), "date": date, "code": part["code"],
                                      "cases": part["cases"]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(table, indent=1, sort_keys=True, default=str) + "\n")
    return table


def key_lines(dsl: str, where: str, sm_count: int = B200_SM_COUNT) -> list[str]:
    """What a table measured from this tree would be keyed to: the CuTe DSL, the SM count, each problem's
    code fingerprint and, per benchmark case, each applicable variant's kernel fingerprint."""
    from harness.b200 import PROBLEMS
    from harness.b200.model import benchmark_cases
    from harness.b200.variants import kernels_of
    from shared.code_fingerprint import code_fingerprint
    from shared.sm100_variants import case_key, case_shape

    lines = ["gates table keys (what this run's verdicts are keyed to; `nox -s package` refuses any other):",
             f"  CuTe DSL {dsl} ({where}), {sm_count} SMs"]
    for problem in PROBLEMS:
        code = code_fingerprint(problem)
        lines.append(f"  {problem:<10} code {code}")
        for case in benchmark_cases(problem):
            kernels = "  ".join(f"{name} {fp}" for name, fp in kernels_of(problem, case, code, sm_count).items())
            key = case_key(case_shape(problem, case))
            groups = key.split(";")
            shown = key if len(groups) == 1 else f"{groups[0]};... ({len(groups)} groups)"
            lines.append(f"    {shown:<34} {kernels}")
    return lines
