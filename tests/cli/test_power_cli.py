"""``dlsched simulate --power-manager``: the managed run, its comparison and bad options."""

from __future__ import annotations

import json
from pathlib import Path

from dlsched.trace.bundled import bundled_trace_path
from tests.cli.test_cli import invoke


def test_simulate_with_ces_reports_energy_and_the_always_on_comparison(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke(
        "simulate",
        "--trace",
        bundled_trace_path("vc_0e4a51"),
        "--cluster",
        "32x8",
        "--power-manager",
        "ces",
        "--power-opt",
        "forecaster=seasonal",
        "--wake-latency",
        "120",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    for key in (
        "energy_kwh",
        "energy_always_on_kwh",
        "energy_saved_kwh",
        "energy_saved_fraction",
        "mean_powered_off_nodes",
        "wakeups",
        "wakeups_per_day",
        "baseline_energy_kwh",
        "baseline_avg_queue_s",
        "extra_queue_s",
        "extra_queue_fraction",
        "forecast_smape",
    ):
        assert key in summary, key
    assert summary["power_manager"] == "ces"
    assert summary["wake_latency_s"] == 120.0
    assert summary["energy_kwh"] <= summary["energy_always_on_kwh"]
    config = json.loads((out / "config.json").read_text())
    assert config["sim"]["power"]["manager_options"] == {"forecaster": "seasonal"}
    shown = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert "energy_saved_fraction" in shown


def test_bad_power_options_are_named(tmp_path: Path) -> None:
    base = ["simulate", "--trace", bundled_trace_path("vc_0e4a51"), "--cluster", "32x8"]
    cases = {
        ("--power-manager", "sleepy"): "unknown power manager 'sleepy'",
        ("--power-manager", "reactive", "--power-opt", "timeout"): "--power-opt expects KEY=VALUE",
        (
            "--power-manager",
            "reactive",
            "--power-opt",
            "idle_timeout_s=60",
            "--power-opt",
            "idle_timeout_s=90",
        ): "--power-opt gives 'idle_timeout_s' twice",
        ("--power-manager", "reactive", "--power-opt", "idle_timeout_s=soon"): "idle_timeout_s",
        ("--power-manager", "ces", "--power-opt", "forecaster=oracle"): "unknown forecaster",
        (
            "--power-manager",
            "reactive",
            "--wake-latency",
            "-5",
        ): "wake_latency_s must be finite and >= 0",
    }
    for k, (args, message) in enumerate(cases.items()):
        out = tmp_path / f"run{k}"
        result = invoke(*base, *args, "--out", out)
        assert result.exit_code != 0, args
        assert message in result.output, (args, result.output)
        assert not out.exists(), "nothing written for a bad command"
