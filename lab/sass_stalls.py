"""Where do an sm90 kernel's warps stall, instruction by instruction, and in which role?

    ncu --section SourceCounters --section WarpStateStats --warp-sampling-interval 1 -k regex:kernel_cutlass \\
        --launch-skip 2 --launch-count 1 -o REP python lab/run_case.py gemm m=128 n=4096 k=7168
    ncu --import REP.ncu-rep --page source --csv --print-source sass > SASS.csv
    python lab/sass_stalls.py SASS.csv [SASS.csv ...] [--json OUT]

Nsight Compute's source counters sample each warp's state every 2^(5 + n) cycles (n = 1 above) and charge the
sample to the instruction the warp is at, with the reason it is not issuing (or `selected`: it issued). This splits
one kernel's samples by role, found from the code's shape rather than from addresses typed in:
  consumers  the loop (a backward branch and the code from its target) holding the most HGMMA instructions:
             the K loop of R decode and wgmma;
  decoders   the loop holding the most F2FP conversions and no HGMMA: the S decode into shared memory;
  rest       prologue, producer, the split's hand-over, epilogue.
Per role: its share of all samples, the stall reasons, and the instruction classes the samples sit at (decode
arithmetic: LOP3, shifts (IMAD.SHL too), PRMT, F2FP, HMUL2; wgmma: HGMMA and WARPGROUP; waits: SYNCS, branches,
NANOSLEEP; shared memory; uniform-datapath ops; other), and the warp instructions each loop iteration executes per
class.

ncu's per-instruction columns leave out one reason that its kernel-wide sampling counters have,
`warpgroup_arrive`: a warp held at a wgmma until the other warps of its warpgroup reach it. The samples no
listed column accounts for are reported as `unlisted`, split by whether they sit at an HGMMA or elsewhere;
where the kernel-wide counters are beside the source file (NAME-raw.csv for NAME-sass.csv, from `ncu --import
REP.ncu-rep --page raw --csv`), their shares are printed too, to check that the unlisted samples at HGMMA are
that reason (on the H100 runs in results/profile/source/ they match it to 0.1 % of all samples).
Files may be gzipped (NAME-sass.csv.gz).
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import json
import re
import sys
from pathlib import Path

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
DECODE_OPS = {"LOP3", "SHF", "PRMT", "F2FP", "HMUL2", "HFMA2"}
WAIT_OPS = {"SYNCS", "BRA", "NANOSLEEP", "BAR", "WARPSYNC"}
SMEM_OPS = {"LDS", "STS", "LDSM", "STSM"}


def number(text: str) -> float:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(source: str) -> tuple[str, str]:
    """(base opcode, whole opcode) of a SASS line, its predicate skipped: ('IMAD', 'IMAD.SHL.U32')."""
    words = source.split()
    whole = words[1] if words and words[0].startswith("@") else (words[0] if words else "")
    return whole.split(".")[0], whole


def instruction_class(source: str) -> str:
    base, whole = opcode(source)
    if base in DECODE_OPS or whole.startswith("IMAD.SHL"):
        return "decode"
    if base in ("HGMMA", "WARPGROUP"):
        return "wgmma"
    if base in WAIT_OPS:
        return "waits"
    if base in SMEM_OPS:
        return "shared memory"
    if base.startswith("U"):
        return "uniform"
    return "other"


def read_csv(path: Path) -> list[list[str]]:
    with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as f:
        return list(csv.reader(f))


def read_rows(path: Path) -> list[dict]:
    """The instructions of the (first) kernel in an `ncu --page source --csv --print-source sass` file."""
    lines = read_csv(path)
    header_at = next(i for i, row in enumerate(lines) if row and row[0] == "Address")
    header = lines[header_at]
    rows = []
    for raw in lines[header_at + 1:]:
        if not raw or not raw[0].startswith("0x"):
            break  # the next kernel's block, if any
        rows.append(dict(zip(header, raw)))
    return rows


def loops(rows: list[dict]) -> list[tuple[int, int]]:
    """(first, last) row index of every loop: a branch to an address at or before its own."""
    index = {int(r["Address"], 16): i for i, r in enumerate(rows)}
    found = []
    for i, r in enumerate(rows):
        m = re.search(r"\bBRA\s+(0x[0-9a-f]+)", r["Source"])
        if m and number(r[EXECUTED]) > 0:
            target = index.get(int(m.group(1), 16))
            if target is not None and target <= i:
                found.append((target, i))
    return found


def find_roles(rows: list[dict]) -> dict[str, tuple[int, int] | None]:
    def count(span, op):
        return sum(opcode(rows[i]["Source"])[0] == op for i in range(span[0], span[1] + 1))

    spans = loops(rows)
    mma = [s for s in spans if count(s, "HGMMA")]
    # the most HGMMAs, then the shortest: the K loop itself, not a loop around it
    consumers = max(mma, key=lambda s: (count(s, "HGMMA"), s[0] - s[1]), default=None)
    dec = [s for s in spans if count(s, "F2FP") and not count(s, "HGMMA")]
    decoders = max(dec, key=lambda s: (count(s, "F2FP"), s[0] - s[1]), default=None)
    return {"consumers": consumers, "decoders": decoders}


def summarize(rows: list[dict], members: list[int], total: float, loop: bool = True) -> dict:
    """The samples of the rows `members`; for a loop (its first row the loop head) also its iterations and the
    warp instructions each one executes per class."""
    stall_cols = [c for c in rows[0] if c.startswith("stall_") and "Not Issued" not in c]
    reasons, classes, executed = collections.Counter(), collections.Counter(), collections.Counter()
    samples = 0.0
    for i in members:
        r = rows[i]
        s = number(r[SAMPLES])
        samples += s
        listed = 0.0
        for c in stall_cols:
            reasons[c[len("stall_"):]] += number(r[c])
            listed += number(r[c])
        at_mma = opcode(r["Source"])[0] == "HGMMA"
        reasons["unlisted at HGMMA" if at_mma else "unlisted elsewhere"] += s - listed
        classes[instruction_class(r["Source"])] += s
        executed[instruction_class(r["Source"])] += number(r[EXECUTED])

    def pct(c):
        return {k: round(100 * v / samples, 1) for k, v in c.most_common() if v > 0} if samples else {}

    out = {"samples": samples, "share_pct": round(100 * samples / total, 1) if total else 0.0,
           "reasons_pct": pct(reasons), "at_pct": pct(classes)}
    if loop:
        iterations = number(rows[members[0]][EXECUTED]) if members else 0.0
        out["iterations"] = iterations
        out["per_iteration"] = ({k: round(v / iterations, 1) for k, v in executed.most_common() if v}
                                if iterations else {})
    return out


def kernel_wide(path: Path) -> dict | None:
    """Shares (% of all samples) of ncu's kernel-wide sampling counters, from the raw page beside `path`."""
    raw = path.with_name(path.name.replace("-sass.csv", "-raw.csv"))
    if raw == path or not raw.exists():
        return None
    header, *_, values = read_csv(raw)
    got = {h.split("stalled_", 1)[1]: number(v) for h, v in zip(header, values)
           if "pcsamp_warps_issue_stalled_" in h and not h.endswith("_not_issued")}
    total = sum(got.values())
    return {k: round(100 * v / total, 1) for k, v in sorted(got.items(), key=lambda kv: -kv[1]) if v} if total else None


