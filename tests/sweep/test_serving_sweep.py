"""``dlsched sweep --requests``: a grid of serving runs, resumable, compared in one table."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner, Result

from dlsched.cli.main import app


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["sweep", *[str(a) for a in args]])


def _rows(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_serving_sweep_runs_every_cell_once_and_compares_them(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    grid = ["--requests", "azure_code_3000", "--scheduler", "vllm,sarathi"]
    result = invoke(*grid, "--replicas", "2", "--out", out, "--workers", "1")
    assert result.exit_code == 0, result.output
    assert "ran 2 cells, reused 0" in result.output
    rows = {r["scheduler"]: r for r in _rows(out)}
    assert set(rows) == {"vllm", "sarathi"}
    # Each row is its cell's summary: p99 time between tokens as the run directory says.
    summary = json.loads(
        (out / "cells" / "sarathi__round-robin__x1__r2__s0" / "summary.json").read_text()
    )
    assert float(rows["sarathi"]["tbt_p99_s"]) == summary["tbt_s"]["p99"]
    # Chunked prefill keeps decodes going beside long prompts (Sarathi-Serve's claim).
    assert float(rows["sarathi"]["tbt_p99_s"]) < float(rows["vllm"]["tbt_p99_s"])
    assert float(rows["sarathi"]["energy_kwh"]) > 0
    table = (out / "table.md").read_text()
    assert "| vllm | round-robin | 1.0 | 2 | 1 |" in table
    again = invoke(*grid, "--replicas", "2", "--load-scale", "1,0.5", "--out", out)
    assert again.exit_code == 0, again.output
    assert "ran 2 cells, reused 2" in again.output
    assert len(_rows(out)) == 4
    assert json.loads((out / "grid.json").read_text())["load_scales"] == [1.0, 0.5]


def test_serving_sweep_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    out = tmp_path / "bad"
    cases = [
        (["--requests", "azure_code_3000", "--policy", "fifo"], "--policy does not apply"),
        (["--scheduler", "sarathi", "--trace", "t.csv"], "--scheduler needs --requests"),
        (
            ["--requests", "azure_code_3000", "--scheduler", "static", "--router", "kv-aware"],
            "static scheduler cannot run under kv-aware",
        ),
        (["--requests", "azure_code_3000", "--replicas", "two"], "--replicas expects whole"),
        (["--requests", str(tmp_path / "none.csv")], "none.csv"),
    ]
    for args, message in cases:
        result = invoke(*args, "--out", out)
        assert result.exit_code == 2 and message in result.output, result.output
        assert not out.exists()
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "grid.json").write_text(json.dumps({"traces": []}))
    refused = invoke("--requests", "azure_code_3000", "--out", jobs)
    assert refused.exit_code == 2 and "sweep of job runs" in refused.output
