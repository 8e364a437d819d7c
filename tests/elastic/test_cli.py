"""``dlsched simulate`` runs Pollux workloads (elastic jobs) on the one simulator and writes a
run directory that ``dlsched compare`` reads; ``dlsched list policies`` shows the elastic ones."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.trace.bundled import bundled_trace_path


def test_simulate_a_pollux_workload_and_compare(tmp_path: Path) -> None:
    runner = CliRunner()
    trace = str(bundled_trace_path("pollux_workload-6"))
    outs = []
    for policy in ("tiresias", "pollux"):
        out = tmp_path / policy
        result = runner.invoke(
            app,
            [
                "simulate",
                "--trace",
                trace,
                "--cluster",
                "pollux",
                "--policy",
                policy,
                "--subsample",
                "12",
                "--out",
                str(out),
                "--no-progress",
            ],
        )
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "summary.json").read_text())
        assert summary["job_kinds"] == {"rigid": 0, "elastic": 12, "ps": 0}
        assert summary["kind_policies"] == {"elastic": policy}
        assert summary["jobs"] == 12 and summary["avg_jct_s"] > 0
        assert summary["energy_kwh"] > 0
        assert {p.name for p in out.iterdir()} >= {"jobs.parquet", "summary.json", "config.json"}
        outs.append(str(out))
    compared = runner.invoke(app, ["compare", *outs])
    assert compared.exit_code == 0, compared.output
    assert "pollux" in compared.output and "tiresias" in compared.output


def test_list_policies_shows_elastic_ones() -> None:
    result = CliRunner().invoke(app, ["list", "policies"])
    assert result.exit_code == 0
    assert "ones" in result.output and "pollux" in result.output and "gavel" in result.output
