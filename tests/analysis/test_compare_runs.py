"""``dlsched analyze RUN_DIR RUN_DIR ...`` and ``dlsched analyze SWEEP_DIR``: one line per run or
per sweep group (its seeds pooled) in the JCT and queueing-delay CDFs and in utilization and
queue length over time, labelled by the configuration fields that differ, and a table per run
or group. Every run is a real ``simulate``/``sweep``/``serve-sim`` run of a bundled trace, and
what stats.json says a figure draws is checked against the runs' own files."""

from __future__ import annotations

import itertools
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from dlsched.analysis.characterize import CDF_PROBABILITIES
from dlsched.analysis.comparison_report import write_comparison_report
from dlsched.analysis.run_comparison import MAX_LINES, compare_run_dirs
from dlsched.analysis.run_labels import flat_fields, group_fields, read_config, run_labels
from tests.analysis.run_dirs import VC_SLICE, invoke, ok, rigid_run, serving_run, summary_of, sweep

REPORT_FILES = {"index.html", "stats.json", "jct_cdf.png", "queueing_cdf.png", "timeline.png"}
POLICIES = ("fifo", "sjf", "tiresias")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compare")


@pytest.fixture(scope="module")
def runs(root: Path) -> list[Path]:
    """The bundled Philly VC slice under three policies."""
    return [rigid_run(root / policy, policy) for policy in POLICIES]


@pytest.fixture(scope="module")
def policy_sweep(root: Path) -> Path:
    """Two policies × two seeds; random placement, so that the seeds differ."""
    return sweep(
        root / "sweep", "--trace", VC_SLICE, "--cluster", "32x8", "--policy", "fifo,sjf",
        "--seed", "0,1", "--placement", "random",
    )  # fmt: skip


def stats_of(report: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report / "stats.json").read_text())
    return data


def finished(run: Path, column: str) -> np.ndarray:
    jobs = pq.read_table(run / "jobs.parquet", columns=["status", column]).to_pydict()
    return np.array(
        [v for s, v in zip(jobs["status"], jobs[column], strict=True) if s == "finished"],
        dtype=float,
    )


def check_curve(curve: dict[str, Any], sample: np.ndarray) -> None:
    """A CDF line is exactly the sample's: count, mean and every quantile of the grid."""
    assert curve["available"] is True
    assert curve["count"] == len(sample)
    assert curve["mean"] == pytest.approx(sample.mean())
    expected = np.quantile(np.sort(sample), CDF_PROBABILITIES, method="inverted_cdf")
    assert curve["quantiles"] == pytest.approx(expected.tolist())


def utilization_bins(run: Path, bin_s: float, first: float) -> list[float]:
    """The run's share of GPUs busy averaged per bin, from its own one-partition timeline:
    each row holds until the next (the last until the end of its bin), time since the first
    row."""
    timeline = pq.read_table(run / "timeline.parquet").to_pydict()
    t = np.array(timeline["time_s"], dtype=float)
    t -= t[0]
    share = np.array(timeline["busy_gpus"], dtype=float) / np.array(timeline["total_gpus"])
    cumulative = np.concatenate([[0.0], np.cumsum(np.diff(t) * share[:-1])])

    def integral(x: float) -> float:
        i = int(np.searchsorted(t, x, side="right")) - 1
        return float(cumulative[i] + (x - t[i]) * share[i])

    covered = max(1, math.ceil(t[-1] / bin_s))
    edges = [first + bin_s * i for i in range(covered + 1)]
    return [(integral(b) - integral(a)) / bin_s for a, b in itertools.pairwise(edges)]


