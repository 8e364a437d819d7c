"""Figures of a workload characterization, drawn from its statistics only.

Each function takes one section of :mod:`dlsched.analysis.characterize` and returns a new
:class:`matplotlib.figure.Figure` on an Agg canvas; nothing touches pyplot's global state, so
figures can be drawn from several threads or in a library. What a figure plots is exactly what
the section holds (and what ``stats.json`` records).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator, PercentFormatter

from dlsched.analysis.characterize import (
    CDF_PROBABILITIES,
    WEEKDAYS,
    ClusterDemand,
    Distribution,
    DurationCdfs,
    FinalStates,
    GpuDemand,
    QueueingDelays,
    Submissions,
    UserConcentration,
    VcTable,
)

WIDTH_IN, HEIGHT_IN = 11.0, 4.4
DPI = 110
# Values below this many seconds are drawn at it: a log axis cannot show zero.
LOG_FLOOR_S = 1.0
TIME_TICKS: tuple[tuple[float, str], ...] = (
    (1, "1 s"),
    (10, "10 s"),
    (60, "1 min"),
    (600, "10 min"),
    (3600, "1 h"),
    (6 * 3600, "6 h"),
    (86400, "1 d"),
    (7 * 86400, "1 wk"),
    (30 * 86400, "30 d"),
    (365 * 86400, "1 yr"),
)
JOBS_COLOR, GPU_TIME_COLOR, CAPACITY_COLOR = "#4C72B0", "#DD8452", "#C44E52"
MAX_VCS_SHOWN = 20
# A capacity more than this many times the peak demand is named, not drawn (see the figure).
CAPACITY_SCALE_LIMIT = 4.0
# Labels of the top-1/5/10% points are stacked downwards so that close points stay readable.
TOP_LABEL_ROWS = {1: 0, 5: 1, 10: 2}
# Curves for all jobs and GPU jobs stay dark; buckets take the colormap's distinct hues.
OVERALL_STYLES = {"all jobs": ("black", "-"), "GPU jobs": ("#555555", "--")}


def new_figure(ncols: int = 1, width: float = WIDTH_IN, height: float = HEIGHT_IN) -> Figure:
    """A blank figure with ``ncols`` axes side by side, already attached to an Agg canvas."""
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    figure.subplots(1, ncols)
    return figure


def duration_figure(section: DurationCdfs) -> Figure:
    """Run-time CDFs: all jobs and GPU jobs (left), GPU jobs by GPU demand (right); log x."""
    figure = cdf_pair(
        section.curves,
        "run time",
        ("Job run time: all jobs and GPU jobs", "GPU jobs' run time by GPUs requested"),
    )
    figure.suptitle("Job run-time CDF (times under 1 s drawn at 1 s)", fontsize=12)
    return figure


def queueing_figure(section: QueueingDelays) -> Figure:
    """Queueing-delay CDFs like :func:`duration_figure` (delays under 1 s drawn at 1 s)."""
    figure = cdf_pair(
        section.curves,
        "queueing delay (start − submit)",
        ("Queueing delay: all jobs and GPU jobs", "GPU jobs' queueing delay by GPUs requested"),
    )
    figure.suptitle("Queueing-delay CDF (delays under 1 s, e.g. none, drawn at 1 s)", fontsize=12)
    return figure


def gpu_demand_figure(section: GpuDemand) -> Figure:
    """Shares of GPU jobs and of GPU-time per demand bucket (left) and their CDFs over the
    exact GPU count (right, log₂ x). GPU-time is left out when run times are unknown."""
    figure = new_figure(2)
    bars, cdf = figure.axes
    labels = [b.bucket for b in section.buckets]
    series = [("share of GPU jobs", [b.share_jobs for b in section.buckets], JOBS_COLOR)]
    if section.gpu_time_s is not None:
        times = [b.share_gpu_time or 0.0 for b in section.buckets]
        series.append(("share of GPU-time", times, GPU_TIME_COLOR))
    _grouped_bars(bars, labels, series, horizontal=False)
    bars.set_xlabel("GPUs requested per job")
    bars.set_ylabel("share (%)")
    bars.set_title(f"GPU demand by bucket ({section.gpu_jobs:,} GPU jobs)")

    gpus = np.array([lv.gpus for lv in section.levels])
    jobs = np.cumsum([lv.share_jobs for lv in section.levels])
    cdf.step(gpus, jobs * 100, where="post", color=JOBS_COLOR, label="GPU jobs")
    if section.gpu_time_s is not None:
        weights = np.cumsum([lv.share_gpu_time or 0.0 for lv in section.levels])
        cdf.step(gpus, weights * 100, where="post", color=GPU_TIME_COLOR, label="GPU-time")
    cdf.set_xscale("log", base=2)
    _power_of_two_ticks(cdf, float(gpus.min()), float(gpus.max()))
    cdf.set_ylim(0, 101)
    cdf.yaxis.set_major_formatter(PercentFormatter())
    cdf.set_xlabel("GPUs requested per job (log₂ scale)")
    cdf.set_ylabel("cumulative share (%)")
    cdf.set_title("CDF of GPUs requested")
    cdf.grid(True, alpha=0.3)
    cdf.legend(loc="lower right")
    return figure


def states_figure(section: FinalStates) -> Figure:
    """Share of jobs and of GPU-time per final state (horizontal bars, most jobs on top)."""
    figure = new_figure(1, height=max(2.6, 1.0 + 0.55 * len(section.rows)))
    (ax,) = figure.axes
    rows = list(reversed(section.rows))
    series = [("share of jobs", [r.share_jobs for r in rows], JOBS_COLOR)]
    if any(r.share_gpu_time is not None for r in rows):
        series.append(("share of GPU-time", [r.share_gpu_time or 0.0 for r in rows], "#DD8452"))
    _grouped_bars(ax, [r.state for r in rows], series, horizontal=True)
    ax.set_xlabel("share (%)")
    ax.set_title("Final job states")
    return figure


def submissions_figure(section: Submissions) -> Figure:
    """Submissions per UTC hour of day (left) and per weekday (right), GPU jobs stacked under
    the other (CPU) jobs."""
    figure = new_figure(2)
    hours, days = figure.axes
    for ax, everyone, gpu, labels in (
        (hours, section.by_hour, section.gpu_by_hour, [str(h) for h in range(24)]),
        (days, section.by_weekday, section.gpu_by_weekday, list(WEEKDAYS)),
    ):
        x = np.arange(len(labels))
        others = np.array(everyone) - np.array(gpu)
        ax.bar(x, gpu, color=JOBS_COLOR, label="GPU jobs")
        if others.any():
            ax.bar(x, others, bottom=gpu, color="#A0A0A0", label="CPU jobs")
            ax.legend(loc="upper left", fontsize=8)
        every = 3 if len(labels) > 12 else 1
        ax.set_xticks(x[::every], labels[::every])
        ax.set_xticks(x, minor=True)
        ax.set_ylabel(f"jobs submitted (total over {section.days_covered:,.0f} days)")
        ax.grid(True, axis="y", alpha=0.3)
    hours.set_xlabel("hour of day (UTC)")
    hours.set_title("Submissions by hour of day")
    days.set_xlabel("day of week (UTC)")
    days.set_title("Submissions by day of week")
    return figure


def cluster_demand_figure(section: ClusterDemand) -> Figure:
    """GPUs of running jobs over time: the mean per bin, the maximum per bin shaded, and the
    cluster's capacity as a line when known. Dates on x with wall-clock times, else days."""
    figure = new_figure(1)
    (ax,) = figure.axes
    n = len(section.mean_gpus)
    starts = section.first_bin_s + section.bin_s * np.arange(n + 1)
    mean = np.append(section.mean_gpus, section.mean_gpus[-1])
    peak = np.append(section.max_gpus, section.max_gpus[-1])
    if section.origin_unix is not None:
        stamps = (section.origin_unix + starts).astype("datetime64[s]")
        # matplotlib's date converter picks the locator and formatter for datetime64 values.
        x: np.ndarray = stamps.astype("datetime64[ms]")
        ax.set_xlabel("date (UTC)")
    else:
        x = starts / 86400.0
        ax.set_xlabel("time since trace start (days)")
    step = bin_text(section.bin_s)
    ax.fill_between(
        x, 0, peak, step="post", color=JOBS_COLOR, alpha=0.25, lw=0, label=f"max per {step} bin"
    )
    ax.step(x, mean, where="post", color=JOBS_COLOR, lw=1.2, label=f"mean per {step} bin")
    top = max(section.peak_gpus, 1.0)
    if section.capacity_gpus:
        name = f" ({section.capacity_name})" if section.capacity_name else ""
        label = f"capacity{name}: {section.capacity_gpus:,} GPUs"
        if section.capacity_gpus <= CAPACITY_SCALE_LIMIT * top:
            top = max(top, section.capacity_gpus)
            ax.axhline(section.capacity_gpus, color=CAPACITY_COLOR, ls="--", lw=1.2, label=label)
        else:
            # Drawn to scale, a capacity far above the demand would flatten the curve to the
            # axis; the legend states it instead.
            ax.plot([], [], color=CAPACITY_COLOR, ls="--", lw=1.2, label=f"{label} (off scale)")
    # Head room above the highest line keeps the one-row legend clear of the data.
    ax.set_ylim(0, 1.2 * top)
    ax.set_ylabel("GPUs in use by running jobs")
    basis = (
        "original start/end times"
        if section.basis == "start/end"
        else "submit + run time (start times unknown: demand, not usage)"
    )
    ax.set_title(f"Cluster-wide GPU demand over time, from {basis}")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=9, ncols=3)
    return figure


