"""The sm100 variant gate (shared/sm100_variants.py), the gates table baked into packages
(harness/package.py) and written by the b200 variants stage (harness/b200). CPU tier: nothing here
runs a kernel; the gate picks configs, which are plain dataclasses.

tests/fixtures/sm100_gates.json is a made-up table (its device says so), keyed like a real one:
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
from harness.problem import load_problem
from harness.worker import install_task_module
from shared import sm100_gates
from shared.sm100_variants import CONSERVATIVE, Sm100Variant, case_key, case_shape, chooser_args, chosen_variant, gate
from tests.test_package import TASK_PY, _restore_import_state  # noqa: F401 - autouse fixture

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "sm100_gates.json"
PROBLEMS = ("gemv", "gemm", "dual_gemm", "group_gemm")
SMS = 148


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


@pytest.fixture
def fixture_table(monkeypatch):
    table = json.loads(FIXTURE.read_text())
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
    variants = import_module(f"problems.{problem}.config").SM100_VARIANTS
    name, reason = chosen_variant(fixture_table, problem, shape, SMS, variants)
    assert name == CONSERVATIVE and why in reason
    assert submission(problem).sm100_config(*chooser_args(problem, shape, SMS)) == conservative(problem, shape)


def test_another_sm_count_or_schema_falls_back(fixture_table):
    from problems.group_gemm.config import SM100_VARIANTS

    shape = benchmark_shapes("group_gemm")[0]
    assert chosen_variant(fixture_table, "group_gemm", shape, SMS, SM100_VARIANTS)[0] == "msorted"
    assert chosen_variant(fixture_table, "group_gemm", shape, 132, SM100_VARIANTS) == (
        CONSERVATIVE, "table measured with 148 SMs, this device has 132")
    assert chosen_variant({**fixture_table, "schema": 2}, "group_gemm", shape, SMS, SM100_VARIANTS)[0] == CONSERVATIVE


def test_a_runner_dsl_false_variant_is_served_in_the_repository_but_not_for_the_runner(fixture_table,
                                                                                      dev_dsl_variant):
    from problems.gemm.config import SM100_VARIANTS

    shape = benchmark_shapes("gemm")[1]
    assert chosen_variant(fixture_table, "gemm", shape, SMS, SM100_VARIANTS)[0] == "test_only_dev_dsl"
    assert chosen_variant(fixture_table, "gemm", shape, SMS, SM100_VARIANTS, runner_dsl_only=True) == (
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
    ns = load_bundle(text, tmp_path, monkeypatch, f"gates_none_{problem}")
    for shape in benchmark_shapes(problem):
        got = ns["sm100_config"](*chooser_args(problem, shape, SMS))
        assert same_config(got, conservative(problem, shape)), (problem, shape, got)


def test_the_fixture_table_switches_exactly_one_shape_in_the_package(tmp_path, monkeypatch):
    monkeypatch.delenv(sm100_gates.FORCE_ENV, raising=False)
    switched = []
    # all packaged before any bundle runs: a bundle enters its modules under their real names where free
    packaged = {problem: pk.package(problem, gates=FIXTURE) for problem in PROBLEMS}
    for problem, out in packaged.items():
        header = out.text.split("\n_BUNDLE")[0]
        assert "# sm100 gates table: tests/fixtures/sm100_gates.json (NVIDIA B200 (test fixture" in header
        assert "3 mismatches" not in out.text  # failure texts stay in the results file
        (tmp_path / problem).mkdir()
        ns = load_bundle(out.text, tmp_path / problem, monkeypatch, f"gates_fixture_{problem}")
        for shape in benchmark_shapes(problem):
            got = ns["sm100_config"](*chooser_args(problem, shape, SMS))
            if not same_config(got, conservative(problem, shape)):
                switched.append((problem, case_key(shape), got.order))
    assert switched == [("group_gemm", case_key(benchmark_shapes("group_gemm")[0]), "msorted")]
    header = packaged["group_gemm"].text.split("\n_BUNDLE")[0]
    assert f"#   {case_key(benchmark_shapes('group_gemm')[0])}: msorted (B200 table: correct, 19.00 us)" in header
    assert f"#   {case_key(benchmark_shapes('group_gemm')[3])}: conservative (group_gemm " in header


@pytest.mark.parametrize("dsl", ["runner", "dev"])
def test_a_runner_package_leaves_out_a_runner_dsl_false_variant(dsl, fixture_table, dev_dsl_variant, tmp_path,
                                                                monkeypatch):
    out = pk.package("gemm", gates=FIXTURE, dsl=dsl)
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
    verdicts = variants.verdicts_of("group_gemm", cases, steps)
    assert [v["chosen"] for v in verdicts] == ["msorted", "conservative", "conservative", "conservative"]
    assert verdicts[1]["variants"]["msorted"] == {"correct": False, "failure": "stress data: mismatch",
                                                  "mean_us": None}
    assert verdicts[3]["variants"]["msorted"]["failure"] == "not applicable to this shape"
    record = {"device": "NVIDIA B200", "capability": [10, 0], "sm_count": 148, "versions": {"torch": "x"},
              "commit": "abc", "dirty": False}
    path = tmp_path / "gates.json"
    with pytest.raises(gates_table.NotB200, match="only from a B200"):
        gates_table.write_gates({"group_gemm": {"cases": verdicts}}, {**record, "capability": [9, 0]}, path)
    assert not path.exists()
    written = gates_table.write_gates({"group_gemm": {"cases": verdicts}}, record, path, date="20261124T000000Z")
    table = sm100_gates.load(path)
    assert table == json.loads(json.dumps(written))
    from problems.group_gemm.config import SM100_VARIANTS

    chosen = [chosen_variant(table, "group_gemm", case_shape("group_gemm", c), 148, SM100_VARIANTS)[0]
              for c in cases]
    assert chosen == ["msorted", "conservative", "conservative", "conservative"]
    # a second problem's run keeps the first problem's cases
    gates_table.write_gates({"gemm": {"cases": []}}, record, path)
    assert set(sm100_gates.load(path)["problems"]) == {"group_gemm", "gemm"}
    # and the packager reads what the writer wrote
    text = pk.package("group_gemm", gates=path).text
    assert "msorted (B200 table: correct, 19.00 us)" in text.split("\n_BUNDLE")[0]


def test_the_variants_stage_says_without_a_b200_and_the_repository_has_no_table_yet(capsys):
    if session.b200_present()[0]:
        pytest.skip("a B200 is present")
    assert session.main(["--variants", "only"]) == 0
    assert "nothing to run here" in capsys.readouterr().out
    assert not gates_table.GATES_PATH.exists() or sm100_gates.TABLE is not None


def test_the_runner_merges_the_variants_stages_and_writes_the_table_only_from_a_b200(tmp_path, monkeypatch, capsys):
    """`nox -s b200 -- --runner modal`: each problem job's variants stage comes back in its JSON; the local
    side merges them and writes the gates table (harness/b200/gates_table.write_gates), not from another GPU."""
    from harness.runner import bundle, cli, merge
    from harness.runner.outcomes import Collected
    from harness.runner.plan import make_plan

    plan = make_plan("b200", [], "B200", 1200, 4)
    cases = b200_model.benchmark_cases("group_gemm")
    verdicts = [{"key": case_key(case_shape("group_gemm", c)), "case": c, "chosen": "msorted" if i == 0 else
                 CONSERVATIVE, "variants": {"conservative": {"correct": True, "failure": None, "mean_us": 20.0},
                                            "msorted": {"correct": True, "failure": None,
                                                        "mean_us": 19.0 if i == 0 else 21.0}}}
                for i, c in enumerate(cases)]
    gpu = {"device": "NVIDIA B200", "capability": [10, 0], "sm_count": 148, "versions": {}, "commit": "abc",
           "dirty": False}
    step = {"rc": 0, "tail": "ok"}
    part = {"device": "NVIDIA B200", "date": "x", "steps": {"group_gemm": {"stress": step}},
            "verdicts": {"group_gemm": {"verdict": "ok", "failed_steps": [], "cases": []}},
            "variants": {"group_gemm": {"cases": verdicts, "steps": {}}}, "gpu": gpu}
    job = next(i for i, j in enumerate(plan.jobs) if j.name == "b200 group_gemm")
    results = [{"index": job, "name": "b200 group_gemm", "rc": 0, "timed_out": False, "seconds": 1.0, "tail": "",
                "result": part, "device": {"gpu": "NVIDIA B200"}, "host": "modal", "python": "3.13"}]
    doc = merge.merge_b200(plan, Collected(results), bundle.Provenance("abc", False, None))
    assert doc["variants"]["group_gemm"]["cases"] == verdicts and doc["gpu"] == gpu
    monkeypatch.setattr(gates_table, "GATES_PATH", tmp_path / "gates.json")
    cli.write_gates_from({**doc, "gpu": {**gpu, "capability": [9, 0]}})
    assert not (tmp_path / "gates.json").exists()
    assert "gates table not written: the gates table is written only from a B200" in capsys.readouterr().err
    cli.write_gates_from(doc)
    from problems.group_gemm.config import SM100_VARIANTS

    table = sm100_gates.load(tmp_path / "gates.json")
    assert chosen_variant(table, "group_gemm", case_shape("group_gemm", cases[0]), SMS, SM100_VARIANTS)[0] == "msorted"
