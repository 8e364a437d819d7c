"""The what-if of quotas: in a sweep over two or more queue configurations (``--queues``), the
change each configuration makes for every ClusterQueue and cohort against the first, on the
same jobs, seed by seed.

For each group of cells that differ only in their queue configuration and seed, and for each
ClusterQueue (and each cohort: its queues' jobs together) present in both the first
configuration (the baseline) and another: the admission wait (``admission_wait_s`` of
jobs.parquet: first admission less submission, finished jobs) at p50, p90 and p99, the average
JCT, the GPUs borrowed on average (``borrowed_gpus_avg`` of the summary's tenants; a cohort's:
its queues' sum) and evictions by Kueue's reason (the summary's ``evictions_by_reason``). Each
figure is the baseline's and the other's mean over seeds and their difference: the mean of the
per-seed differences (paired by seed) ± the half-width of its 95% confidence interval
(Student's t; none with one seed). A queue or cohort in only one of the two is left out of
that comparison.

Writes ``whatif.csv`` (one row per comparison, level, name and metric), ``whatif.md`` (a table
per comparison: per ClusterQueue and cohort, the changes) and, with matplotlib,
``whatif.png`` (the change of p90 admission wait per ClusterQueue, with its interval).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from dlsched.extras import installed
from dlsched.outdir import write_file_atomic
from dlsched.sweep.grid import Cell, cell_dir
from dlsched.tenancy.model import PREEMPTION_REASONS

WAIT_QUANTILES = (("wait_p50_s", 50), ("wait_p90_s", 90), ("wait_p99_s", 99))
METRICS = (
    ("wait_p50_s", "Δ wait p50 (s)"),
    ("wait_p90_s", "Δ wait p90 (s)"),
    ("wait_p99_s", "Δ wait p99 (s)"),
    ("avg_jct_s", "Δ avg JCT (s)"),
    ("borrowed_gpus_avg", "Δ borrowed GPUs"),
    *((f"evictions_{r}", f"Δ evictions {r}") for r in PREEMPTION_REASONS),
)
COORDINATES = ("trace", "cluster", "policy", "placement", "load_scale")
Figures = dict[tuple[str, str], dict[str, float | None]]
"""(level, name) -> metric -> value, for one cell."""


def cell_figures(run: Path) -> Figures:
    """Each ClusterQueue's and cohort's figures in one cell's run directory."""
    summary = json.loads((run / "summary.json").read_text())
    tenants: dict[str, dict[str, Any]] = summary.get("tenants") or {}
    jobs = pq.read_table(run / "jobs.parquet", columns=["status", "cluster_queue",
                                                        "admission_wait_s", "jct_s"])  # fmt: skip
    done = [s == "finished" for s in jobs.column("status").to_pylist()]
    queue = jobs.column("cluster_queue").to_pylist()
    wait = np.array(jobs.column("admission_wait_s").to_pylist(), dtype=float)
    jct = np.array(jobs.column("jct_s").to_pylist(), dtype=float)
    members: dict[tuple[str, str], list[str]] = {("cluster_queue", q): [q] for q in tenants}
    for name, t in tenants.items():
        if t.get("cohort"):
            members.setdefault(("cohort", t["cohort"]), []).append(name)
    out: Figures = {}
    for key, queues in members.items():
        mine = np.array([d and q in queues for d, q in zip(done, queue, strict=True)], dtype=bool)
        waits = wait[mine & ~np.isnan(wait)]
        row: dict[str, float | None] = {
            k: float(np.percentile(waits, p)) if len(waits) else None for k, p in WAIT_QUANTILES
        }
        row["avg_jct_s"] = float(jct[mine].mean()) if mine.any() else None
        borrowed = [tenants[q].get("borrowed_gpus_avg") for q in queues]
        row["borrowed_gpus_avg"] = (
            None if any(b is None for b in borrowed) else float(sum(borrowed))  # type: ignore[arg-type]
        )
        for reason in PREEMPTION_REASONS:
            row[f"evictions_{reason}"] = float(
                sum((tenants[q].get("evictions_by_reason") or {}).get(reason, 0) for q in queues)
            )
        out[key] = row
    return out


def _paired(base: Sequence[float | None], other: Sequence[float | None]) -> dict[str, Any]:
    """Means of ``base`` and ``other`` and of their per-seed differences, with its CI."""
    from dlsched.sweep.report import mean_ci

    pairs = [(b, o) for b, o in zip(base, other, strict=True) if b is not None and o is not None]
    if not pairs:
        return {"baseline": None, "other": None, "delta": None, "delta_ci95": None, "seeds": 0}
    delta, half = mean_ci([o - b for b, o in pairs])
    return {
        "baseline": float(np.mean([b for b, _ in pairs])),
        "other": float(np.mean([o for _, o in pairs])),
        "delta": delta,
        "delta_ci95": half,
        "seeds": len(pairs),
    }


