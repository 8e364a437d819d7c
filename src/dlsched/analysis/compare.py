"""Side-by-side comparison of run directories, with ratios to the first (the baseline)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.metrics.rundir import read_summary

COMPARED = (
    ("avg_jct_s", "avg JCT (s)"),
    ("median_jct_s", "median JCT (s)"),
    ("p95_jct_s", "p95 JCT (s)"),
    ("avg_queue_s", "avg queue (s)"),
    ("makespan_s", "makespan (s)"),
    ("gpu_utilization", "GPU util"),
    ("avg_slowdown", "avg slowdown"),
    ("preemptions", "preemptions"),
)


@dataclass(frozen=True)
class Comparison:
    """Rows: one per run (label, summary); ``ratio(i, key)`` is run i over run 0."""

    labels: tuple[str, ...]
    summaries: tuple[dict[str, Any], ...]

    def ratio(self, i: int, key: str) -> float | None:
        base = self.summaries[0].get(key)
        value = self.summaries[i].get(key)
        if not isinstance(base, int | float) or not isinstance(value, int | float) or base == 0:
            return None
        return float(value) / float(base)


def compare_runs(runs: list[str | Path]) -> Comparison:
    """Load the summaries of ``runs`` (errors name the offending directory)."""
    if not runs:
        raise ValueError("compare needs at least one run directory")
    summaries = tuple(read_summary(r) for r in runs)
    labels = tuple(Path(r).name or str(r) for r in runs)
    return Comparison(labels, summaries)


def format_value(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key == "gpu_utilization":
        return f"{value:.1%}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)