def user_concentration_figure(section: UserConcentration) -> Figure:
    """Cumulative share of GPU-time against share of users, heaviest users first, with the top
    1/5/10% marked; the diagonal is an even split."""
    figure = new_figure(1, width=7.5, height=4.8)
    (ax,) = figure.axes
    x = np.array(section.curve_users) * 100
    y = np.array(section.curve_gpu_time) * 100
    ax.plot(x, y, color=GPU_TIME_COLOR, lw=1.8, label="users, heaviest first")
    ax.plot([0, 100], [0, 100], color="#999999", ls=":", lw=1, label="even split")
    for top in section.top:
        px, py = 100 * top.users / section.users, 100 * top.share_gpu_time
        ax.plot([px], [py], "o", color="black", ms=4)
        ax.annotate(
            f"top {top.percent}% ({top.users:,} user{'s' if top.users > 1 else ''}): {py:.1f}%",
            (px, py),
            xytext=(12, -14 - 12 * TOP_LABEL_ROWS.get(top.percent, 0)),
            textcoords="offset points",
            fontsize=8,
        )
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 101)
    ax.xaxis.set_major_formatter(PercentFormatter())
    ax.yaxis.set_major_formatter(PercentFormatter())
    ax.set_xlabel(f"share of users ({section.users:,} users with GPU jobs)")
    ax.set_ylabel("cumulative share of GPU-time (%)")
    ax.set_title("GPU-time concentration across users")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    return figure


