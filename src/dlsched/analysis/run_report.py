"""The report of a job run directory (``dlsched analyze RUN_DIR`` on a ``dlsched simulate`` run
of rigid, elastic, PS or mixed jobs): ``index.html``, ``jct_cdf.png``, ``queueing_cdf.png``,
``timeline.png`` and ``stats.json`` (:mod:`dlsched.analysis.run_analysis` computes what they
show). A run with queues also gets its tenant report (:mod:`dlsched.tenancy.run_report`) in
``tenants/``, whose figures the page shows and links; a run in which some job had a deadline, a
Deadlines section (its summary's ``deadlines`` block). The page needs nothing but the files
beside it; every number on it is in ``stats.json``. Written whole or not at all.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from dlsched.analysis.characterize import CDF_PROBABILITIES, Unavailable
from dlsched.analysis.html import escape, page_start, pairs, paragraph, table
from dlsched.analysis.report import CSS, distribution_table
from dlsched.analysis.run_analysis import (
    ClusterTimeline,
    JobCdfs,
    PartitionTable,
    RunAnalysis,
    analyze_run,
)
from dlsched.analysis.run_figures import jct_figure, queueing_figure, timeline_figure
from dlsched.analysis.units import duration, gpu_hours, num, pct
from dlsched.metrics.rundir import TENANTS_FILE
from dlsched.outdir import DirKind
from dlsched.tenancy.run_report import INDEX as TENANT_INDEX
from dlsched.tenancy.run_report import JCT as TENANT_JCT
from dlsched.tenancy.run_report import TENANT_REPORT_DIR, write_tenant_report
from dlsched.tenancy.run_report import USAGE as TENANT_USAGE

STATS_VERSION = 1
INDEX, STATS, TENANTS = "index.html", "stats.json", "tenants"
# (section attribute, heading, figure file or None)
SECTIONS: tuple[tuple[str, str, str | None], ...] = (
    ("jct", "Job completion time", "jct_cdf.png"),
    ("queueing", "Queueing delay", "queueing_cdf.png"),
    ("timeline", "GPU utilization and queue length over time", "timeline.png"),
    ("partitions", "Partitions (VCs)", None),
)
RUN_REPORT_DIR = DirKind(
    "run report directory",
    # An earlier dlsched wrote a run with queues' tenant report here: --force replaces it.
    {INDEX, STATS, TENANTS, *(f for _, _, f in SECTIONS if f), *TENANT_REPORT_DIR.files},
)
"""Run reports as outputs (:mod:`dlsched.outdir`)."""
NOT_AVAILABLE = "n/a"


def write_run_report(run: str | Path, out: str | Path, force: bool = False) -> Path:
    """Write the report of job run directory ``run`` to ``out`` (an earlier report is
    replaced only with ``force``; nothing else ever is). ValueError naming the file when
    ``run`` is incomplete (or its ``tenants.parquet`` is from an earlier dlsched)."""
    run = Path(run)
    analysis = analyze_run(run)
    with_tenants = (run / TENANTS_FILE).is_file()

    def fill(tmp: Path) -> None:
        if with_tenants:
            write_tenant_report(run, tmp / TENANTS)
        written: set[str] = set()
        for name, figure in run_figures(analysis).items():
            figure.savefig(tmp / name)
            written.add(name)
        stats = run_stats(analysis, with_tenants)
        (tmp / STATS).write_text(json.dumps(stats, indent=1, allow_nan=False) + "\n")
        page = render_html(analysis, written, with_tenants)
        (tmp / INDEX).write_text(page, encoding="utf-8")

    return RUN_REPORT_DIR.write(out, fill, force)


def _policy(analysis: RunAnalysis) -> str:
    kinds = analysis.overview.get("kind_policies") or {}
    if len(kinds) > 1:
        return ", ".join(f"{policy} ({kind})" for kind, policy in kinds.items())
    return str(analysis.overview.get("policy") or "?")


def run_figures(analysis: RunAnalysis) -> dict[str, Figure]:
    """The figure of every available section, keyed by its file name."""
    policy = _policy(analysis)
    drawers: dict[str, Callable[[Any], Figure]] = {
        "jct": lambda s: jct_figure(s, policy),
        "queueing": lambda s: queueing_figure(s, policy),
        "timeline": timeline_figure,
    }
    out = {}
    for attr, _, filename in SECTIONS:
        section = getattr(analysis, attr)
        if filename and not isinstance(section, Unavailable):
            out[filename] = drawers[attr](section)
    return out


def _tenants_section(analysis: RunAnalysis, with_tenants: bool) -> dict[str, Any]:
    if with_tenants:
        return {
            "available": True,
            "report": f"{TENANTS}/{TENANT_INDEX}",
            "stats": f"{TENANTS}/stats.json",
            "figures": [f"{TENANTS}/{TENANT_USAGE}", f"{TENANTS}/{TENANT_JCT}"],
        }
    if analysis.queues is None:
        return {"available": False, "reason": "the run had no queues (simulate --queues)"}
    return {
        "available": False,
        "reason": f"the run had queues but no {TENANTS_FILE} (written by an earlier dlsched; "
        "simulate the run again)",
    }


def run_stats(analysis: RunAnalysis, with_tenants: bool) -> dict[str, Any]:
    """The JSON document of ``stats.json``: the run, its overview (figures of its
    ``summary.json``) and every section; an unavailable one is ``{"available": false,
    "reason": ...}``. Quantile lists refer to ``cdf_probabilities``."""
    sections: dict[str, Any] = {}
    for attr, _, filename in SECTIONS:
        section = getattr(analysis, attr)
        if isinstance(section, Unavailable):
            sections[attr] = {"available": False, "reason": section.reason}
        else:
            sections[attr] = {"available": True, "figure": filename, **dataclasses.asdict(section)}
    sections["tenants"] = _tenants_section(analysis, with_tenants)
    return {
        "dlsched_run_report": STATS_VERSION,
        "run": analysis.run,
        "overview": analysis.overview,
        "queues": analysis.queues,
        "cdf_probabilities": list(CDF_PROBABILITIES),
        "sections": sections,
    }


def render_html(analysis: RunAnalysis, figures: set[str], with_tenants: bool) -> str:
    """The report page; ``figures`` are the figure files present beside it."""
    parts = [*page_start(f"Run report: {Path(analysis.run).name}", CSS), _overview(analysis)]
    renderers: dict[str, Callable[[Any], tuple[str, str]]] = {
        "jct": _jct_html,
        "queueing": _queueing_html,
        "timeline": _timeline_html,
        "partitions": _partitions_html,
    }
    for attr, heading, filename in SECTIONS:
        section = getattr(analysis, attr)
        parts.append(f'<section id="{attr}"><h2>{escape(heading)}</h2>')
        if isinstance(section, Unavailable):
            parts.append(f'<p class="unavailable">Not available: {escape(section.reason)}.</p>')
        else:
            intro, body = renderers[attr](section)
            parts.append(intro)
            if filename in figures:
                parts.append(
                    f'<figure><img src="{filename}" alt="{escape(heading)} figure"></figure>'
                )
            parts.append(body)
        parts.append("</section>")
    parts.append(_deadlines_html(analysis))
    parts.append(_tenants_html(analysis, with_tenants))
    parts.append(
        f'<footer><p>Every number on this page is in <a href="{STATS}">{STATS}</a>; CDFs are '
        "stored as quantiles at the probabilities listed there. Written by dlsched.</p>"
        "</footer></main></body></html>"
    )
    return "\n".join(parts) + "\n"


def _text(value: Any, show: Callable[[Any], str] = num) -> str:
    return NOT_AVAILABLE if value is None else show(value)


def _overview(analysis: RunAnalysis) -> str:
    ov = analysis.overview
    kinds = ov.get("job_kinds") or {}
    reasons = ov.get("set_aside_reasons") or {}
    aside = f"{ov.get('jobs_set_aside') or 0:,}"
    if reasons:
        aside += " (" + "; ".join(f"{n:,}: {r}" for r, n in reasons.items()) + ")"
    rows = [
        ("run directory", analysis.run),
        ("policy", _policy(analysis)),
        ("placement", str(ov.get("placement") or NOT_AVAILABLE)),
        ("cluster", str(ov.get("cluster") or NOT_AVAILABLE)),
        ("jobs by kind", ", ".join(f"{k} {n:,}" for k, n in kinds.items() if n) or "—"),
        ("jobs finished / in trace", f"{ov.get('jobs') or 0:,} / {ov.get('jobs_in_trace') or 0:,}"),
        ("jobs set aside", aside),
        ("average JCT", _text(ov.get("avg_jct_s"), duration)),
        ("average queueing delay", _text(ov.get("avg_queue_s"), duration)),
        ("makespan", _text(ov.get("makespan_s"), duration)),
        ("GPU utilization", _text(ov.get("gpu_utilization"), pct)),
        ("preemptions", _text(ov.get("preemptions"))),
        ("energy", _text(ov.get("energy_kwh"), lambda v: f"{num(v)} kWh")),
        ("queues", "none" if analysis.queues is None else f"{analysis.queues} ClusterQueues"),
    ]
    return pairs(rows)


def _curves_intro(section: JobCdfs, what: str) -> str:
    return paragraph(
        f"Cumulative share of the {section.jobs_finished:,} finished jobs by {what}, for all "
        "jobs, GPU jobs and GPU jobs by GPUs, on a log scale."
    )


def _jct_html(section: JobCdfs) -> tuple[str, str]:
    intro = _curves_intro(section, "job completion time (end − submit)")
    return intro, distribution_table(section.curves, "JCT")


def _queueing_html(section: JobCdfs) -> tuple[str, str]:
    intro = _curves_intro(section, "queueing delay (first start − submit; under 1 s drawn at 1 s)")
    return intro, distribution_table(section.curves, "delay")


def _timeline_html(section: ClusterTimeline) -> tuple[str, str]:
    form = (
        "every timeline step"
        if section.form == "grid"
        else "the timeline steps at which a partition changed (each holds until the next)"
    )
    n, of = len(section.partitions), section.partitions_in_cluster
    over = f"the {of} partitions" if n == of else f"the {n} of {of} partitions that ran jobs"
    intro = paragraph(
        f"From the run's timeline ({form}), summed over {over} ({section.total_gpus:,} GPUs): "
        "GPUs busy as a share of them, and jobs waiting: handed to their policy and not "
        "running (in a run with queues, jobs still waiting for admission are not among them)."
    )
    rows = [
        ("span", f"{duration(section.start_s)} … {duration(section.end_s)}"),
        ("bin width of the figure", duration(section.bin_s)),
        ("time-average GPUs busy", num(section.time_avg_busy_gpus)),
        ("time-average utilization", _text(section.time_avg_utilization, pct)),
        ("time-average jobs waiting", num(section.time_avg_waiting_jobs)),
        ("most jobs waiting", f"{section.peak_waiting_jobs:,}"),
    ]
    return intro, pairs(rows)


def _partitions_html(section: PartitionTable) -> tuple[str, str]:
    head = ["partition", "GPUs", "jobs", "GPU-time", "utilization", "mean JCT", "median JCT"]
    head += ["p95 JCT", "mean queueing", "p95 queueing", "jobs waiting (avg)", "(max)"]
    rows = [
        [
            r.partition,
            _text(r.gpus, lambda v: f"{v:,}"),
            f"{r.jobs:,}",
            gpu_hours(r.gpu_time_s),
            _text(r.utilization, pct),
            _text(r.avg_jct_s, duration),
            _text(r.median_jct_s, duration),
            _text(r.p95_jct_s, duration),
            _text(r.avg_queue_s, duration),
            _text(r.p95_queue_s, duration),
            _text(r.avg_waiting_jobs),
            _text(r.peak_waiting_jobs, lambda v: f"{v:,}"),
        ]
        for r in section.rows
    ]
    intro = (
        "Per partition, most GPU-time first: its finished jobs, their GPU-time, utilization "
        f"(GPU-time over its GPUs × the makespan, {duration(section.makespan_s)}), JCT and "
        "queueing (n/a without finished jobs), and the jobs waiting in it over time. A run "
        "with --no-partitions has one partition, *."
    )
    if section.jobs_set_aside:
        intro += f" {section.jobs_set_aside:,} jobs set aside never ran and are in none."
    return paragraph(intro), table(head, rows)


def _deadlines_html(analysis: RunAnalysis) -> str:
    """The deadlines section (the summary's ``deadlines`` block), only for a run in which some
    job had a deadline; else nothing."""
    block = analysis.overview.get("deadlines")
    if not isinstance(block, dict) or not block.get("jobs_with_deadline"):
        return ""
    n = block["jobs_with_deadline"]

    def count(key: str) -> str:
        return _text(block.get(key), lambda v: f"{v:,}")

    rows = [
        ("jobs with a deadline", f"{n:,}"),
        ("deadline satisfaction ratio", _text(block.get("satisfaction_ratio"), pct)),
        ("met (finished by the deadline)", count("met")),
        ("missed: finished late", count("missed_late")),
        ("missed: declined by the policy", count("declined")),
        ("missed: set aside or unfinished", count("not_finished")),
        ("mean tardiness", _text(block.get("tardiness_mean_s"), duration)),
        ("p99 tardiness", _text(block.get("tardiness_p99_s"), duration)),
        ("best-effort jobs (no deadline)", count("best_effort_jobs")),
        ("best-effort average JCT", _text(block.get("best_effort_avg_jct_s"), duration)),
    ]
    intro = paragraph(
        "Jobs with a deadline: met when they finished at or before it. The satisfaction ratio "
        "is those met over all jobs with a deadline (best-effort jobs excluded; a declined or "
        "set-aside job counts as a miss). Tardiness (end − deadline, 0 when met) is over the "
        "finished ones."
    )
    return f'<section id="deadlines"><h2>Deadlines</h2>{intro}{pairs(rows)}</section>'


def _tenants_html(analysis: RunAnalysis, with_tenants: bool) -> str:
    head = '<section id="tenants"><h2>Tenants (ClusterQueues)</h2>'
    info = _tenants_section(analysis, with_tenants)
    if not info["available"]:
        return (
            f'{head}<p class="unavailable">Not available: {escape(info["reason"])}.</p></section>'
        )
    usage, jct = info["figures"]
    return (
        f"{head}<p>The per-tenant table (quotas, GPUs held, borrowed and lent, jobs, JCT, "
        f'queueing, evictions) is in the <a href="{info["report"]}">tenant report</a>.</p>'
        f'<figure><img src="{usage}" alt="GPUs per tenant"></figure>'
        f'<figure><img src="{jct}" alt="JCT and queueing per tenant"></figure></section>'
    )
