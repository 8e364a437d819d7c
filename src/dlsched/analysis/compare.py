"""Side-by-side comparison of run directories, with ratios to the first (the baseline).

A comparison is a list of :class:`Figure` rows, one figure of every run each. Only figures
that apply to at least one of the runs are listed: serving figures for serving runs, job
figures for job runs, energy where a run accounted it, tenant and queue figures where a run had
queues, deadline satisfaction where a job of a run had a deadline, topology figures where a run
modelled them. A run to which a listed figure does not apply has None for it, as has a run
whose figure has no value (a statistic of no jobs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.cluster.topology import TIER_NAMES
from dlsched.metrics.rundir import read_summary
from dlsched.metrics.summary import topology_figures

# How the table writes a figure's value (:func:`format_value`).
NUMBER, SHARE, FINE, TIERS, TEXT = "number", "share", "fine", "tiers", "text"
SERVING = "serving"
NOT_MODELLED = "n/a"
NO_VALUE = "-"

Applies = Callable[[Mapping[str, Any]], bool]


def always(_summary: Mapping[str, Any]) -> bool:
    return True


def has(key: str) -> Applies:
    """A figure that applies to a run whose summary holds a value for ``key``."""
    return lambda summary: summary.get(key) is not None


def with_queues(summary: Mapping[str, Any]) -> bool:
    """Whether the run had queues (``--queues``): its ``tenants`` are recorded."""
    return summary.get("tenants") is not None


def with_deadlines(summary: Mapping[str, Any]) -> bool:
    """Whether some job of the run had a deadline (its ``deadlines`` block counts them)."""
    block = summary.get("deadlines")
    return isinstance(block, Mapping) and bool(block.get("jobs_with_deadline"))


def with_colocation(summary: Mapping[str, Any]) -> bool:
    """Whether the run's policy co-located jobs (its ``colocation`` block counts pairs)."""
    block = summary.get("colocation")
    return isinstance(block, Mapping) and block.get("pairs") is not None


@dataclass(frozen=True)
class Spec:
    """A figure every run of one kind may have: the summary ``path`` to its value, its
    ``title`` in the table, how the table writes it, whether the table shows its ratio to the
    first run, and which runs it applies to."""

    path: tuple[str, ...]
    title: str
    style: str = NUMBER
    ratios: bool = True
    applies: Applies = always


def _spec(key: str, title: str, style: str = NUMBER, applies: Applies = always) -> Spec:
    return Spec(tuple(key.split(".")), title, style, True, applies)


COMPARED = (
    _spec("avg_jct_s", "avg JCT (s)"),
    _spec("median_jct_s", "median JCT (s)"),
    _spec("p95_jct_s", "p95 JCT (s)"),
    _spec("avg_queue_s", "avg queue (s)"),
    _spec("makespan_s", "makespan (s)"),
    _spec("gpu_utilization", "GPU util", SHARE),
    _spec("energy_kwh", "energy (kWh)", applies=has("energy_kwh")),
    _spec("avg_slowdown", "avg slowdown"),
    _spec("preemptions", "preemptions"),
    _spec("deadlines.satisfaction_ratio", "deadline satisfaction", SHARE, with_deadlines),
    _spec("colocation.pairs", "co-located pairs", applies=with_colocation),
    _spec("colocation.mean_shared_speed", "speed while sharing", applies=with_colocation),
    _spec("tenant_fairness_jain", "Jain's index (tenants)", applies=with_queues),
    _spec("tenant_fair_share_max_deviation", "max fair-share deviation", applies=with_queues),
)
"""The headline figures of job runs (``dlsched simulate``)."""
SERVING_COMPARED = (
    _spec("ttft_s.p50", "TTFT p50 (s)", FINE),
    _spec("ttft_s.p99", "TTFT p99 (s)", FINE),
    _spec("tbt_s.p99", "TBT p99, pooled gaps (s)", FINE),
    _spec("e2e_s.p50", "E2E p50 (s)", FINE),
    _spec("e2e_s.p99", "E2E p99 (s)", FINE),
    _spec("slo_attainment", "SLO attainment", SHARE),
    _spec("goodput_rps", "goodput (req/s)", FINE),
    _spec("throughput_rps", "throughput (req/s)", FINE),
    _spec("preemptions", "preemptions"),
    _spec("gpu_utilization", "GPU util", SHARE),
    _spec("energy_kwh", "energy (kWh)", applies=has("energy_kwh")),
)
"""The headline figures of serving runs (``dlsched serve-sim``)."""