def vc_figure(section: VcTable) -> Figure:
    """Per-VC share of jobs and of GPU-time, the VCs with the most GPU-time first (at most
    :data:`MAX_VCS_SHOWN`)."""
    rows = list(section.rows[:MAX_VCS_SHOWN])
    figure = new_figure(1, height=max(2.6, 1.0 + 0.34 * len(rows)))
    (ax,) = figure.axes
    rows.reverse()
    series = [("share of jobs", [r.share_jobs for r in rows], JOBS_COLOR)]
    if any(r.share_gpu_time is not None for r in rows):
        series.append(("share of GPU-time", [r.share_gpu_time or 0.0 for r in rows], "#DD8452"))
    _grouped_bars(ax, [r.vc for r in rows], series, horizontal=True)
    ax.set_xlabel("share (%)")
    ax.set_ylabel("virtual cluster")
    shown = "" if len(rows) == len(section.rows) else f" (top {len(rows)} of {len(section.rows)})"
    ax.set_title(f"Jobs and GPU-time per virtual cluster{shown}")
    return figure


def cdf_pair(curves: dict[str, Distribution], what: str, titles: tuple[str, str]) -> Figure:
    """CDFs of ``curves`` on a log time axis: "all jobs" and "GPU jobs" (left), the other
    curves, GPU-demand buckets (right); ``what`` labels the x axis, ``titles`` the two axes."""
    figure = new_figure(2)
    left, right = figure.axes
    overall = {k: v for k, v in curves.items() if k in OVERALL_STYLES}
    buckets = {k: v for k, v in curves.items() if k not in OVERALL_STYLES}
    values = [q for d in curves.values() for q in d.quantiles]
    lo, hi = max(min(values), LOG_FLOOR_S), max(max(values), LOG_FLOOR_S * 10)
    for ax, group, title in ((left, overall, titles[0]), (right, buckets, titles[1])):
        colors = _bucket_colors(len(group))
        for i, (label, dist) in enumerate(group.items()):
            color, style = OVERALL_STYLES.get(label, (colors[i], "-"))
            x = np.maximum(np.array(dist.quantiles), LOG_FLOOR_S)
            ax.step(
                x,
                np.array(CDF_PROBABILITIES) * 100,
                where="post",
                color=color,
                ls=style,
                lw=1.6,
                label=f"{label} (n={dist.count:,}, median {duration_text(dist.median)})",
            )
        time_axis(ax, lo, hi)
        ax.set_ylim(0, 101)
        ax.yaxis.set_major_formatter(PercentFormatter())
        ax.set_xlabel(f"{what} (log scale)")
        ax.set_ylabel("cumulative share of jobs (%)")
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        if group:
            ax.legend(loc="lower right", fontsize=8)
    return figure


