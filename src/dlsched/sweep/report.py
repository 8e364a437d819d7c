"""The comparison of a sweep: one row per cell, and per group (every coordinate but the seed)
the mean of each metric with a 95% confidence interval over seeds (Student's t; a group with
one seed has no interval).

Metrics: average JCT, average queueing delay, GPU utilization and energy from each cell's
``summary.json``; fairness from its ``jobs.parquet`` as Jain's index of the finished jobs'
slowdowns (JCT / run time): ``(Σx)² / (n·Σx²)``, 1 when every job is slowed down equally,
toward ``1/n`` when a few jobs bear all the waiting.

A sweep with queues (``--queues``) adds the tenant figures of each cell's ``summary.json``
(:mod:`dlsched.tenancy.report`): Jain's index over the tenants' shares each divided by its fair
share, and the largest deviation of a tenant's share from its fair share. results.csv always
has their columns (empty without queues); the table and figures show them with queues only.
Two or more queue configurations also get the what-if of quotas, per ClusterQueue and cohort
(:mod:`dlsched.sweep.whatif`: whatif.csv, whatif.md, whatif.png).

Likewise the topology figures (:func:`dlsched.metrics.summary.topology_figures`): jobs that
waited fragmented, multi-node starts and the share of them spanning racks. results.csv always
has their columns, empty where a cell did not model them (no topology-aware placement, no comm
model); the table and figures show them when the grid has a topology-aware placement or a comm
model.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from scipy.special import stdtrit

from dlsched.extras import installed
from dlsched.metrics.summary import topology_figures
from dlsched.outdir import write_file_atomic
from dlsched.placement.registry import placers
from dlsched.sweep.grid import Cell, Grid, cell_dir

Metrics = Sequence[tuple[str, str]]
"""(key in a row, label) of each metric a table or figure shows."""

METRICS = (
    ("avg_jct_s", "avg JCT (s)"),
    ("avg_queue_s", "avg queue (s)"),
    ("gpu_utilization", "GPU utilization"),
    ("energy_kwh", "energy (kWh)"),
    ("fairness_jain", "fairness (Jain, slowdowns)"),
)

TENANT_METRICS = (
    ("tenant_fairness_jain", "tenant fairness (Jain, shares)"),
    ("tenant_fair_share_max_deviation", "max fair-share deviation"),
)

TOPOLOGY_METRICS = (
    ("fragmented_jobs", "fragmented jobs"),
    ("multi_node_starts", "multi-node starts"),
    ("rack_spanning_share", "multi-node starts spanning racks"),
)


def jain_index(values: np.ndarray) -> float | None:
    """Jain's fairness index of positive values (None for none)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0 or not np.any(values):
        return None
    return float(values.sum() ** 2 / (values.size * np.square(values).sum()))


def cell_row(out: Path, cell: Cell) -> dict[str, Any]:
    """The coordinates and metrics of one finished cell."""
    run = cell_dir(out, cell)
    summary = json.loads((run / "summary.json").read_text())
    jobs = pq.read_table(run / "jobs.parquet", columns=["status", "jct_s", "run_time_s"])
    done = np.asarray(jobs.column("status").to_pylist()) == "finished"
    jct = jobs.column("jct_s").to_numpy(zero_copy_only=False)[done]
    run_time = jobs.column("run_time_s").to_numpy(zero_copy_only=False)[done]
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(run_time > 0, jct / run_time, np.nan)
    row: dict[str, Any] = {
        "trace": cell.trace if cell.trace is not None else f"preset:{cell.preset}",
        "cluster": cell.cluster or json.loads((run / "config.json").read_text())["cluster"],
        "policy": cell.policy,
        "placement": cell.placement or "consolidate",
        "queues": cell.queues,
        "load_scale": cell.load_scale,
        "seed": cell.seed,
        "jobs": summary.get("jobs"),
    }
    for key, _ in METRICS:
        row[key] = jain_index(slowdown) if key == "fairness_jain" else summary.get(key)
    for key, _ in TENANT_METRICS:
        row[key] = summary.get(key)
    row.update(topology_figures(summary))
    return row


def models_topology(grid: Grid) -> bool:
    """Whether some cell of ``grid`` has topology figures: a comm model, or a topology-aware
    placement."""
    known = placers()
    return grid.shared.get("comm_model") is not None or any(
        known[name or "consolidate"].topology_aware for name in grid.values("placement")
    )


def mean_ci(values: list[float]) -> tuple[float, float | None]:
    """Mean and the half-width of its 95% confidence interval (None below two values)."""
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if arr.size < 2:
        return mean, None
    sem = float(arr.std(ddof=1) / math.sqrt(arr.size))
    # Student's t quantile (scipy.stats would import scipy.optimize for this one number).
    return mean, float(stdtrit(arr.size - 1, 0.975) * sem)


