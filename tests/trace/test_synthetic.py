"""The synthetic generator: deterministic, shaped as documented, fast."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.trace import synthetic_trace
from dlsched.trace.synth.philly_like import PHILLY_ARRIVAL_RATE


def test_same_seed_same_trace_other_seed_other_trace() -> None:
    a = synthetic_trace(2000, seed=3, vcs=["x", "y"])
    b = synthetic_trace(2000, seed=3, vcs=["x", "y"])
    c = synthetic_trace(2000, seed=4, vcs=["x", "y"])
    assert a.table.equals(b.table)
    assert not a.table.equals(c.table)


def test_shape_follows_the_philly_defaults() -> None:
    trace = synthetic_trace(200_000, seed=0)
    submit = trace.column("submit_time").to_numpy()
    assert np.all(np.diff(submit) >= 0) and submit[0] > 0
    assert len(trace) / submit[-1] == pytest.approx(PHILLY_ARRIVAL_RATE, rel=0.02)
    gpus = trace.column("num_gpus").to_numpy()
    assert np.mean(gpus == 1) == pytest.approx(0.9317, abs=0.005)
    assert set(np.unique(gpus)) <= {1, 2, 4, 8, 16, 32, 64, 128}
    log_duration = np.log(trace.column("duration").to_numpy())
    assert np.mean(log_duration) == pytest.approx(6.79, abs=0.02)
    assert np.std(log_duration) == pytest.approx(2.16, abs=0.02)
    assert trace.column("vc").null_count == len(trace)
    assert trace.column("job_id")[0].as_py() == "syn-0"
    assert len(set(trace.column("job_id").to_pylist())) == len(trace)


def test_parameters_are_honoured() -> None:
    trace = synthetic_trace(
        5000,
        seed=1,
        arrival_rate=2.0,
        gpu_counts=[(4, 1.0)],
        log_duration_mean=0.0,
        log_duration_sigma=0.0,
        vcs=["only"],
        id_prefix="t",
    )
    assert set(trace.column("num_gpus").to_pylist()) == {4}
    assert set(trace.column("duration").to_pylist()) == {1.0}
    assert set(trace.column("vc").to_pylist()) == {"only"}
    assert len(trace) / trace.column("submit_time")[-1].as_py() == pytest.approx(2.0, rel=0.1)
    assert trace.column("job_id")[4999].as_py() == "t4999"


def test_zero_jobs() -> None:
    assert len(synthetic_trace(0, seed=0)) == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_jobs": -1},
        {"arrival_rate": 0.0},
        {"gpu_counts": []},
        {"gpu_counts": [(0, 1.0)]},
        {"log_duration_sigma": -1.0},
        {"vcs": "abc"},
        {"vcs": []},
    ],
)
def test_bad_arguments(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"n_jobs": 10, "seed": 0, **kwargs}
    with pytest.raises(ValueError):
        synthetic_trace(**args)  # type: ignore[arg-type]


def test_a_million_jobs_are_generated() -> None:
    """Generation time is measured in bench/sim_throughput.py, not asserted here."""
    trace = synthetic_trace(1_000_000, seed=5, vcs=["a", "b", "c"])
    assert len(trace) == 1_000_000
    assert set(trace.column("vc").to_pylist()) == {"a", "b", "c"}