def test_three_policies_give_three_lines_labelled_by_policy(
    runs: list[Path], tmp_path: Path
) -> None:
    report = tmp_path / "report"
    done = ok(invoke("analyze", *runs, "--out", report))
    assert done.output.strip() == (
        f"compared 3 job runs differing in policy; wrote {report / 'index.html'}"
    )
    assert {p.name for p in report.iterdir()} == REPORT_FILES
    stats = stats_of(report)
    assert stats["source"] == "runs" and stats["fields"] == ["policy"]
    assert stats["figures"] == {
        "jct": "jct_cdf.png",
        "queueing": "queueing_cdf.png",
        "timeline": "timeline.png",
    }
    lines = stats["lines"]
    assert [line["label"] for line in lines] == list(POLICIES)
    assert [line["fields"] for line in lines] == [{"policy": p} for p in POLICIES]
    bins = stats["timeline_bins"]
    for line, run in zip(lines, runs, strict=True):
        summary = summary_of(run)
        assert line["runs"] == [str(run)] and line["seeds"] is None and line["in_figures"]
        jct, queue = finished(run, "jct_s"), finished(run, "queue_s")
        check_curve(line["jct"], jct)
        check_curve(line["queueing"], queue)
        # The table row of one run is its summary's.
        assert line["jobs"] == summary["jobs"] == len(jct)
        for key in ("avg_jct_s", "median_jct_s", "p95_jct_s", "avg_queue_s", "gpu_utilization"):
            assert line[key] == pytest.approx(summary[key]), key
        timeline = line["timeline"]
        assert len(timeline["utilization_mean"]) == bins["bins"]
        expected = utilization_bins(run, bins["bin_s"], bins["first_bin_s"])
        drawn = timeline["utilization_mean"]
        assert drawn[: len(expected)] == pytest.approx(expected, abs=1e-6)
        # Past the run's own end a line has no value, never 0.
        assert all(v is None for v in drawn[len(expected) :])
        waiting = pq.read_table(run / "timeline.parquet").column("pending_jobs").to_numpy()
        assert timeline["peak_waiting_jobs"] == waiting.max() > 0
    page = (report / "index.html").read_text()
    for name in REPORT_FILES - {"index.html", "stats.json"}:
        assert f'src="{name}"' in page
    for policy in POLICIES:
        assert f"<td>{policy}</td>" in page
    assert "Not available" not in page


def test_a_sweep_gets_one_line_per_group_with_its_seeds_pooled(
    policy_sweep: Path, tmp_path: Path
) -> None:
    report = tmp_path / "report"
    done = ok(invoke("analyze", policy_sweep, "--out", report))
    assert done.output.strip() == (
        f"{policy_sweep}: sweep, 2 groups of 4 finished cells (of 4) differing in policy; "
        f"wrote {report / 'index.html'}"
    )
    stats = stats_of(report)
    assert stats["source"] == "sweep" and stats["sweep"] == str(policy_sweep)
    assert (stats["cells_finished"], stats["cells_in_grid"]) == (4, 4)
    assert stats["fields"] == ["policy"]
    lines = stats["lines"]
    assert [line["label"] for line in lines] == ["fifo", "sjf"]
    # The groups are table.md's: one row per policy, over two seeds.
    table = (policy_sweep / "table.md").read_text().splitlines()[4:]
    assert [row.split(" | ")[2] for row in table] == ["fifo", "sjf"]
    assert [row.split(" | ")[4] for row in table] == ["2", "2"]
    for line in lines:
        cells = [Path(r) for r in line["runs"]]
        assert line["seeds"] == [0, 1]
        assert [c.name for c in cells] == sorted(
            c.name for c in (policy_sweep / "cells").iterdir() if f"__{line['label']}__" in c.name
        )
        summaries = [summary_of(c) for c in cells]
        assert line["jobs"] == sum(s["jobs"] for s in summaries) == 2 * 990
        jct = np.concatenate([finished(c, "jct_s") for c in cells])
        queue = np.concatenate([finished(c, "queue_s") for c in cells])
        check_curve(line["jct"], jct)
        check_curve(line["queueing"], queue)
        assert line["avg_jct_s"] == pytest.approx(jct.mean())
        assert line["median_jct_s"] == pytest.approx(np.median(jct))
        assert line["p95_jct_s"] == pytest.approx(np.percentile(jct, 95))
        assert line["avg_queue_s"] == pytest.approx(queue.mean())
        held = sum(s["gpu_seconds"] for s in summaries)
        capacity = sum(s["partition_gpus_used"] * s["makespan_s"] for s in summaries)
        assert line["gpu_utilization"] == pytest.approx(held / capacity)
    # The seeds differ (random placement), so pooling is not one seed counted twice.
    fifo_cells = [Path(r) for r in lines[0]["runs"]]
    assert summary_of(fifo_cells[0])["avg_jct_s"] != summary_of(fifo_cells[1])["avg_jct_s"]
    page = (report / "index.html").read_text()
    assert "<td>0, 1</td>" in page and "4 / 4" in page

    # An unfinished cell leaves its group with the seeds that finished.
    partial = tmp_path / "partial"
    shutil.copytree(policy_sweep, partial)
    shutil.rmtree(next((partial / "cells").glob("*__sjf__random__s1")))
    ok(invoke("analyze", partial, "--out", tmp_path / "partial-report"))
    stats = stats_of(tmp_path / "partial-report")
    assert (stats["cells_finished"], stats["cells_in_grid"]) == (3, 4)
    assert [(line["label"], line["seeds"], line["jobs"]) for line in stats["lines"]] == [
        ("fifo", [0, 1], 1980),
        ("sjf", [0], 990),
    ]


