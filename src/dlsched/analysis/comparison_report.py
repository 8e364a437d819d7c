"""The report comparing several job run directories, or the groups of a sweep (``dlsched analyze
RUN_DIR RUN_DIR ...`` / ``dlsched analyze SWEEP_DIR``): ``index.html``, ``jct_cdf.png``,
``queueing_cdf.png``, ``timeline.png`` and ``stats.json``, one line per run or group
(:mod:`dlsched.analysis.run_comparison` computes what they show). Its files are those of a run
report, so either replaces the other with ``--force`` (:data:`RUN_REPORT_DIR`). The page needs
nothing but the files beside it; every number on it is in ``stats.json``. Written whole or not
at all.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from dlsched.analysis.characterize import CDF_PROBABILITIES, Distribution, Unavailable
from dlsched.analysis.comparison_figures import cdf_figure, timeline_figure
from dlsched.analysis.html import escape, page_start, pairs, paragraph, table
from dlsched.analysis.report import CSS, distribution_table
from dlsched.analysis.run_comparison import MAX_LINES, SWEEP, Line, RunComparison
from dlsched.analysis.run_report import INDEX, NOT_AVAILABLE, RUN_REPORT_DIR, STATS
from dlsched.analysis.units import duration, pct

STATS_VERSION = 1
JCT_PNG, QUEUEING_PNG, TIMELINE_PNG = "jct_cdf.png", "queueing_cdf.png", "timeline.png"
# (line attribute, heading, figure file, what the x axis shows)
CDF_SECTIONS = (
    ("jct", "Job completion time", JCT_PNG, "job completion time (end − submit)"),
    ("queueing", "Queueing delay", QUEUEING_PNG, "queueing delay (first start − submit)"),
)


def write_comparison_report(
    comparison: RunComparison, out: str | Path, force: bool = False
) -> Path:
    """Write the report of ``comparison`` to ``out`` (an earlier report is replaced only with
    ``force``; nothing else ever is)."""

    def fill(tmp: Path) -> None:
        figures = comparison_figures(comparison)
        for name, figure in figures.items():
            figure.savefig(tmp / name)
        stats = comparison_stats(comparison, set(figures))
        (tmp / STATS).write_text(json.dumps(stats, indent=1, allow_nan=False) + "\n")
        (tmp / INDEX).write_text(render_html(comparison, set(figures)), encoding="utf-8")

    return RUN_REPORT_DIR.write(out, fill, force)


def _legend_title(comparison: RunComparison) -> str:
    return " / ".join(comparison.fields) if comparison.fields else "run"


def comparison_figures(comparison: RunComparison) -> dict[str, Figure]:
    """Each figure some line shown has data for, keyed by its file name."""
    shown = list(enumerate(comparison.shown))
    total = len(comparison.lines)
    legend = _legend_title(comparison)
    out: dict[str, Figure] = {}
    for attr, heading, filename, what in CDF_SECTIONS:
        curves = [
            (i, line.label, d)
            for i, line in shown
            if isinstance(d := getattr(line, attr), Distribution)
        ]
        if curves:
            title = f"{heading} CDF of the finished jobs, one line per {_unit(comparison)}"
            out[filename] = cdf_figure(curves, total, what, title, legend)
    series = [
        (i, line.label, t) for i, line in shown if not isinstance(t := line.timeline, Unavailable)
    ]
    if series and not isinstance(comparison.bins, Unavailable):
        out[TIMELINE_PNG] = timeline_figure(series, total, comparison.bins, legend)
    return out


def _unit(comparison: RunComparison) -> str:
    return "group (seeds pooled)" if comparison.source == SWEEP else "run"


def _section(value: Any) -> dict[str, Any]:
    if isinstance(value, Unavailable):
        return {"available": False, "reason": value.reason}
    return {"available": True, **dataclasses.asdict(value)}


def comparison_stats(comparison: RunComparison, figures: set[str]) -> dict[str, Any]:
    """The JSON document of ``stats.json``: where the lines come from, the fields that differ
    between them, the shared bins of their timelines and every line: label, fields, runs
    (and seeds), its table row, whether the figures draw it, and its ``jct`` and
    ``queueing`` CDFs (quantiles at ``cdf_probabilities``) and ``timeline``; an unavailable
    one is ``{"available": false, "reason": ...}``."""
    shown = len(comparison.shown)
    lines = []
    for i, line in enumerate(comparison.lines):
        row = {k: getattr(line, k) for k in _ROW_KEYS}
        lines.append(
            {
                **row,
                "in_figures": i < shown,
                "jct": _section(line.jct),
                "queueing": _section(line.queueing),
                "timeline": _section(line.timeline),
            }
        )
    return {
        "dlsched_comparison_report": STATS_VERSION,
        "source": comparison.source,
        "sweep": comparison.sweep,
        "cells_in_grid": comparison.cells_in_grid,
        "cells_finished": comparison.cells_finished,
        "fields": list(comparison.fields),
        "cdf_probabilities": list(CDF_PROBABILITIES),
        "max_lines_per_figure": MAX_LINES,
        "figures": {
            "jct": JCT_PNG if JCT_PNG in figures else None,
            "queueing": QUEUEING_PNG if QUEUEING_PNG in figures else None,
            "timeline": TIMELINE_PNG if TIMELINE_PNG in figures else None,
        },
        "timeline_bins": _section(comparison.bins),
        "lines": lines,
    }


_ROW_KEYS = (
    "label",
    "fields",
    "runs",
    "seeds",
    "jobs",
    "avg_jct_s",
    "median_jct_s",
    "p95_jct_s",
    "avg_queue_s",
    "gpu_utilization",
)


def _text(value: float | None, show: Callable[[float], str]) -> str:
    return NOT_AVAILABLE if value is None else show(value)


def render_html(comparison: RunComparison, figures: set[str]) -> str:
    """The report page; ``figures`` are the figure files present beside it."""
    n = len(comparison.lines)
    if comparison.source == SWEEP:
        title = f"Sweep report: {Path(comparison.sweep or '').name} ({n} groups)"
    else:
        title = f"Comparison of {n} runs"
    parts = [*page_start(title, CSS), _overview(comparison), _table_html(comparison)]
    for attr, heading, filename, _ in CDF_SECTIONS:
        parts.append(f'<section id="{attr}"><h2>{escape(heading)}</h2>')
        if filename not in figures:
            parts.append('<p class="unavailable">Not available: no job finished in any run.</p>')
        else:
            curves = {
                line.label: d
                for line in comparison.lines
                if isinstance(d := getattr(line, attr), Distribution)
            }
            parts.append(
                paragraph(
                    f"Cumulative share of the finished jobs by {heading.lower()}, one line per "
                    f"{_unit(comparison)}, on a log scale (under 1 s drawn at 1 s)."
                )
            )
            parts.append(f'<figure><img src="{filename}" alt="{escape(heading)} CDFs"></figure>')
            parts.append(distribution_table(curves, "JCT" if attr == "jct" else "delay"))
        parts.append("</section>")
    parts.append(_timeline_html(comparison, TIMELINE_PNG in figures))
    parts.append(
        f'<footer><p>Every number on this page is in <a href="{STATS}">{STATS}</a>; CDFs are '
        "stored as quantiles at the probabilities listed there. Written by dlsched.</p>"
        "</footer></main></body></html>"
    )
    return "\n".join(parts) + "\n"


def _overview(comparison: RunComparison) -> str:
    n = len(comparison.lines)
    if comparison.source == SWEEP:
        rows = [
            ("sweep directory", comparison.sweep or NOT_AVAILABLE),
            (
                "cells finished / in grid",
                f"{comparison.cells_finished:,} / {comparison.cells_in_grid:,}",
            ),
            ("groups", f"{n:,} (every coordinate but the seed; seeds pooled)"),
        ]
    else:
        rows = [("run directories", ", ".join(r for line in comparison.lines for r in line.runs))]
    differ = ", ".join(comparison.fields) or "none (labelled by directory name)"
    rows.append(("configuration fields that differ", differ))
    if n > MAX_LINES:
        order = "the grid's order" if comparison.source == SWEEP else "the order given"
        rows.append(
            ("figures", f"the first {MAX_LINES} of {n} lines, in {order}; the table lists all")
        )
    return pairs(rows)


def _table_html(comparison: RunComparison) -> str:
    sweep = comparison.source == SWEEP
    # The label, as the figures' legends write it, under their legends' title.
    head = [_legend_title(comparison)]
    if sweep:
        head.append("seeds")
    head += ["jobs", "mean JCT", "median JCT", "p95 JCT", "mean queueing", "GPU utilization"]
    head.append("cells" if sweep else "run directory")
    rows = []
    for line in comparison.lines:
        cells = [line.label]
        if sweep:
            cells.append(", ".join(str(s) for s in line.seeds or ()))
        cells += _row(line)
        cells.append(", ".join(Path(r).name for r in line.runs) if sweep else line.runs[0])
        rows.append(cells)
    what = "group of seeds (pooled)" if sweep else "run"
    intro = paragraph(
        f"Per {what}: its finished jobs, their mean, median and 95th-percentile JCT and mean "
        "queueing delay, and GPU utilization (GPU-time held over the GPUs of the partitions "
        "that ran jobs × the makespan, summed over the runs); n/a where there is no value."
    )
    heading = "Groups" if sweep else "Runs"
    return f'<section id="table"><h2>{heading}</h2>{intro}{table(head, rows)}</section>'


def _row(line: Line) -> list[str]:
    return [
        f"{line.jobs:,}",
        _text(line.avg_jct_s, duration),
        _text(line.median_jct_s, duration),
        _text(line.p95_jct_s, duration),
        _text(line.avg_queue_s, duration),
        _text(line.gpu_utilization, pct),
    ]


def _timeline_html(comparison: RunComparison, drawn: bool) -> str:
    head = '<section id="timeline"><h2>GPU utilization and queue length over time</h2>'
    if not drawn or isinstance(comparison.bins, Unavailable):
        return f'{head}<p class="unavailable">Not available: every timeline is empty.</p></section>'
    intro = paragraph(
        "From each run's timeline, summed over the partitions that ran jobs: GPUs busy as a "
        "share of them and jobs waiting (handed to their policy and not running), averaged per "
        f"{duration(comparison.bins.bin_s)} bin, over simulated time since each run's first "
        "timeline sample. A group's line is the mean over its seeds still running in the bin."
    )
    image = f'<img src="{TIMELINE_PNG}" alt="Utilization and queue length over time">'
    return f"{head}{intro}<figure>{image}</figure></section>"
