"""``dlsched trace``: validate, convert and describe job traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import BAD_ROWS_HINT, user_errors
from dlsched.cli.trace_merge_cmd import merge_cmd
from dlsched.runner import Selection
from dlsched.trace.io import write_parquet
from dlsched.trace.read import read_trace
from dlsched.trace.readers import FORMAT_NAMES
from dlsched.trace.validate import render_reports, validate_files

trace_app = typer.Typer(help="Validate, convert and inspect job traces.", no_args_is_help=True)
trace_app.command("merge")(merge_cmd)
FORMAT_HELP = f"Trace format ({', '.join(FORMAT_NAMES)}); default: detect from the header."


@trace_app.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Trace files to check.")],
    trace_format: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    max_errors: Annotated[
        int | None, typer.Option(help="Rejected rows to list per file (default: all).")
    ] = None,
) -> None:
    """Report rows read and rows rejected (file:line: field: reason) per file; exit 1 on any
    rejected row or unreadable file."""
    with user_errors():
        reports = validate_files(paths, trace_format)
    text, ok = render_reports(reports, max_errors)
    typer.echo(text)
    if not ok:
        raise typer.Exit(1)


@trace_app.command()
def convert(
    path: Annotated[Path, typer.Argument(help="Trace file to read.")],
    out: Annotated[Path, typer.Option(help="Parquet file to write (atomically).")],
    trace_format: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    skip_bad_rows: Annotated[
        bool, typer.Option(help="Drop bad rows (their count is reported) instead of failing.")
    ] = False,
    start: Annotated[str | None, typer.Option(help="Keep jobs submitted at/after.")] = None,
    end: Annotated[str | None, typer.Option(help="Keep jobs submitted before.")] = None,
    vc: Annotated[list[str] | None, typer.Option(help="Keep these VCs (repeatable).")] = None,
    gpu_only: Annotated[bool, typer.Option(help="Keep only jobs that use GPUs.")] = False,
    subsample: Annotated[
        float | None, typer.Option(help="Keep a fraction (<1) or a count (>=1) of jobs.")
    ] = None,
    submit_scale: Annotated[float, typer.Option(help="Multiply submit times.")] = 1.0,
    duration_scale: Annotated[float, typer.Option(help="Multiply run times.")] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed for --subsample.")] = 0,
) -> None:
    """Convert a trace to dlsched's native Parquet format, optionally selecting jobs."""
    with user_errors(BAD_ROWS_HINT):
        result = read_trace(path, trace_format, skip_bad_rows=skip_bad_rows)
        selection = Selection(
            start, end, tuple(vc or ()), gpu_only, subsample, submit_scale, duration_scale
        )
        trace = selection.apply(result.trace, seed)
        write_parquet(trace, out)
    typer.echo(
        f"{path}: {result.format}, {result.rows_read} rows read, "
        f"{len(result.errors)} rejected, {len(trace)} written to {out}"
    )
    if result.errors:
        typer.echo(f"skipped {len(result.errors)} bad rows; first: {result.errors[0]}", err=True)
