"""The characterization report directory: ``index.html``, its PNG figures and ``stats.json``.

The page needs nothing but the files beside it (inline CSS, no scripts, no web fonts). Every
number it shows is in ``stats.json``, which holds each section's statistics as computed, the
CDF probability grid the quantiles refer to, and the input's row and job counts. A directory is
written whole or not at all: files go to a fresh sibling directory renamed into place at the end.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from dlsched.analysis.characterize import (
    CDF_PROBABILITIES,
    TOP_USER_PERCENTS,
    WEEKDAYS,
    Characterization,
    ClusterDemand,
    Distribution,
    DurationCdfs,
    FinalStates,
    GpuDemand,
    QueueingDelays,
    Recurrence,
    Submissions,
    Unavailable,
    UserConcentration,
    VcTable,
)
from dlsched.analysis.figures import (
    cluster_demand_figure,
    duration_figure,
    gpu_demand_figure,
    queueing_figure,
    states_figure,
    submissions_figure,
    user_concentration_figure,
    vc_figure,
)
from dlsched.analysis.html import escape as _e
from dlsched.analysis.html import page_start, pairs
from dlsched.analysis.html import paragraph as _p
from dlsched.analysis.html import table as _table
from dlsched.analysis.units import duration, gpu_hours, num, pct
from dlsched.outdir import DirKind

STATS_VERSION = 1
INDEX, STATS = "index.html", "stats.json"
# (section attribute, heading, figure file or None)
SECTIONS: tuple[tuple[str, str, str | None], ...] = (
    ("durations", "Job run time", "durations.png"),
    ("gpu_demand", "GPU demand", "gpu_demand.png"),
    ("states", "Final states", "states.png"),
    ("submissions", "Submissions by hour and weekday", "submissions.png"),
    ("queueing", "Queueing delay", "queueing.png"),
    ("cluster_demand", "Cluster-wide GPU demand over time", "cluster_demand.png"),
    ("users", "GPU-time concentration across users", "users.png"),
    ("recurrence", "Job recurrence", None),
    ("vcs", "Virtual clusters", "vcs.png"),
)
REPORT_FILES = frozenset({INDEX, STATS} | {f for _, _, f in SECTIONS if f})
HELIOS_CITATION = (
    "Hu, Sun, Yan, Wen, Zhang, “Characterization and Prediction of Deep Learning Workloads in "
    "Large-Scale GPU Datacenters”, SC'21"
)


class ReportDirError(ValueError):
    """``--out`` names something that is not a report directory and must not be replaced."""


REPORT_DIR = DirKind("report directory", REPORT_FILES, ReportDirError)
"""Characterization reports as outputs (:mod:`dlsched.outdir`)."""


@dataclass(frozen=True)
class TraceInput:
    """How the trace was read: its path, detected format, data rows and rejected rows."""

    path: str
    format: str
    rows_read: int
    rows_rejected: int


def write_report(
    out: str | Path, report: Characterization, source: TraceInput, force: bool = False
) -> Path:
    """Write the report directory ``out`` atomically; an earlier report there is replaced only
    with ``force``.

    Raises :class:`ReportDirError` when ``out`` exists and is a file or a directory holding
    anything a report does not write (it is never deleted for a report).
    """

    def fill(tmp: Path) -> None:
        written: set[str] = set()
        for name, figure in report_figures(report).items():
            figure.savefig(tmp / name)
            written.add(name)
        stats = report_stats(report, source)
        (tmp / STATS).write_text(json.dumps(stats, indent=1, allow_nan=False) + "\n")
        (tmp / INDEX).write_text(render_html(report, source, written), encoding="utf-8")

    return REPORT_DIR.write(out, fill, force)


def report_figures(report: Characterization) -> dict[str, Figure]:
    """The figure of every available section, keyed by its file name."""
    drawers: dict[str, Callable[[Any], Figure]] = {
        "durations": duration_figure,
        "gpu_demand": gpu_demand_figure,
        "states": states_figure,
        "submissions": submissions_figure,
        "queueing": queueing_figure,
        "cluster_demand": cluster_demand_figure,
        "users": user_concentration_figure,
        "vcs": vc_figure,
    }
    out: dict[str, Figure] = {}
    for attr, _, filename in SECTIONS:
        section = getattr(report, attr)
        if filename and not isinstance(section, Unavailable):
            out[filename] = drawers[attr](section)
    return out


def report_stats(report: Characterization, source: TraceInput) -> dict[str, Any]:
    """The JSON document of ``stats.json``: input counts, overview and every section.

    An unavailable section is ``{"available": false, "reason": ...}``; an available one has
    ``"available": true`` beside its fields. Quantile lists refer to ``cdf_probabilities``.
    """
    sections: dict[str, Any] = {}
    for attr, _, filename in SECTIONS:
        section = getattr(report, attr)
        if isinstance(section, Unavailable):
            sections[attr] = {"available": False, "reason": section.reason}
        else:
            body = dataclasses.asdict(section)
            sections[attr] = {"available": True, "figure": filename, **body}
    ov = report.overview
    return {
        "dlsched_characterization": STATS_VERSION,
        "input": {
            "path": source.path,
            "format": source.format,
            "rows_read": source.rows_read,
            "rows_rejected": source.rows_rejected,
            "jobs": ov.jobs,
            "gpu_jobs": ov.gpu_jobs,
        },
        "overview": dataclasses.asdict(ov),
        "cdf_probabilities": list(CDF_PROBABILITIES),
        "sections": sections,
    }


def render_html(report: Characterization, source: TraceInput, figures: Iterable[str]) -> str:
    """The report page; ``figures`` are the figure files present beside it."""
    present = set(figures)
    title = f"Workload characterization: {Path(source.path).name}"
    parts = [
        *page_start(title, CSS),
        _overview_html(report, source),
        _contents_html(report),
    ]
    renderers: dict[str, Callable[[Any], tuple[str, str]]] = {
        "durations": _durations_html,
        "gpu_demand": _gpu_demand_html,
        "states": _states_html,
        "submissions": _submissions_html,
        "queueing": _queueing_html,
        "cluster_demand": _cluster_demand_html,
        "users": _users_html,
        "recurrence": _recurrence_html,
        "vcs": _vcs_html,
    }
    for attr, heading, filename in SECTIONS:
        section = getattr(report, attr)
        parts.append(f'<section id="{attr}"><h2>{_e(heading)}</h2>')
        if isinstance(section, Unavailable):
            parts.append(f'<p class="unavailable">Not available: {_e(section.reason)}.</p>')
        else:
            intro, body = renderers[attr](section)
            parts.append(intro)
            if filename in present:
                parts.append(f'<figure><img src="{filename}" alt="{_e(heading)} figure"></figure>')
            parts.append(body)
        parts.append("</section>")
    parts.append(
        "<footer><p>Sections follow the workload characterization of the Helios study ("
        f"{_e(HELIOS_CITATION)}). Every number on this page is in "
        f'<a href="{STATS}">{STATS}</a>; CDFs are stored as quantiles at the probabilities '
        "listed there. Written by dlsched.</p></footer></main></body></html>"
    )
    return "\n".join(parts) + "\n"


def _overview_html(report: Characterization, source: TraceInput) -> str:
    ov = report.overview
    share = f" ({pct(ov.gpu_jobs / ov.jobs)})" if ov.jobs else ""
    rows: list[tuple[str, str]] = [
        ("file", source.path),
        ("format", source.format),
        ("rows read / rejected", f"{source.rows_read:,} / {source.rows_rejected:,}"),
        ("jobs analyzed", f"{ov.jobs:,}"),
        ("GPU jobs", f"{ov.gpu_jobs:,}{share}"),
        ("CPU-only jobs", f"{ov.cpu_jobs:,}"),
    ]
    if ov.shared_gpu_jobs:
        rows.append(("jobs sharing one GPU (<1 GPU)", f"{ov.shared_gpu_jobs:,}"))
    rows.append(("jobs with a known run time", f"{ov.jobs_with_duration:,}"))
    if ov.total_gpu_time_s is not None:
        rows.append(("total GPU-time", gpu_hours(ov.total_gpu_time_s)))
    if ov.first_submit_s is not None and ov.last_submit_s is not None:
        if ov.first_submit_utc and ov.last_submit_utc:
            span = f"{ov.first_submit_utc} … {ov.last_submit_utc}"
        else:
            span = f"{num(ov.first_submit_s)} s … {num(ov.last_submit_s)} s (relative times)"
        rows.append(("submissions", span))
    rows.append(("users", "not recorded" if ov.users is None else f"{ov.users:,}"))
    rows.append(("virtual clusters", "not recorded" if ov.vcs is None else f"{ov.vcs:,}"))
    rows.append(("fields with values", ", ".join(ov.fields_present)))
    return pairs(rows)


def _contents_html(report: Characterization) -> str:
    items = []
    for attr, heading, _ in SECTIONS:
        missing = isinstance(getattr(report, attr), Unavailable)
        note = ' <span class="muted">(not available)</span>' if missing else ""
        items.append(f'<li><a href="#{attr}">{_e(heading)}</a>{note}</li>')
    return f"<nav><h2>Contents</h2><ol>{''.join(items)}</ol></nav>"


def distribution_table(curves: dict[str, Distribution], what: str) -> str:
    """A table of CDF summaries (count, mean, median, p95, shares within a minute, an hour
    and a day), one row per curve; ``what`` names the quantity in the head."""
    head = ["group", "jobs", f"mean {what}", f"median {what}", "95th percentile"]
    head += ["share ≤ 1 min", "share ≤ 1 h", "share ≤ 1 day"]
    rows = [
        [
            label,
            f"{d.count:,}",
            duration(d.mean),
            duration(d.median),
            duration(d.p95),
            pct(d.share_within_1min),
            pct(d.share_within_1h),
            pct(d.share_within_1day),
        ]
        for label, d in curves.items()
    ]
    return _table(head, rows)


def _durations_html(section: DurationCdfs) -> tuple[str, str]:
    intro = (
        "Cumulative share of jobs by run time, for all jobs, GPU jobs and GPU jobs by GPUs "
        "requested, on a log scale (run times span seconds to weeks)."
    )
    if section.jobs_without_duration:
        intro += (
            f" {section.jobs_without_duration:,} jobs without a run time (never started, or "
            "not recorded) are left out."
        )
    return _p(intro), distribution_table(section.curves, "run time")


def _gpu_demand_html(section: GpuDemand) -> tuple[str, str]:
    known = section.gpu_time_s is not None
    intro = (
        "How GPU jobs, and the GPU-time they use, split by GPUs requested; a share of one GPU "
        "counts as that fraction of a GPU (bucket <1)."
    )
    if known:
        intro += (
            " GPU-time is GPUs × run time over GPU jobs with a known run time (total "
            f"{gpu_hours(section.gpu_time_s or 0.0)}; "
            f"{section.gpu_jobs_without_duration:,} GPU jobs without one)."
        )
    else:
        intro += " The trace has no run times, so GPU-time is not available."
    head = ["GPUs", "GPU jobs", "share of GPU jobs"]
    if known:
        head += ["GPU-time", "share of GPU-time"]

    def cells(
        label: str, jobs: int, share: float, time: float | None, of: float | None
    ) -> list[str]:
        row = [label, f"{jobs:,}", pct(share)]
        if known:
            row += [gpu_hours(time or 0.0), pct(of or 0.0)]
        return row

    buckets = [
        cells(b.bucket, b.jobs, b.share_jobs, b.gpu_time_s, b.share_gpu_time)
        for b in section.buckets
    ]
    levels = [
        cells(f"{lv.gpus:g}", lv.jobs, lv.share_jobs, lv.gpu_time_s, lv.share_gpu_time)
        for lv in section.levels
    ]
    body = (
        _table(head, buckets)
        + f"<details><summary>By exact GPU count ({len(levels)} values)</summary>"
        + _table(head, levels)
        + "</details>"
    )
    return _p(intro), body


def _states_html(section: FinalStates) -> tuple[str, str]:
    head = ["state", "jobs", "share of jobs", "GPU jobs", "share of GPU jobs"]
    known = any(r.gpu_time_s is not None for r in section.rows)
    if known:
        head += ["GPU-time", "share of GPU-time"]
    rows = []
    for r in section.rows:
        row = [r.state, f"{r.jobs:,}", pct(r.share_jobs), f"{r.gpu_jobs:,}"]
        row.append(pct(r.share_gpu_jobs))
        if known:
            row += [gpu_hours(r.gpu_time_s or 0.0), pct(r.share_gpu_time or 0.0)]
        rows.append(row)
    intro = (
        "The last state of each job, with its share of jobs and of GPU-time. RUNNING and "
        "PENDING mean the job was still running, or never scheduled, when the trace ends."
    )
    if section.jobs_without_state:
        intro += f" {section.jobs_without_state:,} jobs without a state are left out."
    return _p(intro), _table(head, rows)


def _submissions_html(section: Submissions) -> tuple[str, str]:
    days = _table(
        ["", *WEEKDAYS],
        [
            ["all jobs", *(f"{c:,}" for c in section.by_weekday)],
            ["GPU jobs", *(f"{c:,}" for c in section.gpu_by_weekday)],
        ],
    )
    hours = _table(
        ["hour (UTC)", "all jobs", "GPU jobs"],
        [
            [f"{h:02d}:00", f"{a:,}", f"{g:,}"]
            for h, (a, g) in enumerate(zip(section.by_hour, section.gpu_by_hour, strict=True))
        ],
    )
    intro = (
        "Jobs submitted per hour of day and per day of week, in UTC, totalled over the "
        f"{section.days_covered:,.1f} days between the first and the last submission."
    )
    body = days + "<details><summary>By hour of day</summary>" + hours + "</details>"
    return _p(intro), body


def _queueing_html(section: QueueingDelays) -> tuple[str, str]:
    intro = (
        "Queueing delay = original start time − submit time, for all jobs, GPU jobs and GPU "
        "jobs by GPUs requested, on a log scale (delays under a second are drawn at 1 s)."
    )
    if section.jobs_without_start:
        intro += (
            f" {section.jobs_without_start:,} jobs that never started (no start time) are left out."
        )
    return _p(intro), distribution_table(section.curves, "delay")


def _cluster_demand_html(section: ClusterDemand) -> tuple[str, str]:
    if section.basis == "start/end":
        basis = "the original start and end times of the GPU jobs."
    else:
        basis = (
            "submit time + run time: the trace has no start times, so every job is placed at its "
            "submission. This is the demand the jobs put on the cluster, not what the cluster "
            "ran, and it may exceed the capacity."
        )
    rows = [
        ("peak GPUs in use", num(section.peak_gpus)),
        ("time-average GPUs in use", num(section.time_avg_gpus)),
        ("span (first start to last end)", duration(section.span_s)),
        ("bin width of the figure", duration(section.bin_s)),
        ("GPU jobs counted", f"{section.jobs_counted:,}"),
        ("GPU jobs not counted (never ran or no run time)", f"{section.jobs_not_counted:,}"),
    ]
    if section.capacity_gpus:
        name = f" ({section.capacity_name})" if section.capacity_name else ""
        over = pct(section.share_time_over_capacity or 0.0)
        rows.append((f"cluster capacity{name}", f"{section.capacity_gpus:,} GPUs"))
        rows.append(("time-average demand / capacity", pct(section.avg_utilization or 0.0)))
        rows.append(("share of time demand exceeds capacity", over))
    else:
        rows.append(("cluster capacity", "not given (pass --cluster)"))
    return _p(f"GPUs held by running jobs over time, from {basis}"), pairs(rows)


def _users_html(section: UserConcentration) -> tuple[str, str]:
    rows = [
        [f"top {t.percent}%", f"{t.users:,}", pct(t.share_gpu_time), pct(t.share_gpu_jobs)]
        for t in section.top
    ]
    percents = "/".join(str(p) for p in TOP_USER_PERCENTS)
    intro = (
        f"The {section.users:,} users with GPU jobs of known run time, ranked by GPU-time "
        f"(total {gpu_hours(section.gpu_time_s)}), and the share of it the top {percents}% "
        "of users hold (at least one user each)."
    )
    head = ["users", "count", "share of GPU-time", "share of GPU jobs"]
    return _p(intro), _table(head, rows)


def _recurrence_html(section: Recurrence) -> tuple[str, str]:
    rows = [
        ("jobs with a user and a job name", f"{section.jobs_considered:,}"),
        ("recurrent jobs (same user, same name submitted before)", f"{section.recurrent_jobs:,}"),
        ("share of jobs that recur", pct(section.share_recurrent)),
        ("distinct (user, name) pairs", f"{section.distinct_pairs:,}"),
        ("users", f"{section.users:,}"),
    ]
    if section.share_gpu_time_recurrent is not None:
        rows.append(("share of GPU-time in recurrent jobs", pct(section.share_gpu_time_recurrent)))
    intro = (
        "How often a user submits a job whose name they used before, which history-based "
        "run-time estimates rely on."
    )
    return _p(intro), pairs(rows)


def _vcs_html(section: VcTable) -> tuple[str, str]:
    head = ["VC", "jobs", "share of jobs", "GPU jobs", "GPU-time", "share of GPU-time"]
    head += ["mean GPU-job run time", "median GPU-job run time", "mean GPU-job queueing"]
    rows = [
        [
            r.vc,
            f"{r.jobs:,}",
            pct(r.share_jobs),
            f"{r.gpu_jobs:,}",
            "—" if r.gpu_time_s is None else gpu_hours(r.gpu_time_s),
            "—" if r.share_gpu_time is None else pct(r.share_gpu_time),
            "—" if r.mean_duration_s is None else duration(r.mean_duration_s),
            "—" if r.median_duration_s is None else duration(r.median_duration_s),
            "—" if r.mean_queue_s is None else duration(r.mean_queue_s),
        ]
        for r in section.rows
    ]
    intro = (
        "Per virtual cluster, most GPU-time first; run times and queueing are over the VC's "
        "GPU jobs (— where none is known)."
    )
    if not section.queue_known:
        intro += " Queueing is not available: the trace has no start times."
    if section.jobs_without_vc:
        intro += f" {section.jobs_without_vc:,} jobs without a VC are left out."
    return _p(intro), _table(head, rows)


CSS = """
body{margin:0;background:#f6f6f4;color:#222;font:15px/1.5 system-ui,-apple-system,"Segoe UI",
Roboto,Helvetica,Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:24px 32px 48px;background:#fff}
h1{font-size:1.6em;margin:.2em 0 .6em}
h2{font-size:1.25em;border-bottom:2px solid #e2e2de;padding-bottom:4px;margin-top:1.8em}
nav h2{border:0;margin:.6em 0 .2em;font-size:1.05em}
nav ol{columns:2;margin:0 0 1em}
table{border-collapse:collapse;margin:.6em 0 1em;font-size:.92em}
th,td{padding:4px 10px;border-bottom:1px solid #e6e6e6;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}
thead th{background:#f0f0ec;border-bottom:2px solid #d0d0cc}
table.pairs th{text-align:left;font-weight:600;background:none;padding-right:24px}
table.pairs td{text-align:left}
figure{margin:.8em 0}
figure img{max-width:100%;height:auto;border:1px solid #eee}
.unavailable{background:#f4f4f4;border-left:4px solid #b0b0b0;padding:8px 12px;color:#555}
.muted{color:#888}
details{margin:.4em 0 1em}
summary{cursor:pointer;color:#335}
footer{margin-top:2.5em;font-size:.85em;color:#666;border-top:1px solid #e2e2de}
"""
