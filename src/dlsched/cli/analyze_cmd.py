"""``dlsched analyze``: a workload characterization report of a trace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import BAD_ROWS_HINT, user_errors
from dlsched.cli.options import ForceOpt, TraceArg, TraceOpt, one_trace
from dlsched.extras import require
from dlsched.trace.read import read_trace
from dlsched.trace.readers import FORMAT_NAMES

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
    demand, users, recurrence, VCs): writes index.html, PNG figures and stats.json to --out.
    Sections the trace lacks the fields for are marked as not available."""
    require("dlsched analyze", "analysis")
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
