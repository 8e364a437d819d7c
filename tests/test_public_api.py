"""The curated public API: exactly these names, each importable and documented."""

from __future__ import annotations

import types

import dlsched

EXPECTED = {
    "CheckpointConfig",
    "ClusterSpec",
    "Experiment",
    "FaultConfig",
    "JobSpec",
    "NodeSpec",
    "RunResult",
    "Selection",
    "SimConfig",
    "Simulator",
    "Trace",
    "__version__",
    "create_placer",
    "create_policy",
    "placers",
    "policies",
    "read_parquet",
    "read_trace",
    "resolve_cluster",
    "run_experiment",
    "simulate",
    "write_parquet",
}


def test_exported_names_are_exactly_the_curated_set() -> None:
    assert set(dlsched.__all__) == EXPECTED
    public = {
        n
        for n, v in vars(dlsched).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public == EXPECTED - {"__version__"}


def test_every_export_is_documented() -> None:
    for name in EXPECTED - {"__version__"}:
        obj = getattr(dlsched, name)
        assert obj.__doc__ and obj.__doc__.strip(), f"{name} has no docstring"
