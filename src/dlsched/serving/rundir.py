"""A serving run as a standard run directory: ``jobs.parquet`` holds one row per request
(:func:`~dlsched.serving.metrics.request_table`), ``timeline.parquet`` the replicas' sampled
state, ``summary.json`` the serving figures (``"kind": "serving"``), ``config.json`` what ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from dlsched.metrics.rundir import write_run
from dlsched.serving.cluster import ServingRun
from dlsched.serving.metrics import Slo, request_table, serving_summary


def samples_table(run: ServingRun) -> pa.Table:
    """The replicas' sampled state: time, replica, running, waiting, KV fraction in use."""
    s = run.samples
    return pa.table(
        {
            "time": pa.array(s.time, pa.float64()),
            "replica": pa.array(s.replica, pa.int32()),
            "running": pa.array(s.running, pa.int32()),
            "waiting": pa.array(s.waiting, pa.int32()),
            "kv_used_fraction": pa.array(s.kv_used, pa.float64()),
        }
    )


def write_serving_run(
    out: str | Path,
    run: ServingRun,
    slo: Slo,
    config: dict[str, Any],
    force: bool = False,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``run`` to the run directory ``out`` (atomically; an existing run is replaced
    only with ``force``) and return its summary, with ``extra`` figures added (a run beside
    training: the training side's, and the cluster's utilization and energy); ``energy_kwh``
    repeats ``energy_j`` in the unit job runs report."""
    summary = serving_summary(run, slo) | (extra or {})
    training = summary.get("training")
    if isinstance(training, dict):
        summary["gpu_utilization"] = training.get("gpu_utilization")
        energy = training.get("energy_kwh")
        summary["energy_j"] = None if energy is None else energy * 3.6e6
    joules = summary.get("energy_j")
    summary["energy_kwh"] = None if joules is None else joules / 3.6e6
    write_run(out, request_table(run), samples_table(run), summary, config, force)
    return summary
