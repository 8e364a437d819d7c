"""``dlsched analyze RUN_DIR`` on a job run with queues: the per-tenant report (GPUs held and
borrowed over time against nominal quota, JCT and queueing per tenant); a job run without
queues is refused with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.tenancy.series import COHORT, QUEUE, queue_steps
from dlsched.trace.bundled import bundled_trace_path

TRACE = str(bundled_trace_path("philly_jobs_2000"))


def test_queue_steps_hold_the_last_value_to_the_end() -> None:
    q, c = QUEUE, COHORT
    series = pa.table(
        {
            "time": [0.0, 0.0, 0.0, 10.0, 10.0, 30.0, 30.0],
            "level": [q, q, c, q, c, q, c],
            "queue": ["a", "b", "ab", "a", "ab", "a", "ab"],
            "cohort": ["ab", "ab", "ab", "ab", "ab", "ab", "ab"],
            "used": [8.0, 0.0, 8.0, 4.0, 4.0, 0.0, 0.0],
            "nominal": [4.0, 4.0, 8.0, 4.0, 8.0, 4.0, 8.0],
            "borrowed": [4.0, 0.0, 4.0, 0.0, 0.0, 0.0, 0.0],
            "lent": [None, None, 4.0, None, 0.0, None, 0.0],
        }
    )
    a = queue_steps(series, "a", 50.0)
    assert list(a["time"]) == [0.0, 10.0, 30.0, 50.0]
    assert list(a["used"]) == [8.0, 4.0, 0.0, 0.0]
    assert list(a["borrowed"]) == [4.0, 0.0, 0.0, 0.0]
    assert list(a["lent"]) == [0.0, 0.0, 0.0, 0.0]
    b = queue_steps(series, "b", 50.0)
    assert list(b["time"]) == [0.0, 10.0, 30.0, 50.0]
    assert list(b["lent"]) == [4.0, 0.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    base = ["simulate", "--trace", TRACE, "--cluster", "philly-vcs", "--no-partitions"]
    with_queues, without = root / "queues", root / "plain"
    r = CliRunner().invoke(
        app, [*base, "--queues", "philly-cohort", "--out", str(with_queues), "--no-progress"]
    )
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, [*base, "--out", str(without), "--no-progress"])
    assert r.exit_code == 0, r.output
    return with_queues, without


def test_analyze_a_run_with_queues_writes_the_tenant_report(
    tmp_path: Path, runs: tuple[Path, Path]
) -> None:
    run = runs[0]
    report = tmp_path / "report"
    r = CliRunner().invoke(app, ["analyze", str(run), "--out", str(report)])
    assert r.exit_code == 0, r.output
    assert "job run with queues" in r.output
    assert {p.name for p in report.iterdir()} == {
        "index.html",
        "stats.json",
        "jct_cdf.png",
        "queueing_cdf.png",
        "timeline.png",
        "tenants",
    }
    tenants = report / "tenants"
    for png in ("usage.png", "jct.png"):
        assert (tenants / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((run / "summary.json").read_text())
    stats = json.loads((tenants / "stats.json").read_text())
    assert stats["tenants"] == summary["tenants"]
    assert stats["tenant_fairness_jain"] == summary["tenant_fairness_jain"]
    page = (tenants / "index.html").read_text()
    assert page.count("<tr>") == len(summary["tenants"]) + 1
    assert 'src="usage.png"' in page and 'src="jct.png"' in page
    idle = [n for n, t in summary["tenants"].items() if t["avg_jct_s"] is None]
    for name in idle:  # a tenant without finished jobs has no JCT: n/a, never 0
        row = page.split(f"<td>{name}</td>", 1)[1].split("</tr>", 1)[0]
        assert "n/a" in row
    again = CliRunner().invoke(app, ["analyze", str(run), "--out", str(report)])
    assert again.exit_code == 2 and "--force" in again.output
    refused = CliRunner().invoke(
        app, ["analyze", str(run), "--out", str(tmp_path / "x"), "--cluster", "8x8"]
    )
    assert refused.exit_code == 2 and "--cluster does not apply to a job run" in refused.output


def test_analyze_a_run_without_queues_gets_the_run_report_alone(
    tmp_path: Path, runs: tuple[Path, Path]
) -> None:
    out = tmp_path / "report"
    r = CliRunner().invoke(app, ["analyze", str(runs[1]), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "index.html").is_file() and (out / "jct_cdf.png").is_file()
    assert not (out / "tenants").exists()
    assert "Traceback" not in r.output


def test_analyze_a_series_of_an_earlier_version_is_refused(
    tmp_path: Path, runs: tuple[Path, Path]
) -> None:
    # Before cohort rows, tenants.parquet had no level or cohort column.
    run = tmp_path / "old"
    shutil.copytree(runs[0], run)
    table = pq.read_table(run / "tenants.parquet").drop_columns(["level", "cohort"])
    pq.write_table(table, run / "tenants.parquet")
    out = tmp_path / "report"
    r = CliRunner().invoke(app, ["analyze", str(run), "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert "tenants.parquet: no column level, cohort" in r.output
    assert "Traceback" not in r.output and not out.exists()