def test_beyond_ten_lines_the_figures_draw_the_first_ten(runs: list[Path], tmp_path: Path) -> None:
    comparison = compare_run_dirs(runs * 4)
    assert len(comparison.lines) == 12 > MAX_LINES
    # Identical configurations repeat a label: its position tells them apart.
    assert [line.label for line in comparison.lines[:4]] == [
        "fifo #1",
        "sjf #2",
        "tiresias #3",
        "fifo #4",
    ]
    write_comparison_report(comparison, tmp_path / "report")
    stats = stats_of(tmp_path / "report")
    assert [line["in_figures"] for line in stats["lines"]] == [True] * 10 + [False] * 2
    assert stats["max_lines_per_figure"] == 10
    page = (tmp_path / "report" / "index.html").read_text()
    assert "the first 10 of 12 lines, in the order given; the table lists all" in page
    assert page.count("<tr><td>tiresias #12</td>") == 3  # the table and both CDF tables


def test_labels_show_only_the_fields_that_differ(runs: list[Path]) -> None:
    base = flat_fields(read_config(runs[0]))
    assert base["policy"] == "fifo" and base["placement"] == "consolidate"
    other = {**base, "policy": "sjf", "placement": "random", "trace": "/elsewhere/other.csv"}
    labels = run_labels([base, other], ["a", "b"])
    assert labels.fields == ("policy", "placement", "trace")
    assert labels.labels == ("fifo / consolidate / vc_0e4a51.csv", "sjf / random / other.csv")
    # A field only one run has is n/a in the other; no field differing: directory names.
    extra = {**base, "policy_options.thresholds": "57600"}
    assert run_labels([base, extra], ["a", "b"]).labels == ("n/a", "57600")
    assert run_labels([base, dict(base)], ["a", "b"]).labels == ("a", "b")
    # A sweep group is labelled by what its seeds agree on, never by the seed it pools.
    seeds = [{**base, "seed": s} for s in (0, 1)]
    fields = group_fields([seeds, [{**base, "policy": "sjf", "seed": 0}]], pooled=("seed",))
    assert run_labels(fields, ["a", "b"]).labels == ("fifo", "sjf")


def test_one_run_keeps_the_single_run_report(runs: list[Path], tmp_path: Path) -> None:
    report = tmp_path / "report"
    assert ok(invoke("analyze", runs[0], "--out", report)).output.startswith(f"{runs[0]}: job run;")
    stats = stats_of(report)
    assert stats["dlsched_run_report"] == 1 and "partitions" in stats["sections"]
    # A comparison replaces a run report only with --force (and the other way round).
    refused = invoke("analyze", *runs, "--out", report)
    assert refused.exit_code == 2 and "--force" in refused.stderr
    ok(invoke("analyze", *runs, "--out", report, "--force"))
    assert stats_of(report)["dlsched_comparison_report"] == 1
    ok(invoke("analyze", runs[0], "--out", report, "--force"))
    assert "dlsched_run_report" in stats_of(report)


def refused(*args: str | Path) -> str:
    """The one line a refused analyze printed (exit 2, nothing written)."""
    done = invoke("analyze", *args)
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith("error: ")
    return line[len("error: ") :]


def test_bad_inputs_are_refused_in_one_line(
    runs: list[Path], policy_sweep: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    serve = serving_run(tmp_path / "serve")
    assert refused(runs[0], serve, "--out", out) == (
        f"cannot compare serving runs ({serve}) with job-scheduling runs"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    neither = (
        f"{empty}: neither a run directory (no summary.json) nor a sweep directory (no grid.json)"
    )
    assert refused(empty, "--out", out) == neither
    assert refused(runs[0], empty, "--out", out) == neither
    assert refused(runs[0], VC_SLICE, "--out", out) == (
        f"{VC_SLICE}: not a run directory (several arguments are compared)"
    )
    assert refused(runs[0], tmp_path / "nowhere", "--out", out) == (
        f"{tmp_path / 'nowhere'}: no such run directory"
    )
    assert refused(runs[0], runs[0], "--out", out) == f"{runs[0]}: given twice"
    assert refused(runs[0], policy_sweep, "--out", out) == (
        f"{policy_sweep}: a sweep directory; analyze it alone, not among runs"
    )
    assert refused(*runs, "--cluster", "8x8", "--out", out) == (
        "--cluster does not apply to job run directories"
    )
    assert refused(policy_sweep, "--format", "philly", "--out", out) == (
        "--format does not apply to a sweep directory"
    )
    unstarted = tmp_path / "unstarted"
    unstarted.mkdir()
    shutil.copy(policy_sweep / "grid.json", unstarted / "grid.json")
    assert refused(unstarted, "--out", out) == (
        f"{unstarted}: a sweep with no finished cell (no {unstarted / 'cells'}/*/summary.json); "
        "run or resume it with dlsched sweep first"
    )
    assert not out.exists()
