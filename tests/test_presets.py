"""The helios-philly preset: calibrated load and the QSSF-vs-FIFO bar of the Helios evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.cluster.parse import resolve_cluster
from dlsched.presets import (
    HELIOS_ARTIFACT_FIFO_QUEUE_S,
    HELIOS_PHILLY_LOAD_SCALE,
    get_preset,
    presets,
)
from dlsched.runner import load_trace
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate


def run_preset(policy: str, estimator: str | None = None) -> dict[str, float]:
    exp = get_preset("helios-philly").experiment(SimConfig(policy=policy, estimator=estimator))
    result = simulate(load_trace(exp), resolve_cluster(exp.cluster), exp.sim)
    return result.summary


def test_preset_selects_the_helios_setup() -> None:
    preset = presets()["helios-philly"]
    exp = preset.experiment(SimConfig(policy="fifo", placement="spread"))
    assert exp.cluster == "philly-vcs"
    assert exp.sim.placement == "consolidate"
    assert exp.selection.gpu_only
    assert exp.selection.submit_scale == pytest.approx(1 / HELIOS_PHILLY_LOAD_SCALE)
    trace = load_trace(exp)
    assert len(trace) == 68_510
    with pytest.raises(ValueError, match="load scale"):
        preset.experiment(SimConfig(), load_scale=0.0)


def test_calibrated_load_reproduces_the_artifact_fifo_queueing_and_qssf_halves_jct() -> None:
    fifo = run_preset("fifo")
    qssf = run_preset("qssf", "noisy-oracle")
    # The calibration targets the artifact's FIFO queueing (56,531 s); within 5%.
    assert fifo["avg_queue_s"] == pytest.approx(HELIOS_ARTIFACT_FIFO_QUEUE_S, rel=0.05)
    # Helios bar: QSSF (noisy oracle, seed 0) at least halves FIFO's average JCT.
    assert fifo["avg_jct_s"] / qssf["avg_jct_s"] >= 2.0
    # The VCs the evaluation drops are set aside and counted, not lost.
    assert fifo["jobs_set_aside"] == 7
    assert fifo["jobs"] == 68_503


def test_cli_preset(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "qssf"
    result = runner.invoke(
        app,
        [
            "simulate",
            "--preset",
            "helios-philly",
            "--policy",
            "qssf",
            "--estimator",
            "noisy-oracle",
            "--out",
            str(out),
            "--load-scale",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["selection"]["submit_scale"] == pytest.approx(0.5)
    bad = runner.invoke(
        app, ["simulate", "--preset", "helios-philly", "--trace", "x", "--out", str(out)]
    )
    assert bad.exit_code == 2
    assert "drop --trace" in bad.output
