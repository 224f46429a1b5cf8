"""The command line of `--runner modal` (what noxfile.py calls for bench, b200 and test).

    python -m harness.runner COMMAND [the session's arguments] [--runner modal] [--gpu B200|H200|H100]
                             [--timeout S] [--max-gpus N] [--dry-run]

Steps: the plan (printed before anything starts; --dry-run adds the image spec and stops there, having
sent nothing), the prerequisites (modal installed, credentials), the working tree packed, one Modal call
per job with one progress line per job as it finishes, the results merged into results/local/ as a local
run writes them, with the Modal app's id and page. Exit status: 0; the first failed job's, in the plan's
order (124 for a timeout, the job's own or Modal's); 112 when a check failed; 130 when interrupted
(Ctrl-C: the results that came back are written, marked interrupted); 2 for bad arguments; 3 for a
missing prerequisite.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

from harness.runner import bundle, image, merge
from harness.runner.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_TIMEOUT, RunnerError
from harness.runner.outcomes import Collected, Interrupted, JobError, RemoteApp
from harness.runner.plan import GPUS, REPO, Plan, describe, make_plan, manifest

EXIT_CHECK = 112
LOCAL_RESULTS = REPO / "results" / "local"  # a user's runs: git-ignored (results/*.json is the committed record)
DEFAULT_TIMEOUT_S = 1200
DEFAULT_MAX_GPUS = 4


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness.runner", allow_abbrev=False,
                                description="run nox -s bench|b200|test on Modal GPUs")
    p.add_argument("command", choices=("bench", "b200", "test"))
    p.add_argument("--runner", choices=("modal",), default="modal")
    p.add_argument("--gpu", default="B200", help=f"one of {', '.join(GPUS)} (default B200)")
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per job (default %(default)s)")
    p.add_argument("--max-gpus", type=int, default=DEFAULT_MAX_GPUS,
                   help="at most this many containers (GPUs) at once (default %(default)s)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and the image spec; send nothing")
    return p


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The runner's options; everything else is the session's (evaluator, b200 or pytest arguments)."""
    return build_parser().parse_known_args(argv)


def job_inputs(plan: Plan, prov: bundle.Provenance) -> list[dict]:
    return [{"index": i, "name": job.name, "argv": list(job.argv), "timeout_s": plan.timeout_s,
             "commit": prov.commit + ("+dirty" if prov.dirty else "") if prov.commit else None}
            for i, job in enumerate(plan.jobs)]


def progress_line(plan: Plan, done: int, r: dict) -> str:
    """`[2/5] b200 gemm: ok (312 s on NVIDIA B200)`, or FAILED/TIMEOUT with the exit status and last line."""
    where = f"({r.get('seconds') or 0:.0f} s on {(r.get('device') or {}).get('gpu') or 'no GPU'})"
    if r["rc"] == 0 or (plan.command == "test" and r["rc"] == 5):  # 5: no test of this file for this GPU
        status = f"ok {where}"
    elif r.get("timed_out"):
        status = f"TIMEOUT, exit {r['rc']} {where}"
    else:
        status = f"FAILED, exit {r['rc']} {where}: {merge.last_line(r.get('tail', ''))}"
    return f"[{done}/{len(plan.jobs)}] {plan.jobs[r['index']].name}: {status}"


def error_line(plan: Plan, done: int, e: JobError) -> str:
    """`[3/5] b200 gemm: TIMEOUT, exit 124: ...` for a job Modal raised for instead of returning its result."""
    kind = "TIMEOUT" if e.error.status == EXIT_TIMEOUT else "FAILED"
    return f"[{done}/{len(plan.jobs)}] {plan.jobs[e.index].name}: {kind}, exit {e.error.status}: {e.error}"


def collect(plan: Plan, outcomes, out=None) -> Collected:
    """Everything a run gives back, with one progress line per job; Ctrl-C here (between two outcomes)
    marks the run interrupted and closes the backend's run, which stops the app."""
    out = out or sys.stderr
    got = Collected()
    try:
        for outcome in outcomes:
            if isinstance(outcome, RemoteApp):
                got.app = outcome
                print(f"Modal app {outcome.app_id}" + (f": {outcome.url}" if outcome.url else ""), file=out, flush=True)
            elif isinstance(outcome, Interrupted):
                got.interrupted = True
            elif isinstance(outcome, JobError):
                got.errors[outcome.index] = outcome.error
                print(error_line(plan, got.done, outcome), file=out, flush=True)
            else:
                got.results.append(outcome)
                print(progress_line(plan, got.done, outcome), file=out, flush=True)
    except KeyboardInterrupt:
        got.interrupted = True
        close = getattr(outcomes, "close", None)
        if close is not None:
            close()
    return got


def sol_b200(plan: Plan, rest: list[str]) -> list | None:
    """The manifest's B200 speed of light per job, when the jobs are the manifest's benchmark cases."""
    if plan.command != "bench" or "--case" in rest or any(a.startswith("--case=") for a in rest):
        return None
    spec = manifest(plan.problem)
    return spec.get("speed_of_light_b200_us") if len(spec["benchmarks"]) == len(plan.jobs) else None


def merged_document(plan: Plan, got: Collected, prov: bundle.Provenance, rest: list[str]) -> tuple[dict, Path]:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    if plan.command == "bench":
        doc = merge.merge_bench(plan, got, prov, sol_b200(plan, rest))
        return doc, LOCAL_RESULTS / f"{plan.problem}-{stamp}.json"
    if plan.command == "b200":
        return merge.merge_b200(plan, got, prov), LOCAL_RESULTS / f"b200-{stamp}.json"
    return merge.merge_tests(plan, got, prov), LOCAL_RESULTS / f"test-{plan.gpu}-{stamp}.json"


