"""The CES bar of issue #4 on the helios-philly preset: with FIFO and with QSSF, CES saves at
least 10% of the always-on energy while average queueing grows by at most 5%; the reactive
baseline is run beside it (reported, no bar)."""

from __future__ import annotations

from typing import Any

import pytest

from dlsched.cluster.parse import resolve_cluster
from dlsched.presets import get_preset
from dlsched.runner import load_trace
from dlsched.sim.config import PowerConfig, SimConfig
from dlsched.sim.simulator import simulate


def run_managed(policy: str, manager: str) -> dict[str, Any]:
    estimator = "noisy-oracle" if policy == "qssf" else None
    config = SimConfig(policy=policy, estimator=estimator, power=PowerConfig(manager=manager))
    exp = get_preset("helios-philly").experiment(config)
    return simulate(load_trace(exp), resolve_cluster(exp.cluster), exp.sim).summary


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("policy", ["fifo", "qssf"])
def test_ces_saves_energy_without_adding_queueing(policy: str) -> None:
    s = run_managed(policy, "ces")
    assert s["jobs"] == 68_503
    assert s["energy_saved_fraction"] >= 0.10
    assert s["energy_saved_vs_baseline_fraction"] >= 0.10
    assert s["extra_queue_fraction"] <= 0.05
    assert s["forecast_model_steps"] > 0, "the LightGBM forecaster was trained during the run"
    assert s["mean_powered_off_nodes"] > 0 and s["wakeups"] > 0


@pytest.mark.slow
def test_reactive_baseline_runs_on_the_same_preset() -> None:
    s = run_managed("fifo", "reactive")
    assert s["jobs"] == 68_503
    assert s["energy_kwh"] < s["baseline_energy_kwh"]
    assert abs(s["extra_queue_fraction"]) <= 0.05
