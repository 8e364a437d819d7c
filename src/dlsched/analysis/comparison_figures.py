"""Figures of a comparison of runs (:mod:`dlsched.analysis.run_comparison`), one line per run or
sweep group on shared axes, drawn from the comparison only, on Agg canvases like every report
figure (:mod:`dlsched.analysis.figures`). Line i has the i-th of :data:`LINE_COLORS` in every
figure; a figure draws the lines it is given (the comparison's first
:data:`~dlsched.analysis.run_comparison.MAX_LINES`) and says in its title when there are more.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import PercentFormatter

from dlsched.analysis.characterize import CDF_PROBABILITIES, Distribution
from dlsched.analysis.figures import LOG_FLOOR_S, bin_text, duration_text, new_figure, time_axis
from dlsched.analysis.run_comparison import LineTimeline, SharedBins
from dlsched.analysis.run_figures import DAY_S, HOUR_S, HOURS_UP_TO_S

# matplotlib's tab10: ten hues told apart at a glance, one per line a figure draws.
LINE_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip
CDF_WIDTH_IN, TIMELINE_WIDTH_IN, HEIGHT_IN = 11.0, 13.0, 4.6


def _more(drawn: int, total: int) -> str:
    return "" if drawn == total else f" — first {drawn} of {total} lines (all in the table)"


def cdf_figure(
    curves: Sequence[tuple[int, str, Distribution]],
    total: int,
    what: str,
    title: str,
    legend_title: str,
) -> Figure:
    """CDFs of ``curves`` ((line index, label, distribution)) on a log time axis, values
    under 1 s drawn at 1 s; ``what`` labels the x axis, ``total`` counts every line of the
    comparison, ``legend_title`` names what the labels are (the fields that differ)."""
    figure = new_figure(1, width=CDF_WIDTH_IN, height=HEIGHT_IN)
    (ax,) = figure.axes
    values = [q for _, _, d in curves for q in d.quantiles] or [LOG_FLOOR_S]
    lo, hi = max(min(values), LOG_FLOOR_S), max(max(values), LOG_FLOOR_S * 10)
    for index, label, dist in curves:
        ax.step(
            np.maximum(np.array(dist.quantiles), LOG_FLOOR_S),
            np.array(CDF_PROBABILITIES) * 100,
            where="post",
            color=LINE_COLORS[index % len(LINE_COLORS)],
            lw=1.6,
            label=f"{label} (n={dist.count:,}, median {duration_text(dist.median)})",
        )
    time_axis(ax, lo, hi)
    ax.set_ylim(0, 101)
    ax.yaxis.set_major_formatter(PercentFormatter())
    ax.set_xlabel(f"{what} (log scale; under 1 s drawn at 1 s)")
    ax.set_ylabel("cumulative share of finished jobs (%)")
    ax.set_title(title + _more(len(curves), total), fontsize=11)
    ax.grid(True, alpha=0.3)
    if curves:
        ax.legend(
            loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title=legend_title,
            title_fontsize=8,
        )  # fmt: skip
    return figure


def timeline_figure(
    series: Sequence[tuple[int, str, LineTimeline]],
    total: int,
    bins: SharedBins,
    legend_title: str,
) -> Figure:
    """GPU utilization (left: share of GPUs busy, mean per bin) and jobs waiting (right: mean
    per bin) of each of ``series`` ((line index, label, timeline)) over simulated time since
    each run's first timeline sample, on shared axes; one legend for both."""
    figure = new_figure(2, width=TIMELINE_WIDTH_IN, height=HEIGHT_IN)
    use, wait = figure.axes
    unit, size = ("hours", HOUR_S) if bins.span_s <= HOURS_UP_TO_S else ("days", DAY_S)
    x = (bins.first_bin_s + bins.bin_s * np.arange(bins.bins + 1)) / size
    top = 1.0
    handles = []
    for index, label, line in series:
        color = LINE_COLORS[index % len(LINE_COLORS)]
        share = _held(line.utilization_mean) * 100
        waiting = _held(line.waiting_jobs_mean)
        use.step(x, share, where="post", color=color, lw=1.2)
        wait.step(x, waiting, where="post", color=color, lw=1.2)
        top = max(top, 1.15 * line.peak_waiting_jobs)
        handles.append(Line2D([], [], color=color, lw=1.6, label=label))
    use.set_ylim(0, 105)
    use.yaxis.set_major_formatter(PercentFormatter())
    use.set_ylabel("GPUs busy (% of the partitions that ran jobs)")
    use.set_title("GPU utilization over time", fontsize=11)
    wait.set_ylim(0, top)
    wait.set_ylabel("jobs waiting in their policy's queue")
    wait.set_title("Queue length over time", fontsize=11)
    for ax in (use, wait):
        ax.set_xlabel(f"simulated time ({unit} since the run's first timeline sample)")
        ax.grid(True, alpha=0.3)
    figure.suptitle(
        f"GPU utilization and queue length, mean per {bin_text(bins.bin_s)} bin"
        f"{_more(len(series), total)}",
        fontsize=11,
    )
    if handles:
        figure.legend(
            handles=handles, loc="outside right upper", fontsize=8, title=legend_title,
            title_fontsize=8,
        )  # fmt: skip
    return figure


def _held(values: tuple[float | None, ...]) -> np.ndarray:
    # None (past the end of every run of the line) is a gap; the last bin's value is repeated
    # so that the step reaches the end of that bin.
    drawn = np.array([np.nan if v is None else v for v in values], dtype=float)
    return np.append(drawn, drawn[-1])