TENANT_FIGURES = (
    ("avg_jct_s", "avg JCT (s)"),
    ("avg_queue_s", "avg queue (s)"),
    ("borrowed_gpus_avg", "GPUs borrowed"),
)
"""Per-tenant figures ``compare`` shows for every tenant of a run with queues."""

TOPOLOGY_ROWS = (
    ("comm_model", "comm model", TEXT),
    ("fragmented_jobs", "fragmented jobs", NUMBER),
    ("starts_by_tier", "starts node/rack/block/cluster", TIERS),
    ("multi_node_starts", "multi-node starts", NUMBER),
    ("rack_spanning_share", "multi-node starts spanning racks", SHARE),
)
"""(key, title, style) of the topology figures of job runs; each applies to the runs that
modelled it (:func:`dlsched.metrics.summary.topology_figures`)."""

BY_CAUSE = "preemptions_by_cause"
EVICTIONS_NOTE = (
    "preemptions: CAUSE rows count evictions by queue admission, of running jobs (also counted "
    "in preemptions) and of admitted jobs that had not started yet (withdrawn from their "
    "policy's queue, in no preemption count): they can exceed preemptions, which count every "
    "stop of a running job, by admission or by the policy."
)
"""Why an eviction count can exceed the preemptions (see :mod:`dlsched.tenancy.report` and the
simulator's handling of evictions)."""


@dataclass(frozen=True)
class Figure:
    """One figure of every run: ``values[i]`` is run i's (None where it does not apply or
    has no value). ``key`` names it in CSV and JSON (the summary path, dotted)."""

    key: str
    title: str
    values: tuple[Any, ...]
    style: str = NUMBER
    ratios: bool = False
    absent: str = NO_VALUE

    def ratio(self, i: int) -> float | None:
        """Run i's value over the first run's, when the figure shows ratios and both are
        numbers (the first one not 0)."""
        if not self.ratios:
            return None
        base, value = self.values[0], self.values[i]
        if not _number(base) or not _number(value) or base == 0:
            return None
        return float(value) / float(base)

    def cells(self) -> list[str]:
        """The table's cells: each run's value, with its ratio after the first run's."""
        out = []
        for i, value in enumerate(self.values):
            text = self.absent if value is None else format_value(self.style, value)
            r = self.ratio(i)
            if i > 0 and r is not None:
                text += f" ({r:.2f}x)"
            out.append(text)
        return out

    def columns(self) -> list[tuple[str, tuple[Any, ...]]]:
        """The figure as machine-readable columns (name, one value per run): one per tier for
        starts by tier, else one."""
        if self.style != TIERS:
            return [(self.key, self.values)]
        return [
            (
                f"{self.key}.{tier}",
                tuple(None if v is None else int(v.get(tier, 0)) for v in self.values),
            )
            for tier in TIER_NAMES
        ]