def analyse(path: Path) -> dict:
    rows = read_rows(path)
    total = sum(number(r[SAMPLES]) for r in rows)
    spans = find_roles(rows)
    taken, out = set(), {"source": path.name, "samples": total, "instructions": len(rows), "roles": {}}
    wide = kernel_wide(path)
    if wide:
        out["kernel_wide_pct"] = wide
    for name, span in spans.items():
        if span is None:
            continue
        members = list(range(span[0], span[1] + 1))
        taken.update(members)
        out["roles"][name] = {"first": rows[span[0]]["Address"], "last": rows[span[1]]["Address"],
                              **summarize(rows, members, total)}
    rest = [i for i in range(len(rows)) if i not in taken]
    out["roles"]["rest"] = summarize(rows, rest, total, loop=False)
    return out


def print_report(result: dict) -> None:
    print(f"== {result['source']}: {result['samples']:.0f} samples over {result['instructions']} instructions")
    for name, role in result["roles"].items():
        print(f"{name:10s} {role['share_pct']:5.1f} % of the samples")
        print("   why:  " + ", ".join(f"{k} {v}" for k, v in list(role["reasons_pct"].items())[:9]))
        print("   at:   " + ", ".join(f"{k} {v}" for k, v in role["at_pct"].items()))
        if role.get("per_iteration"):
            print(f"   warp instructions per iteration ({role['iterations']:.0f} iterations): "
                  + ", ".join(f"{k} {v}" for k, v in role["per_iteration"].items()))
    if result.get("kernel_wide_pct"):
        print("kernel-wide counters, % of all samples: "
              + ", ".join(f"{k} {v}" for k, v in result["kernel_wide_pct"].items()))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python lab/sass_stalls.py", description=__doc__.split("\n\n")[0])
    p.add_argument("csv", nargs="+", type=Path)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    results = [analyse(path) for path in args.csv]
    for result in results:
        print_report(result)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
