"""The summary picture (harness/report.py): one device's results only, no empty panel, and a chart a
newcomer reads right: it says lower is better, its log axis has plain labels, no legend hides a label.

Each test draws the committed H100 results (results/*.json that git tracks, never a user's own files there)
through `report.main`, as `nox -s report` does, and inspects the matplotlib figure it saved."""

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is not installed (the report's picture needs it)")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from harness import report  # noqa: E402
from tests.committed_results import committed_results  # noqa: E402

# The H100's files only: the picture's device defaults to the newest GPU results', which the H200 runs from
# 2026-11-28 on would otherwise be, and these tests name the H100 and its four panels
RESULTS = [p for p in committed_results() if "-h100-" in Path(p).name]
CPU = "cpu (x86_64, 2 threads)"


def cpu_run(tmp_path: Path) -> str:
    """A gemv results file as the evaluator writes it after `nox -s bench -- gemv` on a CPU: newer than
    every committed file, a CPU device, no ceilings and so no speed of light."""
    doc = json.load(open(max((p for p in RESULTS if "-gemv-" in p), key=lambda p: json.load(open(p))["date"])))
    doc["date"] = "2099-01-01T00:00:00+00:00"
    doc["environment"]["device"], doc["ceilings"] = CPU, None
    for impl in doc["impls"].values():
        for case in impl["cases"]:
            case["sol_us"] = case["read_once_us"] = case["read_once_loop_us"] = None
    path = tmp_path / "gemv-cpu.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture
def saved(monkeypatch) -> list[Figure]:
    """The figures `report` saves, kept for inspection."""
    figures = []
    savefig = Figure.savefig

    def keep(fig, *args, **kwargs):
        figures.append(fig)
        return savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    return figures


def summary(tmp_path: Path, saved: list[Figure], *paths: str) -> Figure:
    assert report.main(["--summary", "--plot", str(tmp_path / "summary.png"), *paths]) == 0
    fig = saved[-1]
    FigureCanvasAgg(fig).draw()  # pyplot closed it: a canvas of its own again, to measure its texts
    return fig


def panels(fig: Figure) -> list:
    return [ax for ax in fig.axes if ax.get_visible()]


def test_a_cpu_run_is_left_out_of_the_summary(tmp_path, saved, capsys):
    cpu = cpu_run(tmp_path)
    fig = summary(tmp_path, saved, *RESULTS, cpu)
    out = capsys.readouterr()
    assert cpu not in out.out and "gemv: " in out.out
    assert "left out 1 file(s) of other devices (cpu" in out.err
    assert "H100" in fig.get_suptitle() and "cpu" not in fig.get_suptitle()
    assert len(panels(fig)) == 4
    newest = {d["problem"]: d for d in report.newest_per_problem(report.timed_results(RESULTS))}
    for ax in panels(fig):  # no empty panel; a bar per impl of the newest file, each impl its own colour
        impls = newest[ax.get_title().split()[0]]["impls"].values()
        drawn = sum(any(c.get("stats") and c.get("sol_us") for c in r["cases"]) for r in impls)
        bars = [c for c in ax.containers if len(c)]
        assert len(bars) == drawn >= 2, ax.get_title()
        assert len({c.patches[0].get_facecolor() for c in bars}) == drawn, ax.get_title()


def test_the_device_is_chosen_by_name_and_a_cpu_run_is_refused(tmp_path, saved, capsys):
    cpu = cpu_run(tmp_path)
    out = tmp_path / "summary.png"
    assert report.main(["--plot", str(out), "--device", "h100", *RESULTS, cpu]) == 0
    assert "device: NVIDIA H100 80GB HBM3" in capsys.readouterr().out
    refused = [(["--device", "cpu", *RESULTS, cpu], f"report: no results of {CPU} with a speed of light"),
               (["--device", "B200", *RESULTS, cpu], "report: --device 'B200' matches 0 of the results' devices"),
               ([cpu], "report: no GPU results among the files")]
    for args, message in refused:
        out.unlink(missing_ok=True)
        assert report.main(["--plot", str(out), *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
        assert not out.exists()


def test_the_chart_says_lower_is_better(tmp_path, saved):
    fig = summary(tmp_path, saved, *RESULTS)
    assert all("lower is better" in ax.get_ylabel() for ax in panels(fig))


def test_the_log_axis_has_plain_tick_labels(tmp_path, saved):
    """1x, 1.5x, 10x: not matplotlib's 2x10^0 or 10^1."""
    fig = summary(tmp_path, saved, *RESULTS)
    for ax in panels(fig):
        low, high = ax.get_ylim()
        ticks = [t for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True)
                 if t.get_text() and low <= t.get_position()[1] <= high]
        labels = [t.get_text() for t in ticks]
        assert len(labels) >= 3 and all(re.fullmatch(r"\d+(\.\d+)?x", s) for s in labels), labels


def test_no_legend_hides_a_bar_label(tmp_path, saved):
    fig = summary(tmp_path, saved, *RESULTS)
    renderer = fig.canvas.get_renderer()
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends
    for ax in panels(fig):
        panel = ax.get_window_extent(renderer)
        for label in ax.texts:
            box = label.get_window_extent(renderer)
            assert not any(box.overlaps(legend.get_window_extent(renderer)) for legend in legends), label.get_text()
            assert panel.y0 <= box.y0 and box.y1 <= panel.y1, label.get_text()  # inside its panel
