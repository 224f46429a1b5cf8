"""What scripts/profile_sm90.py asks Nsight Compute for, and how it reads the answer (no GPU needed here).

Each figure of the profile line has a role and one or more candidate metrics, the first one that this
ncu offers on this GPU is used (`choose`, from `ncu --query-metrics`): metric names differ between ncu
versions and architectures, and a name ncu does not know fails the whole run.

- time: gpu__time_duration.sum, the kernel's duration.
- sm_busy: sm__cycles_active over the elapsed cycles, averaged over the SMs: the share of the kernel's
  time an SM had a CTA resident. A small grid or an idle tail shows here.
- tensor: the tensor pipe's active cycles over the elapsed cycles, averaged over all SMs (so idle SMs
  count as idle tensor pipes). On sm_90, wgmma issues to the GMMA tensor pipe, hence the candidates in
  order: sm__pipe_tensor_op_gmma_cycles_active (Hopper's wgmma), sm__pipe_tensor_cycles_active (newer
  ncu's name for every MMA kind), sm__pipe_tensor_op_hmma_cycles_active (warp-level mma.sync; on
  Hopper it may not count wgmma: the JSON records which one ran).
- dram: DRAM throughput over its peak, elapsed.
- alu_pipe, fma_pipe: issue utilisation of the ALU and FMA pipes over the SMs' active cycles.
- decode share: (instructions issued to the ALU pipe + to the FMA pipes) / all instructions issued.
  In the sm90 kernels that arithmetic is mostly the FP4 -> fp16 decode (LOP3, PRMT, shifts on the ALU
  pipe; HFMA2 / HMUL2, which GH100 issues to its FMA pipes, and IMAD on the FMA pipes), but it also
  holds address arithmetic, the epilogue and the split-K exchange. It is an instruction share, not a
  time share. The cuBLAS peer's figure on the same shape, which decodes nothing, is that other
  arithmetic's share; the difference is the decode's.

A call that launches several kernels (the peers) gets one line: durations summed (ncu runs kernels one at
a time, so kernels that overlap in a real run are counted one after another), percentages weighted by
duration, instruction counts summed.
"""

from __future__ import annotations

import csv
import io
import re

ROLES: dict[str, tuple[str, ...]] = {
    "time": ("gpu__time_duration.sum",),
    "sm_busy": ("sm__cycles_active.avg.pct_of_peak_sustained_elapsed",),
    "tensor": ("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
               "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"),
    "dram": ("dram__throughput.avg.pct_of_peak_sustained_elapsed",
             "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
    "alu_pipe": ("sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",),
    "fma_pipe": ("sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",),
    "alu_inst": ("sm__inst_executed_pipe_alu.sum",),
    "fma_inst": ("sm__inst_executed_pipe_fma.sum",),
    "all_inst": ("sm__inst_executed.sum",),
}
PERCENT_ROLES = ("sm_busy", "tensor", "dram", "alu_pipe", "fma_pipe")
COUNT_ROLES = ("alu_inst", "fma_inst", "all_inst")
# --print-units base gives nanoseconds; the other spellings are what ncu prints without it
TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
_METRIC_NAME = re.compile(r"^[a-z0-9]+__[a-z0-9_]+$")


def offered_metrics(query_output: str) -> set[str]:
    """The base metric names in `ncu --query-metrics` output: the first word of each table row (a
    name like sm__cycles_active; rollups such as .avg.pct_of_peak_sustained_elapsed are not listed)."""
    names = set()
    for line in query_output.splitlines():
        words = line.split()
        if words and _METRIC_NAME.match(words[0]):
            names.add(words[0])
    return names


def base_name(metric: str) -> str:
    return metric.split(".", 1)[0]


def choose(offered: set[str]) -> dict[str, str | None]:
    """Per role, the first candidate whose base name ncu offers, or None. With nothing offered (the
    query printed no table), the first candidate of each role: ncu then names any it rejects."""
    if not offered:
        return {role: candidates[0] for role, candidates in ROLES.items()}
    return {role: next((m for m in candidates if base_name(m) in offered), None) for role, candidates in ROLES.items()}


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None  # "n/a", empty


def parse_raw_csv(text: str) -> list[dict]:
    """Kernels from `ncu --import R --csv --page raw`: a header row (ID, Process ID, ..., Kernel Name,
    ..., Block Size, Grid Size, ..., then one column per metric), a row of units, then one row per
    profiled kernel launch. ncu's own `==PROF==` / `==WARNING==` lines and blank lines are skipped.
    Each kernel: {"id", "name", "block", "grid", "values": {metric: float or None}, "units": {...}}.
    ValueError (one line) when there is no such table."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 2 or "Kernel Name" not in rows[0] or "ID" not in rows[0]:
        first = rows[0][:3] if rows else "nothing"
        raise ValueError(f"ncu raw CSV: expected a header row with ID and Kernel Name, then units, got {first}")
    header, units = rows[0], rows[1]
    if len(units) != len(header):
        raise ValueError(f"ncu raw CSV: the units row has {len(units)} columns, the header {len(header)}")
    metrics = [name for name in header if _METRIC_NAME.match(base_name(name))]
    kernels = []
    for row in rows[2:]:
        cells = dict(zip(header, row))
        if not cells.get("ID", "").strip().isdigit():
            continue
        kernels.append({"id": int(cells["ID"]), "name": cells.get("Kernel Name", ""),
                        "block": cells.get("Block Size", ""), "grid": cells.get("Grid Size", ""),
                        "values": {m: _number(cells[m]) for m in metrics},
                        "units": {m: units[header.index(m)] for m in metrics}})
    return kernels


def kernel_us(kernel: dict) -> float:
    metric = ROLES["time"][0]
    value, unit = kernel["values"].get(metric), kernel["units"].get(metric, "")
    if value is None or unit not in TO_US:
        raise ValueError(f"ncu raw CSV: kernel {kernel['id']} has {metric} = {value!r} in {unit!r}, "
                         f"expected a number in one of {', '.join(TO_US)}")
    return value * TO_US[unit]


def summarize(kernels: list[dict], chosen: dict[str, str | None]) -> dict:
    """One call's figures from its kernels (see the module docstring): time_us, each percentage role
    (None where ncu had no metric for it), decode_share_pct, and the kernel count."""
    if not kernels:
        raise ValueError("ncu profiled no kernel in the call's range")
    times = [kernel_us(k) for k in kernels]
    total = sum(times)
    out: dict[str, float | int | None] = {"time_us": total, "kernels": len(kernels)}
    for role in PERCENT_ROLES:
        values = [k["values"].get(chosen[role]) if chosen[role] else None for k in kernels]
        out[f"{role}_pct"] = (None if any(v is None for v in values) or total <= 0
                              else sum(v * t for v, t in zip(values, times)) / total)
    counts = {}
    for role in COUNT_ROLES:
        values = [k["values"].get(chosen[role]) if chosen[role] else None for k in kernels]
        counts[role] = None if any(v is None for v in values) else sum(values)
    out["decode_share_pct"] = (100 * (counts["alu_inst"] + counts["fma_inst"]) / counts["all_inst"]
                               if None not in counts.values() and counts["all_inst"] else None)
    return out
