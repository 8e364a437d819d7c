"""Every run's summary carries its energy: idle draw of all GPU slots over the makespan plus the
busy increment per GPU-second held (no power management)."""

from __future__ import annotations

import pytest

from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.sim.config import PowerConfig, SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.schema import Trace


def test_energy_by_hand() -> None:
    # Two 4-GPU nodes. Job a: 2 GPUs for 100 s from t=0; job b: 4 GPUs for 50 s from t=20.
    trace = Trace.from_columns(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 20.0],
            "num_gpus": [2, 4],
            "duration": [100.0, 50.0],
        }
    )
    cluster = ClusterSpec("c", (NodeSpec("n0", 4), NodeSpec("n1", 4)))
    power = PowerConfig(idle_w_per_gpu=100.0, busy_extra_w_per_gpu=50.0)
    s = simulate(trace, cluster, SimConfig(power=power)).summary
    assert s["makespan_s"] == 100.0
    idle_j = 8 * 100.0 * 100.0
    busy_j = (2 * 100.0 + 4 * 50.0) * 50.0
    assert s["energy_idle_kwh"] == pytest.approx(idle_j / 3.6e6)
    assert s["energy_busy_kwh"] == pytest.approx(busy_j / 3.6e6)
    assert s["energy_kwh"] == pytest.approx((idle_j + busy_j) / 3.6e6)


def test_default_power_is_the_documented_dgx1_estimate_and_rejects_bad_values() -> None:
    assert PowerConfig().idle_w_per_gpu * 8 == pytest.approx(1750.0)
    assert (PowerConfig().idle_w_per_gpu + PowerConfig().busy_extra_w_per_gpu) * 8 == 3500.0
    with pytest.raises(ValueError, match="idle_w_per_gpu"):
        PowerConfig(idle_w_per_gpu=-1.0)
