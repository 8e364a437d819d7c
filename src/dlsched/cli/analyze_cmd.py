"""``dlsched analyze``: a workload characterization report of a trace, or the report of a run
directory (job run or serving run)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import BAD_ROWS_HINT, user_errors
from dlsched.cli.options import ForceOpt, TraceArg, TraceOpt, one_trace
from dlsched.extras import require
from dlsched.trace.read import read_trace
from dlsched.trace.readers import FORMAT_NAMES

# Per kind of run directory: what it is (in refusals).
RUN_KINDS = {"serving": "a serving run directory", "jobs": "a job run directory"}
FORMAT_HELP = f"Trace format ({', '.join(FORMAT_NAMES)}); default: detect from the header."


def analyze(
    path: TraceArg = None,
    *,
    out: Annotated[Path, typer.Option(help="Report directory to write (atomically).")],
    trace: TraceOpt = None,
    trace_format: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    skip_bad_rows: Annotated[
        bool, typer.Option(help="Drop bad rows (their count is reported) instead of failing.")
    ] = False,
    cluster: Annotated[
        str | None,
        typer.Option(help="Cluster whose GPU capacity to draw: built-in name, TOML or 32x8."),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Characterize a trace (run times, GPU demand, states, submissions, queueing, cluster
    demand, users, recurrence, VCs) or report a run directory (job or serving run): writes
    index.html, PNG figures and stats.json to --out.
    Sections the trace lacks the fields for are marked as not available. An LLM request trace
    (Azure LLM, BurstGPT, Mooncake) gets its arrival rate over time and length distributions;
    a serving run directory (serve-sim) gets latency CDFs, replicas and GPU use over time; a
    job run directory (simulate: rigid, elastic, PS or mixed jobs) gets JCT and queueing-delay
    CDFs, GPU utilization and queue length over time and a per-partition (VC) table, and,
    for a run with queues (simulate --queues), the tenant report in tenants/: per-tenant GPUs
    held and borrowed over time against nominal quota, and JCT and queueing per tenant."""
    require("dlsched analyze", "analysis")
    from dlsched.serving.readers import REQUEST_FORMAT_NAMES
    from dlsched.serving.readers.read import is_request_file
    from dlsched.serving.run_report import is_serving_run
    from dlsched.tenancy.run_report import is_job_run

    with user_errors(BAD_ROWS_HINT):
        given = one_trace(path, trace)
        serving_run = is_serving_run(given)
        job_run = is_job_run(given)
    if serving_run or job_run:
        kind = "serving" if serving_run else "jobs"
        _analyze_run(given, out, kind, trace_format, cluster, force)
        return
    if trace_format in REQUEST_FORMAT_NAMES or (trace_format is None and is_request_file(given)):
        _analyze_requests(given, out, trace_format, skip_bad_rows, cluster, force)
        return
    from dlsched.analysis.characterize import Unavailable, characterize
    from dlsched.analysis.report import REPORT_DIR, SECTIONS, TraceInput, write_report
    from dlsched.cluster.parse import resolve_cluster

    with user_errors(BAD_ROWS_HINT):
        trace = one_trace(path, trace)
        REPORT_DIR.check(out, force, inputs=[trace])
        spec = resolve_cluster(cluster) if cluster is not None else None
        result = read_trace(trace, trace_format, skip_bad_rows=skip_bad_rows)
        report = characterize(
            result.trace,
            capacity_gpus=None if spec is None else spec.total_gpus,
            capacity_name=None if spec is None else spec.name,
        )
        source = TraceInput(trace, result.format, result.rows_read, len(result.errors))
        write_report(out, report, source, force)
    missing = [
        f"{attr} ({section.reason})"
        for attr, _, _ in SECTIONS
        if isinstance(section := getattr(report, attr), Unavailable)
    ]
    ov = report.overview
    typer.echo(
        f"{trace}: {result.format}, {result.rows_read:,} rows read, {len(result.errors):,} "
        f"rejected, {ov.jobs:,} jobs ({ov.gpu_jobs:,} GPU jobs); wrote {out / 'index.html'}"
    )
    if missing:
        typer.echo("not available: " + "; ".join(missing))
    if result.errors:
        typer.echo(f"skipped {len(result.errors)} bad rows; first: {result.errors[0]}", err=True)


def _analyze_requests(
    trace: str,
    out: Path,
    trace_format: str | None,
    skip_bad_rows: bool,
    cluster: str | None,
    force: bool,
) -> None:
    from dlsched.serving.characterize import characterize_requests
    from dlsched.serving.readers.read import read_requests
    from dlsched.serving.report import REQUEST_REPORT_DIR, write_request_report

    with user_errors(BAD_ROWS_HINT):
        if cluster is not None:
            raise ValueError("--cluster does not apply to a request trace (no GPU demand)")
        REQUEST_REPORT_DIR.check(out, force, inputs=[trace])
        result = read_requests(trace, trace_format, skip_bad_rows)
        report = characterize_requests(result.trace)
        write_request_report(out, result.trace, report, result.format, force)
    typer.echo(
        f"{trace}: {result.format}, {result.rows_read:,} rows read, {len(result.errors):,} "
        f"rejected, {report.requests:,} requests; wrote {out / 'index.html'}"
    )


def _analyze_run(
    run: str,
    out: Path,
    kind: str,
    trace_format: str | None,
    cluster: str | None,
    force: bool,
) -> None:
    """The report of a run directory: ``kind`` ``serving`` (serve-sim) or ``jobs``
    (simulate)."""
    if kind == "serving":
        from dlsched.serving.run_report import SERVING_REPORT_DIR as report_dir
        from dlsched.serving.run_report import write_serving_report as write
    else:
        from dlsched.analysis.run_report import RUN_REPORT_DIR as report_dir
        from dlsched.analysis.run_report import write_run_report as write
    from dlsched.metrics.rundir import TENANTS_FILE

    with user_errors():
        _refuse_trace_options(RUN_KINDS[kind], trace_format, cluster)
        report_dir.check(out, force, inputs=[run])
        write(run, out, force)
    if kind == "serving":
        done = "serving run"
    elif (Path(run) / TENANTS_FILE).is_file():
        done = f"job run with queues (tenant report in {out / 'tenants'})"
    else:
        done = "job run"
    typer.echo(f"{run}: {done}; wrote {out / 'index.html'}")


def _refuse_trace_options(what: str, trace_format: str | None, cluster: str | None) -> None:
    """ValueError naming ``--format`` or ``--cluster`` when given for a run directory."""
    for flag, value in (("--format", trace_format), ("--cluster", cluster)):
        if value is not None:
            raise ValueError(f"{flag} does not apply to {what}")