def _grouped_bars(
    ax: Axes,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float], str]],
    horizontal: bool,
) -> None:
    """Side-by-side bars of shares (0..1, drawn as %) with their values written at the ends."""
    positions = np.arange(len(labels))
    width = 0.8 / len(series)
    top = 0.0
    for i, (name, shares, color) in enumerate(series):
        offset = positions + (i - (len(series) - 1) / 2) * width
        values = np.array(shares, dtype=float) * 100
        top = max(top, float(values.max()) if len(values) else 0.0)
        if horizontal:
            drawn = ax.barh(offset, values, height=width, color=color, label=name)
        else:
            drawn = ax.bar(offset, values, width=width, color=color, label=name)
        ax.bar_label(drawn, labels=[f"{v:.1f}" for v in values], fontsize=7, padding=2)
    # Legends sit outside the bars (right of horizontal ones, in head room above vertical
    # ones) so that no bar or value label is hidden whatever the data.
    if horizontal:
        ax.set_yticks(positions, labels)
        ax.set_xlim(0, max(top * 1.15, 1.0))
        ax.grid(True, axis="x", alpha=0.3)
        # The legend lists the series top to bottom, as the bars are drawn.
        handles, names = ax.get_legend_handles_labels()
        ax.legend(
            handles[::-1], names[::-1], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8
        )
    else:
        ax.set_xticks(positions, labels)
        ax.set_ylim(0, max(top * 1.3, 1.0))
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(loc="upper center", ncols=len(series), fontsize=8)


def time_axis(ax: Axes, lo: float, hi: float) -> None:
    """Log x axis from ``lo`` to ``hi`` seconds with ticks at round durations."""
    ax.set_xscale("log")
    ax.set_xlim(lo / 1.3, hi * 1.3)
    ticks = [(t, label) for t, label in TIME_TICKS if lo / 1.3 <= t <= hi * 1.3]
    ax.xaxis.set_major_locator(FixedLocator([t for t, _ in ticks]))
    names = dict(ticks)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: names.get(v, "")))
    ax.xaxis.set_minor_locator(NullLocator())


def _power_of_two_ticks(ax: Axes, lo: float, hi: float) -> None:
    first, last = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    ticks = [2.0**k for k in range(first, last + 1)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _gpu_text(v)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(2.0**first / 1.2, 2.0**last * 1.2)


def _bucket_colors(n: int) -> list[str]:
    palette = ["#4C72B0", "#55A868", "#DD8452", "#C44E52", "#8172B3", "#937860"]
    return [palette[i % len(palette)] for i in range(n)]


def _gpu_text(gpus: float) -> str:
    if gpus >= 1:
        return f"{gpus:g}"
    return f"1/{round(1 / gpus)}"


def bin_text(seconds: float) -> str:
    """A bin width as a legend writes it: "5 min", "1 h", else seconds."""
    for size, unit in ((86400 * 7, "wk"), (86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} s"


def duration_text(seconds: float) -> str:
    """A duration as a legend writes it, to three digits: "42 s", "3.5 h", "2.1 d"."""
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"
