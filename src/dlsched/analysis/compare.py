"""Side-by-side comparison of run directories, with ratios to the first (the baseline)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.cluster.topology import TIER_NAMES
from dlsched.metrics.rundir import read_summary
from dlsched.metrics.summary import topology_figures

COMPARED = (
    ("avg_jct_s", "avg JCT (s)"),
    ("median_jct_s", "median JCT (s)"),
    ("p95_jct_s", "p95 JCT (s)"),
    ("avg_queue_s", "avg queue (s)"),
    ("makespan_s", "makespan (s)"),
    ("gpu_utilization", "GPU util"),
    ("avg_slowdown", "avg slowdown"),
    ("preemptions", "preemptions"),
    ("tenant_fairness_jain", "Jain's index (tenants)"),
    ("tenant_fair_share_max_deviation", "max fair-share deviation"),
)
SERVING_COMPARED = (
    ("ttft_s.p50", "TTFT p50 (s)"),
    ("ttft_s.p99", "TTFT p99 (s)"),
    ("tbt_s.p99", "TBT p99 (s)"),
    ("e2e_s.p50", "E2E p50 (s)"),
    ("e2e_s.p99", "E2E p99 (s)"),
    ("slo_attainment", "SLO attainment"),
    ("goodput_rps", "goodput (req/s)"),
    ("throughput_rps", "throughput (req/s)"),
    ("preemptions", "preemptions"),
    ("gpu_utilization", "GPU util"),
    ("energy_kwh", "energy (kWh)"),
)
SERVING = "serving"

TENANT_FIGURES = (
    ("avg_jct_s", "avg JCT (s)"),
    ("avg_queue_s", "avg queue (s)"),
    ("borrowed_gpus_avg", "GPUs borrowed"),
)
"""Per-tenant figures ``compare`` shows for every tenant of a run with queues."""

TOPOLOGY_ROWS = (
    ("comm_model", "comm model"),
    ("fragmented_jobs", "fragmented jobs"),
    ("starts_by_tier", "starts node/rack/block/cluster"),
    ("multi_node_starts", "multi-node starts"),
    ("rack_spanning_share", "multi-node starts spanning racks"),
)
"""(key, title) of the topology figures ``compare`` shows for every job run."""
NOT_MODELLED = "n/a"


@dataclass(frozen=True)
class Comparison:
    """Rows: one per run (label, summary); ``ratio(i, key)`` is run i over run 0."""

    labels: tuple[str, ...]
    summaries: tuple[dict[str, Any], ...]

    @property
    def serving(self) -> bool:
        """Whether the runs are serving runs (``dlsched serve-sim``) rather than job runs."""
        return self.summaries[0].get("kind") == SERVING

    @property
    def metrics(self) -> tuple[tuple[str, str], ...]:
        """(key, title) of the figures compared: a dotted key names a nested figure."""
        return SERVING_COMPARED if self.serving else COMPARED

    @property
    def count_key(self) -> str:
        """The summary key counting what the runs simulated (jobs or requests)."""
        return "requests" if self.serving else "jobs"

    def value(self, i: int, key: str) -> Any:
        """Figure ``key`` (dotted for a nested one) of run i; None when absent."""
        found: Any = self.summaries[i]
        for part in key.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        return found

    def ratio(self, i: int, key: str) -> float | None:
        base = self.value(0, key)
        value = self.value(i, key)
        if not isinstance(base, int | float) or not isinstance(value, int | float) or base == 0:
            return None
        return float(value) / float(base)


def tenant_rows(summaries: tuple[dict[str, Any], ...]) -> list[tuple[str, list[Any]]]:
    """(title, one value per run) for each tenant of any run with queues: its figures of
    :data:`TENANT_FIGURES` and its evictions by cause (None where a run has no such tenant)."""
    names: dict[str, None] = {}
    for s in summaries:
        names.update(dict.fromkeys(s.get("tenants") or {}))
    causes: dict[str, None] = {}
    for s in summaries:
        causes.update(dict.fromkeys(s.get("preemptions_by_cause") or {}))
    rows: list[tuple[str, list[Any]]] = [
        (f"preemptions: {c}", [(s.get("preemptions_by_cause") or {}).get(c) for s in summaries])
        for c in causes
    ]
    for name in names:
        for key, title in TENANT_FIGURES:
            values = [((s.get("tenants") or {}).get(name) or {}).get(key) for s in summaries]
            rows.append((f"{name}: {title}", values))
    return rows


def topology_rows(summaries: tuple[dict[str, Any], ...]) -> list[tuple[str, list[str]]]:
    """(title, one shown value per run) for each of :data:`TOPOLOGY_ROWS`: a run that did not
    model a figure (no topology-aware placement, no comm model, or from before them) shows
    :data:`NOT_MODELLED`, never 0."""
    figures = [{**s, **topology_figures(s)} for s in summaries]
    rows = []
    for key, title in TOPOLOGY_ROWS:
        shown = []
        for f in figures:
            value = f.get(key)
            if value is None:
                shown.append(NOT_MODELLED)
            elif key == "starts_by_tier":
                shown.append("/".join(f"{int(value.get(tier, 0)):,}" for tier in TIER_NAMES))
            else:
                shown.append(format_value(key, value))
        rows.append((title, shown))
    return rows


def compare_runs(runs: list[str | Path]) -> Comparison:
    """Load the summaries of ``runs`` (errors name the offending directory); serving runs
    compare only with serving runs."""
    if not runs:
        raise ValueError("compare needs at least one run directory")
    summaries = tuple(read_summary(r) for r in runs)
    kinds = [s.get("kind") == SERVING for s in summaries]
    if any(kinds) and not all(kinds):
        serving = [str(r) for r, k in zip(runs, kinds, strict=True) if k]
        raise ValueError(
            f"cannot compare serving runs ({', '.join(serving)}) with job-scheduling runs"
        )
    labels = tuple(Path(r).name or str(r) for r in runs)
    return Comparison(labels, summaries)


def format_value(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key in ("gpu_utilization", "slo_attainment", "rack_spanning_share"):
        return f"{value:.1%}"
    if isinstance(value, float) and ("." in key or key.endswith("_rps")):
        # Serving latencies and rates: sub-second figures need their digits.
        return f"{value:.3g}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)