def comparisons(
    out: Path, cells: Sequence[Cell], rows: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Every comparison row (module docstring) of the finished ``cells`` (their report rows
    ``rows``, in the same order), baseline first in each group's queue order."""
    groups: dict[tuple[str, ...], dict[str, dict[int, Figures]]] = defaultdict(dict)
    order: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for cell, row in zip(cells, rows, strict=True):
        if row["queues"] is None:
            continue
        group = tuple(str(row[c]) for c in COORDINATES)
        queues = str(row["queues"])
        if queues not in order[group]:
            order[group].append(queues)
        groups[group].setdefault(queues, {})[int(row["seed"])] = cell_figures(cell_dir(out, cell))
    result: list[dict[str, Any]] = []
    for group, configs in groups.items():
        baseline, *others = order[group]
        for other in others:
            seeds = sorted(set(configs[baseline]) & set(configs[other]))
            keys = [k for k in configs[baseline][seeds[0]] if k in configs[other][seeds[0]]]
            for level, name in keys:
                for metric, _ in METRICS:
                    base = [configs[baseline][s][(level, name)].get(metric) for s in seeds]
                    alt = [configs[other][s][(level, name)].get(metric) for s in seeds]
                    result.append(
                        {
                            **dict(zip(COORDINATES, group, strict=True)),
                            "baseline_queues": baseline,
                            "queues": other,
                            "level": level,
                            "name": name,
                            "metric": metric,
                            **_paired(base, alt),
                        }
                    )
    return result


def _text(value: float | None, half: float | None) -> str:
    if value is None:
        return "—"
    digits = 2 if max(abs(value), abs(half or 0.0)) < 10 else 0
    text = f"{value:+,.{digits}f}"
    return text if half is None else f"{text} ± {half:,.{digits}f}"


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """A table per comparison: a row per ClusterQueue and cohort, a column per change."""
    by: dict[tuple[str, ...], dict[tuple[str, str], dict[str, dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for r in rows:
        head = (*(str(r[c]) for c in COORDINATES), r["baseline_queues"], r["queues"])
        by[head][(r["level"], r["name"])][r["metric"]] = r
    lines = [
        "Changes against the first queue configuration on the same jobs: mean of the per-seed",
        "differences ± half-width of its 95% confidence interval (Student's t).",
    ]
    for head, entries in by.items():
        trace, *coordinates, baseline, other = head
        shown = [
            (m, label)
            for m, label in METRICS
            # Eviction reasons neither configuration had are left out.
            if not m.startswith("evictions_")
            or any(e[m]["baseline"] or e[m]["other"] for e in entries.values())
        ]
        where = ", ".join([Path(trace).name, *(c for c in coordinates if c != "None")])
        lines += [
            "",
            f"### {Path(other).name} against {Path(baseline).name} ({where})",
            "",
            "| level | name | " + " | ".join(label for _, label in shown) + " |",
            "|" + "---|" * (2 + len(shown)),
        ]
        for (level, name), metrics in entries.items():
            cells = [_text(metrics[m]["delta"], metrics[m]["delta_ci95"]) for m, _ in shown]
            lines.append(f"| {level} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_whatif(out: Path, cells: Sequence[Cell], rows: Sequence[dict[str, Any]]) -> None:
    """Write whatif.csv, whatif.md and, with matplotlib, whatif.png (module docstring)."""
    from dlsched.sweep.report import csv_text

    found = comparisons(out, cells, rows)
    fields = [*COORDINATES, "baseline_queues", "queues", "level", "name", "metric", "baseline",
              "other", "delta", "delta_ci95", "seeds"]  # fmt: skip
    write_file_atomic(out / "whatif.csv", csv_text(found, fields))
    write_file_atomic(out / "whatif.md", markdown(found))
    if installed("matplotlib"):
        _figure(out, found)


def _figure(out: Path, rows: Sequence[dict[str, Any]]) -> None:
    from matplotlib.figure import Figure

    shown = [r for r in rows if r["metric"] == "wait_p90_s" and r["level"] == "cluster_queue"]
    configs = list(dict.fromkeys(Path(str(r["queues"])).name for r in shown))
    names = list(dict.fromkeys(str(r["name"]) for r in shown))
    fig = Figure(figsize=(max(6.0, 0.7 * len(names) * max(1, len(configs)) + 2), 4.4),
                 layout="constrained")  # fmt: skip
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(configs))
    for k, config in enumerate(configs):
        mine = {str(r["name"]): r for r in shown if Path(str(r["queues"])).name == config}
        xs = [i + k * width for i in range(len(names))]
        means = [(mine[n]["delta"] or 0.0) if n in mine else 0.0 for n in names]
        errors = [(mine[n]["delta_ci95"] or 0.0) if n in mine else 0.0 for n in names]
        ax.bar(xs, means, width, yerr=errors, capsize=3, label=config)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks([i + width * (len(configs) - 1) / 2 for i in range(len(names))], names,
                  rotation=30, ha="right", fontsize=8)  # fmt: skip
    ax.set_ylabel("change of p90 admission wait (s)")
    title = "p90 admission wait against the first queue configuration\n"
    title += "mean of per-seed differences with 95% confidence interval"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.savefig(out / "whatif.png", dpi=110)
