"""Figures of a job run's report, drawn from its analysis only
(:mod:`dlsched.analysis.run_analysis`), on Agg canvases like every report figure
(:mod:`dlsched.analysis.figures`)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from dlsched.analysis.figures import JOBS_COLOR, bin_text, cdf_pair, new_figure
from dlsched.analysis.run_analysis import ClusterTimeline, JobCdfs

UP_COLOR, WAITING_COLOR = "#555555", "#DD8452"
DAY_S, HOUR_S = 86400.0, 3600.0
# Spans up to this many seconds are drawn in hours, longer ones in days.
HOURS_UP_TO_S = 3 * DAY_S


def jct_figure(section: JobCdfs, policy: str) -> Figure:
    """JCT CDFs of the finished jobs: all and GPU jobs (left), by GPUs (right); log x."""
    figure = cdf_pair(
        section.curves,
        "job completion time (end − submit)",
        (f"JCT under {policy}: all jobs and GPU jobs", "JCT by GPUs"),
    )
    figure.suptitle("Job completion time CDF (finished jobs)", fontsize=12)
    return figure


def queueing_figure(section: JobCdfs, policy: str) -> Figure:
    """Queueing-delay CDFs like :func:`jct_figure` (delays under 1 s drawn at 1 s)."""
    figure = cdf_pair(
        section.curves,
        "queueing delay (first start − submit)",
        (f"Queueing delay under {policy}: all jobs and GPU jobs", "Queueing delay by GPUs"),
    )
    figure.suptitle("Queueing-delay CDF (delays under 1 s, e.g. none, drawn at 1 s)", fontsize=12)
    return figure


def timeline_figure(section: ClusterTimeline) -> Figure:
    """GPU utilization (left: busy GPUs over all GPUs, mean per bin, maximum shaded; GPUs up
    dashed when it ever differed from all) and jobs waiting (right: mean per bin, maximum
    shaded) over simulated time."""
    figure = new_figure(2)
    use, wait = figure.axes
    n = len(section.busy_gpus_mean)
    starts = section.first_bin_s + section.bin_s * np.arange(n + 1)
    span = section.end_s - section.start_s
    unit, size = ("hours", HOUR_S) if span <= HOURS_UP_TO_S else ("days", DAY_S)
    x = (starts - section.start_s) / size
    step = bin_text(section.bin_s)

    def held(values: tuple[float, ...], scale: float) -> np.ndarray:
        # The last bin's value is repeated so that the step reaches the end of that bin.
        return np.append(values, values[-1]) * scale

    share = 100.0 / section.total_gpus if section.total_gpus else 0.0
    use.fill_between(
        x, 0, held(section.busy_gpus_max, share), step="post", color=JOBS_COLOR, alpha=0.25,
        lw=0, label=f"max per {step} bin",
    )  # fmt: skip
    use.step(
        x, held(section.busy_gpus_mean, share), where="post", color=JOBS_COLOR, lw=1.2,
        label=f"mean per {step} bin",
    )  # fmt: skip
    if section.powered_varies:
        use.step(
            x, held(section.up_gpus_mean, share), where="post", color=UP_COLOR, ls="--", lw=1,
            label="GPUs up",
        )  # fmt: skip
    use.set_ylim(0, 105)
    use.yaxis.set_major_formatter(PercentFormatter())
    use.set_ylabel(f"GPUs busy (% of {section.total_gpus:,})")
    use.set_title("GPU utilization over time")
    wait.fill_between(
        x, 0, held(section.waiting_jobs_max, 1.0), step="post", color=WAITING_COLOR,
        alpha=0.25, lw=0, label=f"max per {step} bin",
    )  # fmt: skip
    wait.step(
        x, held(section.waiting_jobs_mean, 1.0), where="post", color=WAITING_COLOR, lw=1.2,
        label=f"mean per {step} bin",
    )  # fmt: skip
    wait.set_ylim(0, max(1.0, 1.15 * section.peak_waiting_jobs))
    wait.set_ylabel("jobs waiting in their policy's queue")
    wait.set_title("Queue length over time")
    for ax in (use, wait):
        ax.set_xlabel(f"simulated time ({unit} since the first timeline sample)")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    return figure
