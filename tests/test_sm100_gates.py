"""The sm100 variant gate (shared/sm100_variants.py), the gates table baked into packages
(harness/package.py) and written by the b200 variants stage (harness/b200). CPU tier: nothing here
runs a kernel; the gate picks configs, which are plain dataclasses.

tests/fixtures/sm100_gates.json is a made-up table (its device says so) with the measurements only;
`keyed()` keys it as a B200 run of this tree would (the CuTe DSL, each problem's code fingerprint, each
variant's kernel fingerprint per case), so that it stays about the code as the code changes:
  group_gemm case 0: msorted, correct and fastest        -> the one shape that switches
  group_gemm case 1: msorted named, but found incorrect   -> conservative
  group_gemm case 2: msorted named, but slower            -> conservative
  gemm case 0: a variant no registry knows                -> conservative
  gemm case 1: "test_only_dev_dsl" (registered only by the tests below, runner_dsl=False)
  dual_gemm case 0: conservative chosen
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from harness import package as pk
from harness.b200 import gates_table, session, variants
from harness.b200 import model as b200_model
from harness.locks import dsl_version
from harness.problem import load_problem
from harness.worker import install_task_module
from shared import sm100_gates
from shared.code_fingerprint import code_fingerprint
from shared.sm100_variants import (
    CONSERVATIVE,
    GateKeys,
    Sm100Variant,
    case_key,
    case_shape,
    chooser_args,
    chosen_variant,
    gate,
)
from tests.test_package import TASK_PY, _restore_import_state  # noqa: F401 - autouse fixture

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "sm100_gates.json"
PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")
SMS = 148
RUNNER_DSL = dsl_version("runner")


def benchmark_shapes(problem):
    return [case_shape(problem, c) for c in load_problem(problem).benchmarks]


def conservative(problem, shape):
    from importlib import import_module

    return import_module(f"problems.{problem}.config").choose_sm100(*chooser_args(problem, shape, SMS))


def same_config(a, b) -> bool:
    """Configs of the repository and of a bundle are different classes: compare name and fields."""
    return type(a).__name__ == type(b).__name__ and asdict(a) == asdict(b)


def submission(problem):
    install_task_module()
    from importlib import import_module

    return import_module(f"problems.{problem}.submission")


def load_bundle(text: str, tmp_path: Path, monkeypatch, name: str):
    """Exec a packaged file in this process (as test_package's loader test does); its namespace."""
    (tmp_path / "task.py").write_text(TASK_PY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "task", raising=False)
    ns: dict = {"__name__": name}
    exec(compile(text, f"{name}.py", "exec"), ns)
    return ns


def keyed(dsl: str | None, root: Path = REPO) -> dict:
    """The fixture's measurements keyed as a B200 run of the tree at `root` under CuTe DSL `dsl` keys them
    (harness/b200/variants.kernels_of: every registered variant, test-only ones included)."""
    table = json.loads(FIXTURE.read_text())
    table["dsl"] = dsl
    for problem, spec in table["problems"].items():
        spec["code"] = code = code_fingerprint(problem, root)
        for case in spec["cases"]:
            kernels = variants.kernels_of(problem, case["case"], code, SMS)
            for name, result in case["variants"].items():
                result["kernel"] = kernels.get(name)
    return table


def repo_keys(problem: str) -> GateKeys:
    """What the repository's gate compares a table with: the installed DSL and the code as it is."""
    return GateKeys(sm100_gates.DSL, code_fingerprint(problem))


def written(table: dict, tmp_path: Path) -> Path:
    path = tmp_path / "gates.json"
    path.write_text(json.dumps(table))
    return path


@pytest.fixture
def fixture_table(monkeypatch):
    """The fixture table as the repository's gate sees it, measured under the installed DSL."""
    table = keyed(sm100_gates.DSL)
    monkeypatch.setattr(sm100_gates, "TABLE", table)
    monkeypatch.delenv(sm100_gates.FORCE_ENV, raising=False)
    return table


@pytest.fixture
def dev_dsl_variant(monkeypatch):
    """A test-only gemm variant that the runner's DSL 'cannot compile' (runner_dsl=False)."""
    from problems.gemm import config

    def choose(m, n, k, l, sm_count=SMS):
        return config.GemmSm100Config(tile_n=128, num_acc_stage=1, sm_count=sm_count)

    variant = Sm100Variant("test_only_dev_dsl", choose, runner_dsl=False, summary="test only")
    monkeypatch.setitem(config.SM100_VARIANTS, variant.name, variant)
    return variant


# ------------------------------------------------------------------------------ the gate in the repository
def test_without_a_table_every_benchmark_case_gets_the_conservative_config(monkeypatch):
    monkeypatch.setattr(sm100_gates, "TABLE", None)
    monkeypatch.delenv(sm100_gates.FORCE_ENV, raising=False)
    for problem in PROBLEMS:
        for shape in benchmark_shapes(problem):
            got = submission(problem).sm100_config(*chooser_args(problem, shape, SMS))
            assert got == conservative(problem, shape), (problem, shape)


def test_the_fixture_table_switches_exactly_one_shape_in_the_repository(fixture_table):
    switched = []
    for problem in PROBLEMS:
        for shape in benchmark_shapes(problem):
            got = submission(problem).sm100_config(*chooser_args(problem, shape, SMS))
            if got != conservative(problem, shape):
                switched.append((problem, case_key(shape), got))
    assert len(switched) == 1, switched
    problem, key, cfg = switched[0]
    assert (problem, key) == ("group_gemm", case_key(benchmark_shapes("group_gemm")[0]))
    assert cfg.order == "msorted"


@pytest.mark.parametrize(("problem", "case", "why"), [
    ("group_gemm", 1, "was not found correct on the B200 (stress data: 3 mismatches)"),
    ("group_gemm", 2, "msorted is not the fastest correct variant"),
    ("gemm", 0, "the table names 'no_such_variant', which gemm does not register"),
    ("gemm", 2, "is not in the table"),
    ("dual_gemm", 0, "the table chose conservative"),
])
def test_entries_the_gate_refuses_fall_back_to_conservative(fixture_table, problem, case, why):
    from importlib import import_module

    shape = benchmark_shapes(problem)[case]
    registry = import_module(f"problems.{problem}.config").SM100_VARIANTS
    name, reason = chosen_variant(fixture_table, problem, shape, SMS, registry, repo_keys(problem))
    assert name == CONSERVATIVE and why in reason
    assert submission(problem).sm100_config(*chooser_args(problem, shape, SMS)) == conservative(problem, shape)


def test_another_sm_count_or_schema_falls_back(fixture_table):
    from problems.group_gemm.config import SM100_VARIANTS

    shape, keys = benchmark_shapes("group_gemm")[0], repo_keys("group_gemm")
    assert chosen_variant(fixture_table, "group_gemm", shape, SMS, SM100_VARIANTS, keys)[0] == "msorted"
    assert chosen_variant(fixture_table, "group_gemm", shape, 132, SM100_VARIANTS, keys) == (
        CONSERVATIVE, "table measured with 148 SMs, this device has 132")
    old_schema = {**fixture_table, "schema": 1}
    assert chosen_variant(old_schema, "group_gemm", shape, SMS, SM100_VARIANTS, keys)[0] == CONSERVATIVE


def test_a_table_measured_under_another_dsl_falls_back(fixture_table, monkeypatch):
    """A verdict is about the compiler it was measured under: the repository's gate, under the installed
    DSL, refuses a table from another."""
    from problems.group_gemm.config import SM100_VARIANTS

    shape = benchmark_shapes("group_gemm")[0]
    monkeypatch.setattr(sm100_gates, "TABLE", {**fixture_table, "dsl": "4.2.0"})
    name, why = chosen_variant(sm100_gates.TABLE, "group_gemm", shape, SMS, SM100_VARIANTS, repo_keys("group_gemm"))
    assert (name, why) == (CONSERVATIVE, f"measured under CuTe DSL 4.2.0, these kernels run under {sm100_gates.DSL}")
    assert submission("group_gemm").sm100_config(list(shape), SMS) == conservative("group_gemm", shape)


@pytest.fixture
def edited_tree(tmp_path):
    """A copy of the kit and the problems with one code edit in the grouped GEMM's sm100 kernel, and one
    in words only (a comment, a docstring) in the GEMV's."""
    import shutil

    root = tmp_path / "tree"
    for top in ("shared", "problems"):
        shutil.copytree(REPO / top, root / top, ignore=shutil.ignore_patterns("__pycache__"))
    group = root / "problems" / "group_gemm" / "kernel_sm100.py"
    group.write_text(group.read_text() + "\nEDITED_AFTER_THE_B200_RUN = 1\n")
    gemv = root / "problems" / "gemv" / "kernel_sm100.py"
    text = gemv.read_text()
    doc_end = text.index('"""', 3) + 3
    gemv.write_text(text[:3] + "Reworded. " + text[3:doc_end] + "\n# a new comment\n" + text[doc_end:])
    return root


def test_only_an_edit_of_the_code_changes_its_fingerprint(edited_tree):
    assert code_fingerprint("group_gemm", edited_tree) != code_fingerprint("group_gemm")
    assert code_fingerprint("gemv", edited_tree) == code_fingerprint("gemv")  # words only
    assert code_fingerprint("gemm", edited_tree) == code_fingerprint("gemm")  # imports no grouped module


def test_a_table_whose_kernel_changed_since_falls_back(fixture_table, edited_tree, monkeypatch):
    """Measured on the tree before the edit, the table is refused for the edited problem only."""
    from problems.group_gemm.config import SM100_VARIANTS

    before = keyed(sm100_gates.DSL, edited_tree)  # the run was on the other tree: the edit came after it
    monkeypatch.setattr(sm100_gates, "TABLE", before)
    shape = benchmark_shapes("group_gemm")[0]
    name, why = chosen_variant(before, "group_gemm", shape, SMS, SM100_VARIANTS, repo_keys("group_gemm"))
    assert name == CONSERVATIVE and why.startswith("group_gemm's kernel code changed since the B200 run (code ")
    assert submission("group_gemm").sm100_config(list(shape), SMS) == conservative("group_gemm", shape)


def test_a_table_whose_chooser_changed_since_falls_back(fixture_table, monkeypatch):
    """Same code, but msorted now picks another config for the shape (a chooser edit): refused."""
    from problems.group_gemm import config

    msorted = config.SM100_VARIANTS["msorted"]
    monkeypatch.setitem(config.SM100_VARIANTS, "msorted", replace(
        msorted, choose=lambda sizes, sms=SMS: replace(msorted.choose(sizes, sms), tile_n=64)))
    shape = benchmark_shapes("group_gemm")[0]
    name, why = chosen_variant(fixture_table, "group_gemm", shape, SMS, config.SM100_VARIANTS, repo_keys("group_gemm"))
    assert name == CONSERVATIVE and why.startswith("msorted's kernel for this shape changed since the B200 run")


def test_a_runner_dsl_false_variant_is_served_in_the_repository_but_not_for_the_runner(dev_dsl_variant,
                                                                                      fixture_table):
    from problems.gemm.config import SM100_VARIANTS

    shape, keys = benchmark_shapes("gemm")[1], repo_keys("gemm")
    assert chosen_variant(fixture_table, "gemm", shape, SMS, SM100_VARIANTS, keys)[0] == "test_only_dev_dsl"
    assert chosen_variant(fixture_table, "gemm", shape, SMS, SM100_VARIANTS, keys, runner_dsl_only=True) == (
        CONSERVATIVE, "test_only_dev_dsl does not compile under the runner's CuTe DSL (runner_dsl=False)")
    assert submission("gemm").sm100_config(*shape, SMS).num_acc_stage == 1  # the repository: dev DSL


def test_a_variant_that_does_not_apply_gives_the_conservative_config(fixture_table, monkeypatch):
    from problems.group_gemm import config

    monkeypatch.setitem(config.SM100_VARIANTS, "msorted", replace(config.SM100_VARIANTS["msorted"],
                                                                  choose=lambda *_: None))
    shape = benchmark_shapes("group_gemm")[0]
    assert submission("group_gemm").sm100_config(list(shape), SMS) == conservative("group_gemm", shape)


def test_the_forced_variant_is_served_where_it_applies_and_an_unknown_one_is_an_error(monkeypatch):
    from problems.group_gemm.config import SM100_VARIANTS

    monkeypatch.setattr(sm100_gates, "TABLE", None)
    monkeypatch.setenv(sm100_gates.FORCE_ENV, "msorted")
    shapes = benchmark_shapes("group_gemm")
    assert all(submission("group_gemm").sm100_config(list(s), SMS).order == "msorted" for s in shapes)
    sorted_groups = ((384, 4096, 1536, 1), (128, 4096, 1536, 1))  # msorted does not apply: conservative
    assert gate("group_gemm", SM100_VARIANTS, sorted_groups, list(sorted_groups), SMS).order == "group"
    monkeypatch.setenv(sm100_gates.FORCE_ENV, "nope")
    with pytest.raises(ValueError, match="forced sm100 variant 'nope' is not registered"):
        submission("gemm").sm100_config(128, 7168, 16384, 1, SMS)


# ------------------------------------------------------------------------------ the gate in a package
@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_package_without_a_table_uses_the_conservative_config_for_every_case(problem, tmp_path, monkeypatch):
    monkeypatch.setenv(sm100_gates.FORCE_ENV, "msorted")  # must not reach a package
    text = pk.package(problem, gates=tmp_path / "absent.json").text
    assert "# sm100 kernels: conservative for every shape (no B200 gates table" in text
    gates_source = text.split("_BUNDLE_SOURCES['shared.sm100_gates']")[1].split("# ---- source:")[0]
    assert sm100_gates.FORCE_ENV not in text and "environ" not in gates_source and "read_text" not in gates_source
    assert "TABLE = None" in gates_source and "RUNNER_DSL_ONLY = True" in gates_source
    assert "# ---- source: shared/code_fingerprint.py" not in text  # it reads files: a package carries its result
    ns = load_bundle(text, tmp_path, monkeypatch, f"gates_none_{problem}")
    for shape in benchmark_shapes(problem):
        got = ns["sm100_config"](*chooser_args(problem, shape, SMS))
        assert same_config(got, conservative(problem, shape)), (problem, shape, got)


def switched_in_packages(packaged: dict, tmp_path: Path, monkeypatch) -> list:
    """(problem, case key, order) of every benchmark shape a bundle does not give its conservative config."""
    switched = []
    for problem, out in packaged.items():
        (tmp_path / problem).mkdir()
        ns = load_bundle(out.text, tmp_path / problem, monkeypatch, f"gates_{tmp_path.name}_{problem}")
        for shape in benchmark_shapes(problem):
            got = ns["sm100_config"](*chooser_args(problem, shape, SMS))
            if not same_config(got, conservative(problem, shape)):
                switched.append((problem, case_key(shape), got.order))
    return switched


def test_the_fixture_table_switches_exactly_one_shape_in_the_package(tmp_path, monkeypatch):
    monkeypatch.delenv(sm100_gates.FORCE_ENV, raising=False)
    path = written(keyed(RUNNER_DSL), tmp_path)
    # all packaged before any bundle runs: a bundle enters its modules under their real names where free
    packaged = {problem: pk.package(problem, gates=path) for problem in PROBLEMS}
    for problem, out in packaged.items():
        header = out.text.split("\n_BUNDLE")[0]
        assert "# sm100 gates table: gates.json (NVIDIA B200 (test fixture" in header
        measured = code_fingerprint(problem) if problem in ("gemm", "dual_gemm", "group_gemm") else None
        assert (f"#   measured under CuTe DSL {RUNNER_DSL} on {problem} code {measured}; this package: CuTe DSL "
                f"{RUNNER_DSL}, code {code_fingerprint(problem)}.") in header
        assert "3 mismatches" not in out.text  # failure texts stay in the results file
    assert switched_in_packages(packaged, tmp_path, monkeypatch) == [
        ("group_gemm", case_key(benchmark_shapes("group_gemm")[0]), "msorted")]
    header = packaged["group_gemm"].text.split("\n_BUNDLE")[0]
    assert f"#   {case_key(benchmark_shapes('group_gemm')[0])}: msorted (B200 table: correct, 19.00 us)" in header
    assert f"#   {case_key(benchmark_shapes('group_gemm')[3])}: conservative (group_gemm " in header


def test_a_package_refuses_a_table_measured_under_another_dsl(tmp_path, monkeypatch):
    """The fixture measured under the development DSL, for a package for the runner's: the bundle gets its
    conservative kernels, and the header says why."""
    monkeypatch.delenv(sm100_gates.FORCE_ENV, raising=False)
    dev = dsl_version("dev")
    packaged = {"group_gemm": pk.package("group_gemm", gates=written(keyed(dev), tmp_path))}
    header = packaged["group_gemm"].text.split("\n_BUNDLE")[0]
    why = f"measured under CuTe DSL {dev}, these kernels run under {RUNNER_DSL}"
    assert f"#   {case_key(benchmark_shapes('group_gemm')[0])}: conservative ({why})" in header
    assert switched_in_packages(packaged, tmp_path, monkeypatch) == []


def test_a_package_refuses_a_table_measured_on_kernel_code_edited_since(edited_tree, tmp_path):
    packaged = pk.package("group_gemm", gates=written(keyed(RUNNER_DSL, edited_tree), tmp_path))
    header = packaged.text.split("\n_BUNDLE")[0]
    first = case_key(benchmark_shapes("group_gemm")[0])
    assert f"#   {first}: conservative (group_gemm's kernel code changed since the B200 run (code " in header


@pytest.mark.parametrize("dsl", ["runner", "dev"])
def test_a_runner_package_leaves_out_a_runner_dsl_false_variant(dsl, dev_dsl_variant, tmp_path, monkeypatch):
    monkeypatch.delenv(sm100_gates.FORCE_ENV, raising=False)
    out = pk.package("gemm", gates=written(keyed(dsl_version(dsl)), tmp_path), dsl=dsl)
    key = case_key(benchmark_shapes("gemm")[1])
    header = out.text.split("\n_BUNDLE")[0]
    want = "conservative (test_only_dev_dsl does not compile" if dsl == "runner" else "test_only_dev_dsl (B200"
    assert f"#   {key}: {want}" in header
    ns = load_bundle(out.text, tmp_path, monkeypatch, f"gates_dsl_{dsl}")
    bundled = ns["_BUNDLE"].load("problems.gemm.config")
    bundled.SM100_VARIANTS[dev_dsl_variant.name] = replace(
        dev_dsl_variant, choose=lambda m, n, k, l, s=SMS: bundled.GemmSm100Config(tile_n=128, num_acc_stage=1,
                                                                                   sm_count=s))
    got = ns["sm100_config"](*benchmark_shapes("gemm")[1], SMS)
    assert got.num_acc_stage == (2 if dsl == "runner" else 1)


# ------------------------------------------------------------------------------ the b200 table writer
def _eval_json(cases_status):
    return {"json": {"impls": {"submission": {"error": None, "cases": [
        {"case": case, "status": status, "error": None if status == "pass" else "mismatch",
         "stats": {"mean": mean_ns} if mean_ns else None} for case, status, mean_ns in cases_status]}}}}


RECORD = {"device": "NVIDIA B200", "capability": [10, 0], "sm_count": 148,
          "versions": {"torch": "x", "nvidia-cutlass-dsl": RUNNER_DSL}, "commit": "abc", "dirty": False}


def test_b200_table_writer_round_trips_and_refuses_another_device(tmp_path):
    cases = b200_model.benchmark_cases("group_gemm")
    lines = [variants.case_line(c) for c in cases]
    steps = {
        "conservative": {"applies": lines, "stress": _eval_json([(c, "pass", None) for c in cases]),
                         "leaderboard": _eval_json([(c, "pass", 20e3 - i) for i, c in enumerate(cases)])},
        "msorted": {"applies": lines[:3], "stress": _eval_json([(c, "pass" if i != 1 else "fail", None)
                                                                for i, c in enumerate(cases[:3])]),
                    "leaderboard": _eval_json([(c, "pass", 19e3 if i == 0 else 25e3)
                                               for i, c in enumerate(cases[:3])])},
    }
    code = code_fingerprint("group_gemm")
    verdicts = variants.verdicts_of("group_gemm", cases, steps, code)
    assert [v["chosen"] for v in verdicts] == ["msorted", "conservative", "conservative", "conservative"]
    kernel = variants.kernels_of("group_gemm", cases[1], code, SMS)["msorted"]
    assert verdicts[1]["variants"]["msorted"] == {"correct": False, "failure": "stress data: mismatch",
                                                  "mean_us": None, "kernel": kernel}
    assert verdicts[3]["variants"]["msorted"]["failure"] == "not applicable to this shape"
    path = tmp_path / "gates.json"
    part = {"group_gemm": {"code": code, "cases": verdicts}}
    with pytest.raises(gates_table.NotB200, match="only from a B200"):
        gates_table.write_gates(part, {**RECORD, "capability": [9, 0]}, path)
    assert not path.exists()
    written_table = gates_table.write_gates(part, RECORD, path, date="20261124T000000Z")
    table = sm100_gates.load(path)
    assert table == json.loads(json.dumps(written_table))
    assert (table["dsl"], table["problems"]["group_gemm"]["code"]) == (RUNNER_DSL, code)
    from problems.group_gemm.config import SM100_VARIANTS

    keys = GateKeys(RUNNER_DSL, code)
    chosen = [chosen_variant(table, "group_gemm", case_shape("group_gemm", c), 148, SM100_VARIANTS, keys)[0]
              for c in cases]
    assert chosen == ["msorted", "conservative", "conservative", "conservative"]
    # a second problem's run keeps the first problem's cases; one under another DSL starts a new table
    gates_table.write_gates({"gemm": {"code": "x", "cases": []}}, RECORD, path)
    assert set(sm100_gates.load(path)["problems"]) == {"group_gemm", "gemm"}
    other = {**RECORD, "versions": {"nvidia-cutlass-dsl": "4.8.1"}}
    gates_table.write_gates({"gemm": {"code": "x", "cases": []}}, other, path)
    assert set(sm100_gates.load(path)["problems"]) == {"gemm"}
    # and the packager reads what the writer wrote
    gates_table.write_gates(part, RECORD, path)
    text = pk.package("group_gemm", gates=path).text
    assert "msorted (B200 table: correct, 19.00 us)" in text.split("\n_BUNDLE")[0]


def test_the_variants_stage_says_without_a_b200_and_the_repository_has_no_table_yet(capsys):
    if session.b200_present()[0]:
        pytest.skip("a B200 is present")
    assert session.main(["--variants", "only"]) == 0
    assert "nothing to run here" in capsys.readouterr().out
    assert not gates_table.GATES_PATH.exists() or sm100_gates.TABLE is not None


def test_the_b200_session_measures_only_under_its_targets_dsl(monkeypatch):
    monkeypatch.setattr(session, "installed_dsl", lambda: "4.8.1")
    assert session.dsl_mismatch("dev") is None
    assert session.dsl_mismatch("runner") == (
        f"the gates table for --dsl runner is measured under CuTe DSL {RUNNER_DSL}, but 4.8.1 is installed: "
        "`nox -s b200 -- --dsl runner` installs it (locks/b200.txt)")


def test_the_dry_run_shows_the_dsl_and_the_fingerprints_the_table_will_be_keyed_to(capsys):
    from harness.runner import cli

    assert cli.main(["b200", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"  CuTe DSL {RUNNER_DSL} (the image's, locks/leaderboard.txt: `nox -s package`'s default target), " \
           "148 SMs" in out
    for problem in PROBLEMS:
        assert f"  {problem:<10} code {code_fingerprint(problem)}" in out
    case = b200_model.benchmark_cases("gemm")[0]
    kernels = variants.kernels_of("gemm", case, code_fingerprint("gemm"), SMS)
    assert "  ".join(f"{n} {fp}" for n, fp in kernels.items()) in out and "splitk_swap" in kernels


def test_the_runner_merges_the_variants_stages_and_writes_the_table_only_from_a_b200(tmp_path, monkeypatch, capsys):
    """`nox -s b200 -- --runner modal`: each problem job's variants stage comes back in its JSON; the local
    side merges them and writes the gates table (harness/b200/gates_table.write_gates), not from another GPU."""
    from harness.runner import bundle, cli, merge
    from harness.runner.outcomes import Collected
    from harness.runner.plan import make_plan

    plan = make_plan("b200", [], "B200", 1200, 4)
    table = keyed(RUNNER_DSL)  # as the remote job keyed its verdicts, on the same tree
    group = table["problems"]["group_gemm"]
    step = {"rc": 0, "tail": "ok"}
    part = {"device": "NVIDIA B200", "date": "x", "steps": {"group_gemm": {"stress": step}},
            "verdicts": {"group_gemm": {"verdict": "ok", "failed_steps": [], "cases": []}},
            "variants": {"group_gemm": {"code": group["code"], "cases": group["cases"], "steps": {}}}, "gpu": RECORD}
    job = next(i for i, j in enumerate(plan.jobs) if j.name == "b200 group_gemm")
    results = [{"index": job, "name": "b200 group_gemm", "rc": 0, "timed_out": False, "seconds": 1.0, "tail": "",
                "result": part, "device": {"gpu": "NVIDIA B200"}, "host": "modal", "python": "3.13"}]
    doc = merge.merge_b200(plan, Collected(results), bundle.Provenance("abc", False, None))
    assert doc["variants"]["group_gemm"]["cases"] == group["cases"] and doc["gpu"] == RECORD
    monkeypatch.setattr(gates_table, "GATES_PATH", tmp_path / "gates.json")
    cli.write_gates_from({**doc, "gpu": {**RECORD, "capability": [9, 0]}})
    assert not (tmp_path / "gates.json").exists()
    assert "gates table not written: the gates table is written only from a B200" in capsys.readouterr().err
    cli.write_gates_from(doc)
    from problems.group_gemm.config import SM100_VARIANTS

    written_table = sm100_gates.load(tmp_path / "gates.json")
    shape = benchmark_shapes("group_gemm")[0]
    keys = GateKeys(RUNNER_DSL, code_fingerprint("group_gemm"))
    assert chosen_variant(written_table, "group_gemm", shape, SMS, SM100_VARIANTS, keys)[0] == "msorted"
