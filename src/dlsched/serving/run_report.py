"""The report of a serving run directory: ``index.html``, ``latency.png`` (CDFs of time to
first token, mean time between tokens and end-to-end latency), ``replicas.png`` (replicas
serving and the share of them busy over time) and ``stats.json``, written whole or not at all.

A replica counts as busy in a minute when one of its samples in that minute holds a request
(the timeline samples each replica about once a second while it works).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from matplotlib.figure import Figure

from dlsched.analysis.figures import new_figure
from dlsched.analysis.html import page_start, paragraph, table
from dlsched.metrics.rundir import read_summary
from dlsched.outdir import DirKind

INDEX, STATS, LATENCY, REPLICAS = "index.html", "stats.json", "latency.png", "replicas.png"
SERVING_REPORT_DIR = DirKind("serving-run report directory", (INDEX, STATS, LATENCY, REPLICAS))
BIN_S = 60.0
CSS = "body{font-family:sans-serif;max-width:60em;margin:auto}td,th{padding:2px 8px}"
LATENCIES = (
    ("ttft", "time to first token"),
    ("tbt_mean", "mean time between tokens"),
    ("e2e", "end-to-end latency"),
)


def is_serving_run(path: str | Path) -> bool:
    """Whether ``path`` is a run directory of a serving run."""
    p = Path(path)
    return (
        p.is_dir() and (p / "summary.json").is_file() and read_summary(p).get("kind") == "serving"
    )


def busy_share(timeline: Any, steps: list[list[float]], end: float) -> tuple[Any, Any]:
    """Per :data:`BIN_S` bin from 0 to ``end``: bin start times, and the share of the replicas
    alive at the bin's start that were busy in it (NaN when none is alive)."""
    bins = max(1, int(np.ceil(end / BIN_S)))
    starts = np.arange(bins) * BIN_S
    time = timeline.column("time").to_numpy()
    working = timeline.column("running").to_numpy() > 0
    replica = timeline.column("replica").to_numpy()
    which = np.minimum((time // BIN_S).astype(np.int64), bins - 1)
    busy = np.zeros(bins)
    for b in range(bins):
        busy[b] = len(np.unique(replica[working & (which == b)]))
    alive = alive_at(steps, starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(alive > 0, np.minimum(busy / alive, 1.0), np.nan)
    return starts, share


def alive_at(steps: list[list[float]], times: Any) -> Any:
    """Replicas alive at each of ``times`` under the step series ``steps``."""
    if not steps:
        return np.zeros(len(times))
    at = np.array([s[0] for s in steps])
    count = np.array([s[1] for s in steps])
    index = np.searchsorted(at, times, side="right") - 1
    return np.where(index >= 0, count[np.maximum(index, 0)], 0)


def _latency_figure(requests: Any) -> Figure:
    figure = new_figure(3, width=12.0, height=3.6)
    for ax, (column, title) in zip(figure.axes, LATENCIES, strict=True):
        values = requests.column(column).to_numpy(zero_copy_only=False).astype(float)
        values = np.sort(values[~np.isnan(values)])
        if len(values):
            ax.plot(values, np.arange(1, len(values) + 1) / len(values))
        ax.set_xlabel("seconds")
        ax.set_ylabel("fraction of served requests")
        ax.set_title(title)
    return figure


def _replica_figure(steps: list[list[float]], starts: Any, share: Any, end: float) -> Figure:
    figure = new_figure(2, width=12.0, height=3.6)
    count, use = figure.axes
    if steps:
        times = [s[0] / 60 for s in steps] + [end / 60]
        counts = [s[1] for s in steps] + [steps[-1][1]]
        count.step(times, counts, where="post")
    count.set_xlabel("minutes")
    count.set_ylim(bottom=0)
    count.set_ylabel("replicas serving")
    count.set_title("Replicas over time")
    use.step(starts / 60, share, where="post")
    use.set_ylim(0, 1.05)
    use.set_xlabel("minutes")
    use.set_ylabel(f"share of replicas busy (per {BIN_S:g} s)")
    use.set_title("GPU use over time")
    return figure


def _row(name: str, figures: dict[str, Any] | None) -> list[str]:
    figures = figures or {}
    return [name, *("n/a" if v is None else f"{v:.3f}" for v in figures.values())]


def write_serving_report(run: str | Path, out: str | Path, force: bool = False) -> Path:
    """Write the report of serving run directory ``run`` to ``out`` (an earlier report is
    replaced only with ``force``; nothing else ever is)."""
    run = Path(run)
    summary = read_summary(run)
    requests = pq.read_table(run / "jobs.parquet")
    timeline = pq.read_table(run / "timeline.parquet")
    steps = summary.get("replica_count") or []
    finish = requests.column("arrival_time").to_numpy() + requests.column("e2e").to_numpy(
        zero_copy_only=False
    ).astype(float)
    end = float(np.nanmax(finish)) if np.isfinite(finish).any() else 0.0
    starts, share = busy_share(timeline, steps, end)

    def fill(tmp: Path) -> None:
        _latency_figure(requests).savefig(tmp / LATENCY)
        _replica_figure(steps, starts, share, end).savefig(tmp / REPLICAS)
        stats = {
            "run": str(run),
            "bin_s": BIN_S,
            "replica_count": steps,
            "busy_share": [None if np.isnan(v) else float(v) for v in share],
            **{k: summary.get(k) for k in ("ttft_s", "tbt_s", "tbt_mean_s", "e2e_s")},
        }
        (tmp / STATS).write_text(json.dumps(stats, indent=1) + "\n")
        lines = page_start(f"Serving run: {run}", CSS)
        energy = summary.get("energy_j")
        lines.append(
            paragraph(
                f"{summary.get('served', 0):,} of {summary.get('requests', 0):,} requests "
                f"served; SLO attainment {summary.get('slo_attainment')}; energy "
                f"{'n/a' if energy is None else f'{energy / 3.6e6:,.2f} kWh'}."
            )
        )
        head = ["latency (s)", "p50", "p90", "p99"]
        rows = [_row(k, summary.get(k)) for k in ("ttft_s", "tbt_s", "tbt_mean_s", "e2e_s")]
        lines.append("<h2>Latency</h2>" + table(head, rows))
        lines.append(f'<img src="{LATENCY}" alt="latency CDFs">')
        lines.append(f'<h2>Replicas</h2><img src="{REPLICAS}" alt="replicas and GPU use">')
        lines.append("</main></body></html>")
        (tmp / INDEX).write_text("\n".join(lines), encoding="utf-8")

    return SERVING_REPORT_DIR.write(out, fill, force)