def summary(plan: Plan, doc: dict) -> list[str]:
    """A few lines of what came back (the full tables are in each job's output and the JSON)."""
    if plan.command == "bench":
        lines = []
        for name, r in doc.get("impls", {}).items():
            for c in r["cases"]:
                mean = (c.get("stats") or {}).get("mean")
                case = "; ".join(f"{k}: {v}" for k, v in (c.get("case") or {}).items())
                lines.append(f"{name:16} {case:44} {c['status']:5} " + (f"{mean / 1e3:10.2f} us" if mean else ""))
            score = f"geomean {r['score_s'] * 1e6:.2f} us" if r.get("score_s") else "no score"
            lines.append(f"{name}: {r['check']} ({score})" + (f"; {r['error']}" if r["error"] else ""))
        return lines
    if plan.command == "b200":
        return [f"{p:10} {v['verdict']}" + (f"  failed: {v['failed_steps']}" if v.get("failed_steps") else "")
                for p, v in doc["verdicts"].items()]
    return [f"{f['file']:36} exit {f['rc']}  {f['summary']}" + (f"  FAILED: {f['failure']}" if f["failure"] else "")
            for f in doc["files"]]


def write_gates_from(doc: dict) -> None:
    """The gates table from the remote jobs' variants stages (harness/b200/gates_table.py: B200 only)."""
    from harness.b200 import gates_table

    try:
        gates_table.write_gates(doc["variants"], doc.get("gpu") or {})
    except gates_table.NotB200 as e:
        print(f"runner: gates table not written: {e}", file=sys.stderr)
        return
    path = gates_table.GATES_PATH
    print(f"gates table written to {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


def exit_status(plan: Plan, got: Collected, doc: dict) -> int:
    if got.interrupted:
        return EXIT_INTERRUPTED
    by_index = {r["index"]: r for r in got.results}
    for i in range(len(plan.jobs)):
        if i in got.errors:
            return got.errors[i].status
        r = by_index.get(i)
        if r is None:
            continue
        if r.get("timed_out"):
            return EXIT_TIMEOUT
        ok = (0, 5) if plan.command == "test" else (0, EXIT_CHECK) if plan.command == "bench" else (0, 1)
        if r["rc"] not in ok:
            return r["rc"]
    if got.done < len(plan.jobs):
        return EXIT_FAILED
    if plan.command == "bench":
        return 0 if all(r["check"] == "pass" for r in doc["impls"].values()) else EXIT_CHECK
    if plan.command == "b200":
        return 0 if all(v["verdict"] != "fail" for v in doc["verdicts"].values()) else EXIT_FAILED
    return 0 if doc["passed"] else EXIT_FAILED


def main(argv: list[str] | None = None, run_jobs=None) -> int:
    """run_jobs(plan, spec, bundle_file, jobs) -> iterable of outcomes (harness/runner/outcomes.py); default:
    Modal (modal_backend.run)."""
    args, rest = parse(sys.argv[1:] if argv is None else argv)
    try:
        plan = make_plan(args.command, rest, args.gpu, args.timeout, args.max_gpus)
        spec = image.image_spec()
        print(describe(plan), flush=True)
        if args.dry_run:
            print(image.describe(spec))
            if plan.command == "b200":
                from harness.b200.gates_table import key_lines

                where = "the image's, locks/leaderboard.txt: `nox -s package`'s default target"
                print("\n".join(key_lines(spec["pins"]["nvidia-cutlass-dsl"], where)))
            print("dry run: nothing sent")
            return 0
        if run_jobs is None:
            from harness.runner import modal_backend

            modal_backend.require_modal()
            modal_backend.require_token()
            run_jobs = modal_backend.run
        prov = bundle.provenance(REPO)
        packed = bundle.pack(REPO)
        edits = f" + uncommitted changes (diff {prov.diff_sha256[:12]})" if prov.dirty else ""
        print(f"sending the working tree: {len(bundle.tree_files(REPO))} files, {len(packed) / 1e6:.1f} MB, "
              f"commit {prov.commit}{edits}", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="nvfp4-bundle-") as tmp:
            bundle_file = Path(tmp) / "tree.tar.gz"
            bundle_file.write_bytes(packed)
            got = collect(plan, run_jobs(plan, spec, bundle_file, job_inputs(plan, prov)))
    except RunnerError as e:
        print(f"runner: {e}", file=sys.stderr)
        return e.status
    except KeyboardInterrupt:  # before any job was sent (collect() handles Ctrl-C from then on)
        print("runner: interrupted (Ctrl-C) before anything was sent; nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED
    doc, path = merged_document(plan, got, prov, rest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print("\n".join(summary(plan, doc)))
    if plan.command == "b200" and doc.get("variants"):
        if got.interrupted:
            print("runner: gates table not written: the run was interrupted", file=sys.stderr)
        else:
            write_gates_from(doc)
    for job in doc["remote"]["jobs"]:
        if job.get("rc") not in (0, None) and not (plan.command == "test" and job["rc"] == 5):
            print(f"runner: {job['name']}: remote exit {job['rc']}: {job.get('error')}", file=sys.stderr)
    if got.interrupted:
        print(f"runner: interrupted (Ctrl-C): {got.done} of {len(plan.jobs)} jobs came back; the others were stopped "
              "with the Modal app", file=sys.stderr)
    status = exit_status(plan, got, doc)
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    print(f"results written to {shown} ({len(got.results)}/{len(plan.jobs)} jobs came back"
          f"{', interrupted' if got.interrupted else ''})", file=sys.stderr)
    return status
