"""The jobs' results, merged into the one results JSON a local run would have written, plus where they ran.

Every merged document gets:
- "environment": the remote's (device, capability, CUDA, torch, CuTe DSL, Python, as the evaluator
  records them) with the driver, the local commit, the dirty flag and the diff's hash;
- "remote": the runner, the GPU asked for, the Modal app (id and page), whether the run was interrupted,
  and per job its name, exit status, seconds, device and, when it failed, the last line of its output
  (the traceback's) and its tail, or what Modal raised for it.
A failed job loses nothing else: the finished jobs' cases are all kept; what the failure leaves unknown
(a score over every case, a verdict) is marked as such instead of being computed from a part.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import re

from harness.runner.bundle import Provenance
from harness.runner.errors import EXIT_TIMEOUT
from harness.runner.outcomes import Collected
from harness.runner.plan import Plan

MERGED_IMPL_KEYS = ("check", "error", "score_s", "cases")  # an impl's keys computed over every job's cases
SKIP_REASON = re.compile(r"^SKIPPED \[\d+\] \S+?:\d+: (.*?)\s*$", re.M)  # pytest -ra's short summary
PYTEST_SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|skipped|error|deselected|xfailed|xpassed).*?)\s*=*$", re.M)


def last_line(text: str) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def remote_section(plan: Plan, got: Collected) -> dict:
    by_index = {r.get("index"): r for r in got.results}
    missing = "interrupted before it finished" if got.interrupted else "no result came back"
    jobs = []
    for job_index, job in enumerate(plan.jobs):
        r, error = by_index.get(job_index), got.errors.get(job_index)
        if error is not None:
            jobs.append({"name": job.name, "rc": error.status, "timed_out": error.status == EXIT_TIMEOUT,
                         "error": str(error)})
            continue
        if r is None:
            jobs.append({"name": job.name, "rc": None, "error": missing})
            continue
        entry = {"name": job.name, "rc": r["rc"], "timed_out": r.get("timed_out", False), "seconds": r.get("seconds"),
                 "device": r.get("device") or {}, "host": r.get("host")}
        if r["rc"] != 0:
            entry["error"] = last_line(r.get("tail", ""))
            entry["tail"] = r.get("tail", "")
        jobs.append(entry)
    app = {"app_id": got.app.app_id, "url": got.app.url} if got.app else None
    return {"runner": "modal", "gpu": plan.gpu, "timeout_s": plan.timeout_s, "modal_app": app,
            "interrupted": got.interrupted, "jobs": jobs}


def environment(base: dict | None, results: list[dict], prov: Provenance, plan: Plan) -> dict:
    env = dict(base or {})
    device = next((r["device"] for r in results if r.get("device")), {})
    if device:
        env.setdefault("device", device.get("gpu"))
        env["driver"] = device.get("driver")
    env.update({"commit": prov.commit, "dirty": prov.dirty, "diff_sha256": prov.diff_sha256,
                "runner": "modal", "gpu_requested": plan.gpu})
    return env


def _geomean_s(cases: list[dict]) -> float | None:
    means = [c.get("stats", {}).get("mean") if c.get("stats") else None for c in cases]
    if not means or any(m is None or m <= 0 for m in means):
        return None
    return math.exp(sum(math.log(m / 1e9) for m in means) / len(means))


def merge_bench(plan: Plan, got: Collected, prov: Provenance, sol_b200_us: list | None = None) -> dict:
    """The evaluator's schema (harness/eval.py write_json): each job timed one case; the cases are
    concatenated in the plan's order per impl, the score recomputed over all of them when all passed."""
    results = got.results
    by_index = {r["index"]: r for r in results}
    docs = [(i, by_index[i]["result"]) for i in range(len(plan.jobs)) if by_index.get(i, {}).get("result")]
    # a job that wrote no results JSON (crashed, timed out, never came back); a failed check (exit 112)
    # writes one, and its impl's "check" says so
    failed = [plan.jobs[i].name for i in range(len(plan.jobs)) if not by_index.get(i, {}).get("result")]
    base = copy.deepcopy(docs[0][1]) if docs else {"problem": plan.problem, "mode": None, "data": None}
    base["date"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    impls: dict[str, dict] = {}
    for job_index, doc in docs:
        for name, r in doc.get("impls", {}).items():
            merged = impls.setdefault(name, {"check": "pass", "error": None, "score_s": None, "cases": []})
            for key, value in r.items():  # what the evaluator records per impl beyond these (e.g. "prepare")
                if key not in MERGED_IMPL_KEYS:
                    merged.setdefault(key, value)
            for c in r.get("cases", []):
                if sol_b200_us and job_index < len(sol_b200_us):
                    c["sol_b200_us"] = sol_b200_us[job_index]  # the manifest's case, timed alone
                merged["cases"].append(c)
            if r.get("check") != "pass":
                merged["check"] = "fail"
                merged["error"] = merged["error"] or r.get("error")
    for merged in impls.values():
        if failed:
            merged["check"] = "fail"
            merged["error"] = merged["error"] or f"{len(failed)} remote job(s) failed: {'; '.join(failed)}"
        if merged["check"] == "pass" and base.get("mode") != "test":
            merged["score_s"] = _geomean_s(merged["cases"])
    base["impls"] = impls
    base["environment"] = environment(base.get("environment"), results, prov, plan)
    base["remote"] = remote_section(plan, got)
    return base


def merge_b200(plan: Plan, got: Collected, prov: Provenance) -> dict:
    """The B200 session's schema (harness/b200/session.py): the tier job's steps go into every problem's
    steps, as one local run has them; a problem whose job or tier failed gets the verdict `fail` and the
    failed step's name."""
    results = got.results
    by_name = {plan.jobs[r["index"]].name: r for r in results}
    tier_job = by_name.get("sm100 test tier") or {}
    tier = tier_job.get("result") or {}
    doc = {"device": None, "date": dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ"), "steps": {}, "verdicts": {}}
    for job in plan.jobs:
        if job.kind != "b200 problem":
            continue
        problem = job.argv[job.argv.index("--problem") + 1]
        r = by_name.get(job.name) or {}
        part = r.get("result") or {}
        doc["device"] = doc["device"] or part.get("device") or tier.get("device")
        steps = dict((part.get("steps") or {}).get(problem, {}))
        no_verdict = {"verdict": "fail", "failed_steps": [], "cases": []}
        verdict = dict((part.get("verdicts") or {}).get(problem) or no_verdict)
        if not part:
            verdict["failed_steps"] = [*verdict["failed_steps"], f"remote job: {last_line(r.get('tail', ''))}"]
        if tier:
            steps["sm100_tier"] = tier["readiness"] if problem == "gemv" else tier["tier"]
            steps["readiness"] = tier["readiness"]
        if not tier or steps["sm100_tier"].get("rc") or steps["readiness"].get("rc"):
            verdict["verdict"] = "fail"
            verdict["failed_steps"] = [*verdict["failed_steps"], "sm100_tier"]
        doc["steps"][problem], doc["verdicts"][problem] = steps, verdict
        if (part.get("variants") or {}).get(problem):  # the variants stage (harness/b200/variants.py)
            doc.setdefault("variants", {})[problem] = part["variants"][problem]
            doc["gpu"] = doc.get("gpu") or part.get("gpu")
    doc["device"] = doc["device"] or tier.get("device")
    doc["environment"] = environment(None, results, prov, plan)
    doc["remote"] = remote_section(plan, got)
    return doc


def skipped_for_another_gpu(reason: str) -> bool:
    """A skip of tests/conftest.py's for a marker of another architecture, on a GPU CUDA did see."""
    return re.fullmatch(r"needs a \w+ sm_\d+ GPU \(have \(\d+, \d+\)\)", reason) is not None


def gpu_test_file_failure(rc: int | None, tail: str) -> str | None:
    """None when a GPU test file passed; else why not. Exit 5 (nothing selected) passes: a file whose GPU
    tests are all for another GPU. A file in which every test was skipped passes only where each skip
    names another architecture: a skip because CUDA was not usable in the container is a failure."""
    if rc not in (0, 5):
        return f"exit {rc}" if rc is not None else "no result came back"
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", tail or "")}
    if rc == 0 and counts.get("skipped") and not counts.get("passed"):
        reasons = SKIP_REASON.findall(tail)
        unexplained = [r for r in reasons if not skipped_for_another_gpu(r)]
        if unexplained or not reasons:
            return f"every test skipped: {unexplained[0] if unexplained else 'no reason shown'}"
    return None


def merge_tests(plan: Plan, got: Collected, prov: Provenance) -> dict:
    """One entry per test file: exit status, pytest's summary line and, where it did not pass, why."""
    results = got.results
    by_index = {r["index"]: r for r in results}
    files = []
    for i, job in enumerate(plan.jobs):
        r = by_index.get(i) or {}
        found = PYTEST_SUMMARY.findall(r.get("tail", ""))
        files.append({"file": job.argv[job.argv.index("gpu or sm90 or sm100") + 1], "rc": r.get("rc"),
                      "summary": found[-1] if found else last_line(r.get("tail", "")),
                      "failure": gpu_test_file_failure(r.get("rc"), r.get("tail", ""))})
    doc = {"command": "pytest -m 'gpu or sm90 or sm100'", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "files": files, "passed": all(f["failure"] is None for f in files)}
    doc["environment"] = environment({"python": next((r.get("python") for r in results), None)}, results, prov, plan)
    doc["remote"] = remote_section(plan, got)
    return doc
