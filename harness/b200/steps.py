"""The B200 session's steps as subprocesses: each one's command, exit status and the tail of its output,
printed as it finishes (a session runs for many minutes; the user sees where it is)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STEP_TIMEOUT_S = 1800


def run(cmd: list[str], cwd: Path = ROOT, env: dict | None = None, timeout: int = STEP_TIMEOUT_S) -> dict:
    print("+", " ".join(cmd), f"(in {cwd})" if cwd != ROOT else "", flush=True)
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = 124, f"timeout after {timeout} s\n{e.stdout or ''}"
    print(out[-3000:], flush=True)
    return {"cmd": cmd, "rc": rc, "tail": out[-6000:]}


def evaluator(problem: str, mode: str, data: str, out: Path, extra: list[str] = (), env: dict | None = None) -> dict:
    """One evaluator run (`extra`: more arguments, e.g. --case lines) and the results JSON it wrote."""
    step = run([sys.executable, "-m", "harness.eval", problem, "--mode", mode, "--data", data, "--json", str(out),
                *extra], env=env)
    step["json"] = json.loads(out.read_text()) if out.exists() else None
    return step


def reference_eval(problem: str, refdir: Path, work: Path) -> dict:
    """The leaderboard's eval file on our packaged submission, benchmark mode, with THEIR reference (a B200
    runs their torch._scaled_mm): `python -m scripts.official_eval`, the tool that sets up the scratch dir
    and runs their eval, as a command (a tool of its own, not a module the harness imports)."""
    report = work / f"{problem}-official-eval.json"
    step = run([sys.executable, "-m", "scripts.official_eval", problem, "--reference-kernels", str(refdir),
                "--their-reference", "--work", str(work), "--json", str(report), "--modes", "benchmark"])
    doc = json.loads(report.read_text()) if report.is_file() else {}
    entry = (doc.get("problems") or {}).get(problem) or {}
    if entry.get("setup_error"):
        return {"rc": step["rc"] or 2, "tail": entry["setup_error"]}
    result = (entry.get("runs") or {}).get("benchmark")
    if result is None:
        return {"rc": step["rc"] or 2, "tail": step["tail"]}
    return {"rc": result["rc"] or int(not result.get("passed")), "tail": result["tail"], "popcorn": result["popcorn"]}
