"""``dlsched ps zoo`` and ``dlsched ps simulate`` end to end."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli.main import app


def test_zoo_prints_every_model() -> None:
    result = CliRunner().invoke(app, ["ps", "zoo"])
    assert result.exit_code == 0
    assert "resnet50" in result.output and "138.36" in result.output


def test_simulate_writes_a_run_directory(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["ps", "simulate", "--jobs", "5", "--machines", "2", "--policy", "smd,fifo"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary) == {"smd", "fifo"}
    assert summary["smd"]["jct_over_smd"] == 1.0
    with open(out / "jobs.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 10
    assert {r["status"] for r in rows} <= {"completed", "infeasible"}
    assert all(r["reason"] for r in rows if r["status"] == "infeasible")


def test_bad_policy_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["ps", "simulate", "--jobs", "4", "--policy", "nope", "--out", str(tmp_path / "x")]
    )
    assert result.exit_code == 2
    assert "unknown PS policy" in result.output