def write_report(out: Path) -> bool:
    """Write results.csv, table.md and the figures for every finished cell of ``out``'s grid
    (``out/grid.json``, which includes earlier runs' axes) — each file atomically. Returns
    whether the figures were drawn (they need matplotlib, the ``analysis`` extra)."""
    full = Grid.from_dict(json.loads((out / "grid.json").read_text()))
    cells = [c for c in full.cells() if (cell_dir(out, c) / "summary.json").is_file()]
    rows = [cell_row(out, c) for c in cells]
    metrics: Metrics = METRICS
    if any(q is not None for q in full.values("queues")):
        metrics = (*metrics, *TENANT_METRICS)
    if models_topology(full):
        metrics = (*metrics, *TOPOLOGY_METRICS)
    fields = ["trace", "cluster", "policy", "placement", "queues", "load_scale", "seed", "jobs"]
    fields += [k for k, _ in (*METRICS, *TENANT_METRICS, *TOPOLOGY_METRICS)]
    write_file_atomic(out / "results.csv", csv_text(rows, fields))
    # The table shows the queues and load scale only where the grid varies or sets them.
    coordinates: list[str] = ["trace", "cluster", "policy", "placement"]
    coordinates += [n for n in ("queues", "load_scale") if full.values(n) != (None,)]
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        shown = {**row, "trace": Path(str(row["trace"])).name}
        if row["queues"] is not None:
            shown["queues"] = Path(str(row["queues"])).name
        groups[tuple(str(shown[c]) for c in coordinates)].append(row)
    write_file_atomic(out / "table.md", markdown(groups, coordinates, metrics))
    if len([q for q in full.values("queues") if q is not None]) >= 2:
        from dlsched.sweep.whatif import write_whatif

        write_whatif(out, cells, rows)
    return figures(out, groups, metrics)


def csv_text(rows: list[dict[str, Any]], fields: Sequence[str]) -> str:
    """``rows`` as CSV text with columns ``fields``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(fields), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _summaries(
    rows: list[dict[str, Any]], metrics: Metrics
) -> dict[str, tuple[float, float | None] | None]:
    out: dict[str, tuple[float, float | None] | None] = {}
    for key, _ in metrics:
        values = [r[key] for r in rows if isinstance(r[key], int | float)]
        out[key] = mean_ci(values) if values else None
    return out


def markdown(
    groups: dict[tuple[str, ...], list[dict[str, Any]]],
    coordinates: Sequence[str],
    metrics: Metrics,
) -> str:
    """The table of ``groups`` (coordinates shown as given, then rows over seeds): one row
    per group, each metric's mean over seeds ± its 95% CI half-width."""
    head = [*coordinates, "seeds", *(label for _, label in metrics)]
    lines = [
        "Mean over seeds ± half-width of the 95% confidence interval (Student's t).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for group, rows in groups.items():
        cells = [*group, str(len(rows))]
        summaries = _summaries(rows, metrics)
        for key, _ in metrics:
            s = summaries[key]
            if s is None:
                cells.append("—")
            else:
                mean, half = s
                digits = 3 if abs(mean) < 10 else 0
                text = f"{mean:,.{digits}f}"
                cells.append(text if half is None else f"{text} ± {half:,.{digits}f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def metric_figure(labels: list[str], means: list[float], errors: list[float], label: str) -> Any:
    """One metric's bar chart (a matplotlib Figure): a bar per group with its 95% CI, titled
    with the metric; wide enough for its group labels, and laid out so nothing is cut off."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(6.0, 0.9 * len(labels) + 2), 4.2), layout="constrained")
    ax = fig.add_subplot()
    ax.bar(range(len(labels)), means, yerr=errors, capsize=4, color="#4878a8")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(label)
    ax.set_title(f"{label}\nmean over seeds with 95% confidence interval", fontsize=10)
    return fig


def figures(
    out: Path, groups: dict[tuple[str, ...], list[dict[str, Any]]], metrics: Metrics
) -> bool:
    """One bar chart per metric, ``out/<metric>.png``, a bar per group; False (and nothing
    drawn) without matplotlib (the ``analysis`` extra): the tables carry every number."""
    if not installed("matplotlib"):
        return False
    labels = [" / ".join(g) for g in groups]
    for key, label in metrics:
        means, errors = [], []
        for rows in groups.values():
            s = _summaries(rows, metrics)[key]
            means.append(np.nan if s is None else s[0])
            errors.append(0.0 if s is None or s[1] is None else s[1])
        png = io.BytesIO()
        metric_figure(labels, means, errors, label).savefig(png, format="png", dpi=110)
        write_file_atomic(out / f"{key}.png", png.getvalue())
    return True
