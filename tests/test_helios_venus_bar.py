"""Issue bar: on a generated 30-day Venus-like trace, QSSF with the combined estimator lands
within 1.3x of oracle SJF on average JCT and at least 2x better than FIFO; the estimator report
and the characterization report both run on the generated trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli.main import app


@pytest.fixture(scope="module")
def venus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("venus") / "synth"
    result = CliRunner().invoke(
        app, ["trace", "synth", "--like", "venus", "--days", "30", "--seed", "0", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def simulate(venus: Path, out: Path, policy: str, *extra: str) -> dict[str, float]:
    args = ["simulate", "--trace", str(venus / "trace.parquet"),
            "--cluster", str(venus / "cluster.toml"), "--policy", policy,
            "--out", str(out), "--no-progress", *extra]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary: dict[str, float] = json.loads((out / "summary.json").read_text())
    return summary


def test_qssf_combined_is_near_sjf_and_far_better_than_fifo(venus: Path, tmp_path: Path) -> None:
    fifo = simulate(venus, tmp_path / "fifo", "fifo")
    sjf = simulate(venus, tmp_path / "sjf", "sjf")
    qssf = simulate(venus, tmp_path / "qssf", "qssf", "--estimator", "combined")
    assert fifo["jobs_set_aside"] == sjf["jobs_set_aside"] == qssf["jobs_set_aside"] == 0
    assert qssf["avg_jct_s"] <= 1.3 * sjf["avg_jct_s"]
    assert fifo["avg_jct_s"] >= 2.0 * qssf["avg_jct_s"]


def test_estimator_report_and_characterization_run_on_it(venus: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "predict",
            "eval",
            str(venus / "trace.parquet"),
            "--estimator",
            "history,combined",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "history" in result.output and "combined" in result.output
    report = tmp_path / "report"
    result = runner.invoke(app, ["analyze", str(venus / "trace.parquet"), "--out", str(report)])
    assert result.exit_code == 0, result.output
    stats = json.loads((report / "stats.json").read_text())
    assert "recurrence" in json.dumps(stats)
    assert (report / "users.png").stat().st_size > 10_000
