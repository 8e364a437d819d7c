"""``dlsched ps zoo`` and ``dlsched ps simulate`` end to end: the runs are standard run
directories that ``dlsched compare`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from dlsched.cli.main import app


def test_zoo_prints_every_model() -> None:
    result = CliRunner().invoke(app, ["ps", "zoo"])
    assert result.exit_code == 0
    assert "resnet50" in result.output and "138.36" in result.output


def test_simulate_writes_a_run_directory_per_policy(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["ps", "simulate", "--jobs", "5", "--cluster", "2x4", "--policy", "smd,fifo"]
    runner = CliRunner()
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == {"trace.parquet", "smd", "fifo"}
    trace = pq.read_table(out / "trace.parquet")
    assert trace.num_rows == 5 and set(trace.column("kind").to_pylist()) == {"ps"}
    for policy in ("smd", "fifo"):
        run = out / policy
        assert {p.name for p in run.iterdir()} >= {"jobs.parquet", "summary.json", "config.json"}
        summary = json.loads((run / "summary.json").read_text())
        assert summary["kind_policies"] == {"ps": policy}
        assert summary["jobs"] + summary["jobs_set_aside"] == 5
        rows = pq.read_table(run / "jobs.parquet").to_pylist()
        assert len(rows) == 5
        assert {r["status"] for r in rows} <= {"finished", "set_aside"}
        assert all(r["reason"] for r in rows if r["status"] == "set_aside")
    compared = runner.invoke(app, ["compare", str(out / "smd"), str(out / "fifo")])
    assert compared.exit_code == 0, compared.output
    assert "smd" in compared.output and "fifo" in compared.output


def test_bad_policy_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "x"
    result = CliRunner().invoke(
        app, ["ps", "simulate", "--jobs", "4", "--policy", "smd,nope", "--out", str(out)]
    )
    assert result.exit_code == 2
    assert "unknown policy 'nope'" in result.output
    assert "Traceback" not in result.output


def test_bad_policy_writes_nothing(tmp_path: Path) -> None:
    # A refused option leaves nothing behind: no trace, no run of the policies before it.
    out = tmp_path / "x"
    result = CliRunner().invoke(
        app, ["ps", "simulate", "--jobs", "4", "--policy", "smd,nope", "--out", str(out)]
    )
    assert result.exit_code == 2
    assert not out.exists(), sorted(p.name for p in out.iterdir())
