"""``dlsched analyze``: a workload characterization report of a trace, the report of a run
directory (job run or serving run), or the comparison of several job run directories or of a
sweep's groups."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dlsched.cli.errors import BAD_ROWS_HINT, user_errors
from dlsched.cli.options import TRACE_HELP, ForceOpt, TraceOpt, one_trace
from dlsched.extras import require
from dlsched.trace.read import read_trace
from dlsched.trace.readers import FORMAT_NAMES

if TYPE_CHECKING:
    from dlsched.analysis.run_comparison import RunComparison

SWEEP, SERVING, JOBS, TRACE = "sweep", "serving", "jobs", "trace"
# Per kind of run directory: what it is (in refusals).
RUN_KINDS = {SERVING: "a serving run directory", JOBS: "a job run directory"}
FORMAT_HELP = f"Trace format ({', '.join(FORMAT_NAMES)}); default: detect from the header."
PathsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help=f"{TRACE_HELP} The same as --trace. Or a run directory, several job run "
        "directories (compared), or a sweep directory (its groups compared).",
        show_default=False,
        metavar="TRACE|RUN_DIR|SWEEP_DIR",
    ),
]


def analyze(
    paths: PathsArg = None,
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
    held and borrowed over time against nominal quota, and JCT and queueing per tenant.

    Several job run directories (e.g. one per policy), or a sweep directory (dlsched sweep:
    its cells grouped by every axis but the seed, the seeds of a group pooled), are compared:
    JCT and queueing-delay CDFs with one line per run or group, labelled by the configuration
    fields that differ between them, utilization and queue length over time on shared axes,
    and a table per run or group (jobs, mean, median and p95 JCT, mean queueing, GPU
    utilization). A figure draws the first 10 lines (in the order given, or the grid's); the
    table and stats.json hold all."""
    require("dlsched analyze", "analysis")
    from dlsched.serving.readers import REQUEST_FORMAT_NAMES
    from dlsched.serving.readers.read import is_request_file

    if paths is not None and len(paths) > 1:
        _analyze_several(paths, out, trace, trace_format, cluster, force)
        return
    with user_errors(BAD_ROWS_HINT):
        given = one_trace(paths[0] if paths else None, trace)
        kind = _kind(given)
    if kind == SWEEP:
        _analyze_sweep(given, out, trace_format, cluster, force)
        return
    if kind != TRACE:
        _analyze_run(given, out, kind, trace_format, cluster, force)
        return
    if trace_format in REQUEST_FORMAT_NAMES or (trace_format is None and is_request_file(given)):
        _analyze_requests(given, out, trace_format, skip_bad_rows, cluster, force)
        return
    from dlsched.analysis.characterize import Unavailable, characterize
    from dlsched.analysis.report import REPORT_DIR, SECTIONS, TraceInput, write_report
    from dlsched.cluster.parse import resolve_cluster

    with user_errors(BAD_ROWS_HINT):
        REPORT_DIR.check(out, force, inputs=[given])
        spec = resolve_cluster(cluster) if cluster is not None else None
        result = read_trace(given, trace_format, skip_bad_rows=skip_bad_rows)
        report = characterize(
            result.trace,
            capacity_gpus=None if spec is None else spec.total_gpus,
            capacity_name=None if spec is None else spec.name,
        )
        source = TraceInput(given, result.format, result.rows_read, len(result.errors))
        write_report(out, report, source, force)
    missing = [
        f"{attr} ({section.reason})"
        for attr, _, _ in SECTIONS
        if isinstance(section := getattr(report, attr), Unavailable)
    ]
    ov = report.overview
    typer.echo(
        f"{given}: {result.format}, {result.rows_read:,} rows read, {len(result.errors):,} "
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
    if kind == SERVING:
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
    if kind == SERVING:
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


def _kind(path: str) -> str:
    """What ``path`` is: :data:`SWEEP`, :data:`SERVING` (a serve-sim run directory),
    :data:`JOBS` (any other directory with a summary.json; a missing file of it is named when
    read) or :data:`TRACE` (not a directory). ValueError for a directory that is neither a
    run nor a sweep."""
    from dlsched.analysis.sweep_groups import GRID_FILE, is_sweep
    from dlsched.serving.run_report import is_serving_run

    if is_sweep(path):
        return SWEEP
    if is_serving_run(path):
        return SERVING
    if not Path(path).is_dir():
        return TRACE
    if (Path(path) / "summary.json").is_file():
        return JOBS
    raise ValueError(
        f"{path}: neither a run directory (no summary.json) nor a sweep directory (no {GRID_FILE})"
    )


def _analyze_several(
    paths: list[str],
    out: Path,
    trace: str | None,
    trace_format: str | None,
    cluster: str | None,
    force: bool,
) -> None:
    """The comparison of several job run directories."""
    from dlsched.analysis.compare import compare_runs
    from dlsched.analysis.comparison_report import write_comparison_report
    from dlsched.analysis.run_comparison import compare_run_dirs
    from dlsched.analysis.run_report import RUN_REPORT_DIR

    with user_errors():
        if trace is not None:
            raise ValueError("--trace: several arguments are run directories to compare")
        _refuse_trace_options("job run directories", trace_format, cluster)
        seen: set[Path] = set()
        for path in paths:
            if not Path(path).exists():
                raise ValueError(f"{path}: no such run directory")
            kind = _kind(path)
            if kind == TRACE:
                raise ValueError(f"{path}: not a run directory (several arguments are compared)")
            if kind == SWEEP:
                raise ValueError(f"{path}: a sweep directory; analyze it alone, not among runs")
            if Path(path).resolve() in seen:
                raise ValueError(f"{path}: given twice")
            seen.add(Path(path).resolve())
        # Refuses serving runs among job runs, naming them (as dlsched compare does).
        if compare_runs(list(paths)).serving:
            raise ValueError(
                "analyze compares job run directories, not serving runs; "
                "use dlsched compare for serving runs"
            )
        RUN_REPORT_DIR.check(out, force, inputs=paths)
        comparison = compare_run_dirs(paths)
        write_comparison_report(comparison, out, force)
    typer.echo(f"compared {len(paths)} job runs{_differ(comparison)}; wrote {out / 'index.html'}")
    _echo_shown(comparison)


def _analyze_sweep(
    sweep: str, out: Path, trace_format: str | None, cluster: str | None, force: bool
) -> None:
    """The comparison of a sweep's groups, each group's seeds pooled."""
    from dlsched.analysis.comparison_report import write_comparison_report
    from dlsched.analysis.run_comparison import compare_sweep
    from dlsched.analysis.run_report import RUN_REPORT_DIR
    from dlsched.analysis.sweep_groups import sweep_groups

    with user_errors():
        _refuse_trace_options("a sweep directory", trace_format, cluster)
        RUN_REPORT_DIR.check(out, force, inputs=[sweep])
        groups = sweep_groups(sweep)
        comparison = compare_sweep(groups)
        write_comparison_report(comparison, out, force)
    typer.echo(
        f"{sweep}: sweep, {len(groups.groups)} groups of {groups.cells_finished} finished cells "
        f"(of {groups.cells_in_grid}){_differ(comparison)}; wrote {out / 'index.html'}"
    )
    _echo_shown(comparison)


def _differ(comparison: RunComparison) -> str:
    fields = ", ".join(comparison.fields)
    return f" differing in {fields}" if fields else ""


def _echo_shown(comparison: RunComparison) -> None:
    from dlsched.analysis.run_comparison import MAX_LINES

    if len(comparison.lines) > MAX_LINES:
        typer.echo(
            f"the figures draw the first {MAX_LINES} of {len(comparison.lines)} lines; "
            "the table and stats.json hold all"
        )
