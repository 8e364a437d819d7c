"""The tenant report of a job run directory with queues (``dlsched analyze RUN_DIR``):
``index.html``, ``usage.png`` (per tenant, GPUs held and borrowed over time against its nominal
quota, from ``tenants.parquet``), ``jct.png`` (average JCT and queueing per tenant) and
``stats.json``, written whole or not at all. A tenant whose figure is not modelled (no finished
job: no JCT) shows no bar and ``n/a`` in the table, never 0.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from dlsched.analysis.figures import DPI, new_figure
from dlsched.analysis.html import page_start, paragraph, table
from dlsched.metrics.rundir import TENANTS_FILE, read_summary
from dlsched.outdir import DirKind
from dlsched.tenancy.series import SCHEMA, queue_steps

INDEX, STATS, USAGE, JCT = "index.html", "stats.json", "usage.png", "jct.png"
TENANT_REPORT_DIR = DirKind("tenant report directory", (INDEX, STATS, USAGE, JCT))
CSS = "body{font-family:sans-serif;max-width:70em;margin:auto}td,th{padding:2px 8px}"
COLUMNS = 3


def is_job_run(path: str | Path) -> bool:
    """Whether ``path`` is a run directory of a job simulation (not a serving run)."""
    p = Path(path)
    return (
        p.is_dir()
        and (p / "jobs.parquet").is_file()
        and (p / "summary.json").is_file()
        and read_summary(p).get("kind") != "serving"
    )


def _usage_figure(series: pa.Table, tenants: dict[str, Any], end: float) -> Figure:
    names = list(tenants)
    cols = min(COLUMNS, len(names))
    rows = math.ceil(len(names) / cols)
    figure = Figure(figsize=(4.2 * cols, 2.8 * rows), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, cols, squeeze=False).ravel()
    for ax, name in zip(axes, names, strict=False):
        steps = queue_steps(series, name, end)
        hours = steps["time"] / 3600
        ax.step(hours, steps["used"], where="post", label="GPUs held")
        ax.step(hours, steps["borrowed"], where="post", label="borrowed")
        ax.axhline(tenants[name]["nominal_gpus"], color="black", ls="--", lw=1, label="nominal")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("hours")
        ax.set_ylabel("GPUs")
        ax.set_ylim(bottom=0)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7)
    figure.suptitle("GPUs held and borrowed per tenant against its nominal quota")
    return figure


def _value(tenant: dict[str, Any], key: str) -> float:
    value = tenant.get(key)
    return math.nan if value is None else float(value)


def _jct_figure(tenants: dict[str, Any]) -> Figure:
    figure = new_figure(2, width=12.0, height=4.0)
    names = list(tenants)
    for ax, (key, title) in zip(
        figure.axes,
        (("avg_jct_s", "average JCT"), ("avg_queue_s", "average queueing")),
        strict=True,
    ):
        hours = [_value(tenants[n], key) / 3600 for n in names]
        ax.bar(range(len(names)), hours, color="#4878a8")
        ax.set_xticks(range(len(names)), names, rotation=40, ha="right", fontsize=8)
        ax.set_ylabel("hours")
        ax.set_title(f"{title} of finished jobs per tenant")
    return figure


def _text(value: Any, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def write_tenant_report(run: str | Path, out: str | Path, force: bool = False) -> Path:
    """Write the tenant report of job run directory ``run`` (which must hold
    ``tenants.parquet``: a run with queues) to ``out`` (an earlier report is replaced only with
    ``force``; nothing else ever is). ValueError naming the file when ``run`` has no tenants."""
    run = Path(run)
    if not (run / TENANTS_FILE).is_file():
        raise ValueError(
            f"{run}: a job run without queues (no {TENANTS_FILE}); analyze reports a job run's "
            "tenants: simulate with --queues"
        )
    summary = read_summary(run)
    tenants: dict[str, Any] = summary.get("tenants") or {}
    if not tenants:
        raise ValueError(f"{run / 'summary.json'}: field 'tenants': expected the run's queues")
    series = pq.read_table(run / TENANTS_FILE)
    missing = [name for name in SCHEMA.names if name not in series.column_names]
    if missing:
        raise ValueError(
            f"{run / TENANTS_FILE}: no column {', '.join(missing)}: written by an earlier "
            "dlsched (quota rows per queue only); simulate the run again"
        )
    times = series.column("time").to_numpy()
    end = float(times.max()) if len(times) else 0.0

    def fill(tmp: Path) -> None:
        _usage_figure(series, tenants, end).savefig(tmp / USAGE)
        _jct_figure(tenants).savefig(tmp / JCT)
        keys = ("tenant_fairness_jain", "tenant_fair_share_max_deviation", "preemptions_by_cause")
        stats = {"run": str(run), "tenants": tenants, **{k: summary.get(k) for k in keys}}
        (tmp / STATS).write_text(json.dumps(stats, indent=1) + "\n")
        lines = page_start(f"Tenants of run {run}", CSS)
        jain = summary.get("tenant_fairness_jain")
        deviation = summary.get("tenant_fair_share_max_deviation")
        lines.append(
            paragraph(
                f"{len(tenants)} ClusterQueues; tenant fairness (Jain's index over shares ÷ "
                f"fair shares) {_text(jain, 3)}; largest fair-share deviation "
                f"{_text(deviation, 3)}."
            )
        )
        head = ["queue", "cohort", "nominal GPUs", "GPUs held (avg)", "borrowed (avg)"]
        head += ["lent (avg)", "jobs", "avg JCT (s)", "avg queueing (s)", "evictions"]
        rows = [
            [
                name,
                t.get("cohort") or "—",
                _text(t.get("nominal_gpus"), 0),
                _text(t.get("used_gpus_avg")),
                _text(t.get("borrowed_gpus_avg")),
                _text(t.get("lent_gpus_avg")),
                str(t.get("jobs", 0)),
                _text(t.get("avg_jct_s"), 0),
                _text(t.get("avg_queue_s"), 0),
                str(sum((t.get("preemptions") or {}).values())),
            ]
            for name, t in tenants.items()
        ]
        lines.append("<h2>Per tenant</h2>" + table(head, rows))
        lines.append(f'<h2>Quota over time</h2><img src="{USAGE}" alt="GPUs per tenant">')
        lines.append(f'<h2>JCT and queueing</h2><img src="{JCT}" alt="JCT per tenant">')
        lines.append("</main></body></html>")
        (tmp / INDEX).write_text("\n".join(lines), encoding="utf-8")

    return TENANT_REPORT_DIR.write(out, fill, force)
