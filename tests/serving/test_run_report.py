"""The report of a serving run: latency CDFs, replicas and GPU use over time."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.serving.replica_count import replica_steps
from dlsched.serving.run_report import alive_at, busy_share


def test_replica_steps_count_the_replicas_alive_after_each_change() -> None:
    steps = replica_steps([(0.0, 100.0), (50.0, math.inf), (50.0, 80.0), (90.0, 90.0)])
    assert steps == [[0.0, 1], [50.0, 3], [80.0, 2], [100.0, 1]]
    assert list(alive_at(steps, [0.0, 60.0, 85.0, 200.0])) == [1, 3, 2, 1]
    assert replica_steps([]) == []


def test_busy_share_is_busy_replicas_over_replicas_alive_per_minute() -> None:
    # Replica 0 works in the first minute only, replica 1 in both; the second minute also has
    # an idle sample of replica 0, which does not count as busy.
    timeline = pa.table(
        {
            "time": [1.0, 2.0, 61.0, 62.0],
            "replica": [0, 1, 1, 0],
            "running": [3, 1, 2, 0],
        }
    )
    starts, share = busy_share(timeline, [[0.0, 2]], 120.0)
    assert list(starts) == [0.0, 60.0]
    assert list(share) == [1.0, 0.5]


def test_analyze_a_serving_run_writes_its_report(tmp_path: Path) -> None:
    runner = CliRunner()
    run, report = tmp_path / "run", tmp_path / "report"
    args = ["serve-sim", "azure_code_3000", "--replicas", "2", "--out", str(run)]
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, ["analyze", str(run), "--out", str(report)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in report.iterdir()} == {
        "index.html",
        "stats.json",
        "latency.png",
        "replicas.png",
    }
    stats = json.loads((report / "stats.json").read_text())
    assert stats["replica_count"] == [[0.0, 2]]
    shares = [s for s in stats["busy_share"] if s is not None]
    assert shares and all(0 <= s <= 1 for s in shares) and max(shares) == 1.0
    summary = json.loads((run / "summary.json").read_text())
    assert stats["ttft_s"] == summary["ttft_s"]
    assert "latency.png" in (report / "index.html").read_text()
    refused = runner.invoke(
        app, ["analyze", str(run), "--out", str(tmp_path / "x"), "--cluster", "8x8"]
    )
    assert refused.exit_code == 2 and "--cluster does not apply" in refused.output
    again = runner.invoke(app, ["analyze", str(run), "--out", str(report)])
    assert again.exit_code == 2 and "--force" in again.output