@dataclass(frozen=True)
class Comparison:
    """The runs compared: ``runs`` as given, their ``labels`` (directory names) and
    summaries; the first run is the base of every ratio."""

    runs: tuple[str, ...]
    labels: tuple[str, ...]
    summaries: tuple[dict[str, Any], ...]

    @property
    def serving(self) -> bool:
        """Whether the runs are serving runs (``dlsched serve-sim``) rather than job runs."""
        return self.summaries[0].get("kind") == SERVING

    @property
    def count_key(self) -> str:
        """The summary key counting what the runs simulated (jobs or requests)."""
        return "requests" if self.serving else "jobs"

    @property
    def policy_key(self) -> str:
        """The summary key naming what ran: a job run's policy, a serving run's scheduler."""
        return "scheduler" if self.serving else "policy"

    def policies(self) -> list[str]:
        return [str(s.get(self.policy_key, s.get("policy", "?"))) for s in self.summaries]

    def figures(self) -> list[Figure]:
        """The figures that apply to at least one run, in the table's order: headline
        figures, the count, per-cause evictions and per-tenant figures, topology."""
        specs = [*(SERVING_COMPARED if self.serving else COMPARED)]
        specs.append(Spec((self.count_key,), self.count_key, ratios=False))
        specs += _tenant_specs(self.summaries)
        out = [_figure(spec, self.summaries) for spec in specs if self._applies(spec)]
        if not self.serving:
            out += _topology(self.summaries)
        return out

    def notes(self, figures: list[Figure]) -> list[str]:
        """Footnotes the table needs for ``figures``: why evictions by cause can exceed
        preemptions, when both are shown."""
        keys = {f.key for f in figures}
        shown = any(k.startswith(BY_CAUSE + ".") for k in keys)
        return [EVICTIONS_NOTE] if shown and "preemptions" in keys else []

    def _applies(self, spec: Spec) -> bool:
        return any(spec.applies(s) for s in self.summaries)


def _figure(spec: Spec, summaries: tuple[dict[str, Any], ...]) -> Figure:
    values = tuple(_lookup(s, spec.path) if spec.applies(s) else None for s in summaries)
    return Figure(".".join(spec.path), spec.title, values, spec.style, spec.ratios)


def _lookup(summary: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    found: Any = summary
    for part in path:
        found = found.get(part) if isinstance(found, Mapping) else None
    if isinstance(found, float) and not math.isfinite(found):
        return None
    return found


def _tenant_specs(summaries: tuple[dict[str, Any], ...]) -> list[Spec]:
    """Evictions by cause (for runs with queues) and, for each tenant of any run, its figures
    of :data:`TENANT_FIGURES` (for the runs that have that tenant)."""
    causes: dict[str, None] = {}
    names: dict[str, None] = {}
    for s in summaries:
        causes.update(dict.fromkeys(s.get(BY_CAUSE) or {}))
        names.update(dict.fromkeys(s.get("tenants") or {}))
    specs = [
        Spec((BY_CAUSE, c), f"preemptions: {c}", ratios=False, applies=has(BY_CAUSE))
        for c in causes
    ]
    for name in names:
        applies = _has_tenant(name)
        specs += [
            Spec(("tenants", name, key), f"{name}: {title}", ratios=False, applies=applies)
            for key, title in TENANT_FIGURES
        ]
    return specs


def _has_tenant(name: str) -> Applies:
    return lambda summary: name in (summary.get("tenants") or {})


def _topology(summaries: tuple[dict[str, Any], ...]) -> list[Figure]:
    """The figures of :data:`TOPOLOGY_ROWS` some run modelled; a run that did not (no
    topology-aware placement, no comm model, or from before them) shows
    :data:`NOT_MODELLED`, never 0."""
    figures = [{**s, **topology_figures(s)} for s in summaries]
    out = []
    for key, title, style in TOPOLOGY_ROWS:
        values = tuple(_lookup(f, (key,)) for f in figures)
        if any(v is not None for v in values):
            out.append(Figure(key, title, values, style, absent=NOT_MODELLED))
    return out


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
    return Comparison(tuple(str(r) for r in runs), labels, summaries)


def format_value(style: str, value: Any) -> str:
    """``value`` (not None) as the table writes a figure of ``style``."""
    if style == SHARE:
        return f"{value:.1%}"
    if style == TIERS:
        return "/".join(f"{int(value.get(tier, 0)):,}" for tier in TIER_NAMES)
    if isinstance(value, float) and style == FINE:
        # Serving latencies and rates: sub-second figures need their digits.
        return f"{value:.3g}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
