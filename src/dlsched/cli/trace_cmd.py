"""``dlsched trace``: validate (job and request traces), convert and describe job traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import BAD_ROWS_HINT, user_errors
from dlsched.cli.options import ForceOpt, TraceArg, TraceOpt, one_trace, split_list
from dlsched.cli.synth_cmd import synth
from dlsched.cli.trace_merge_cmd import merge_cmd
from dlsched.serving.readers import REQUEST_FORMAT_NAMES
from dlsched.trace.readers import FORMAT_NAMES

trace_app = typer.Typer(
    help="Validate, convert, merge and synthesize job traces.", no_args_is_help=True
)
trace_app.command("merge")(merge_cmd)
FORMAT_HELP = f"Trace format ({', '.join(FORMAT_NAMES)}); default: detect from the header."
VALIDATE_FORMAT_HELP = (
    f"Trace format: a job trace's ({', '.join(FORMAT_NAMES)}) or a request trace's "
    f"({', '.join(REQUEST_FORMAT_NAMES)}); default: detect from the header."
)


@trace_app.command()
def validate(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Trace files to check (or give --trace).")
    ] = None,
    trace: Annotated[
        list[str] | None,
        typer.Option("--trace", help="Trace files to check (repeated or comma-separated)."),
    ] = None,
    trace_format: Annotated[str | None, typer.Option("--format", help=VALIDATE_FORMAT_HELP)] = None,
    max_errors: Annotated[
        int | None, typer.Option(help="Rejected rows to list per file (default: all).")
    ] = None,
) -> None:
    """Report rows read and rows rejected (file:line: field: reason) per file; exit 1 on any
    rejected row or unreadable file."""
    with user_errors():
        files = [*(str(p) for p in paths or ()), *split_list(trace, "--trace")]
        if not files:
            raise ValueError("give the trace files to check: dlsched trace validate FILE...")
        check_format(trace_format, requests=True)
        from dlsched.trace.validate import validate_files

        reports = validate_files(files, trace_format)
    from dlsched.trace.validate import render_reports

    text, ok = render_reports(reports, max_errors)
    typer.echo(text)
    if not ok:
        raise typer.Exit(1)


@trace_app.command()
def convert(
    path: TraceArg = None,
    *,
    out: Annotated[
        Path,
        typer.Option(
            help="Parquet file to write (atomically); for a request trace, dlsched's request "
            "CSV (.csv)."
        ),
    ],
    trace: TraceOpt = None,
    trace_format: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    skip_bad_rows: Annotated[
        bool, typer.Option(help="Drop bad rows (their count is reported) instead of failing.")
    ] = False,
    start: Annotated[str | None, typer.Option(help="Keep jobs submitted at/after.")] = None,
    end: Annotated[str | None, typer.Option(help="Keep jobs submitted before.")] = None,
    vc: Annotated[
        list[str] | None, typer.Option(help="Keep these VCs (repeated or comma-separated).")
    ] = None,
    gpu_only: Annotated[bool, typer.Option(help="Keep only jobs that use GPUs.")] = False,
    subsample: Annotated[
        float | None, typer.Option(help="Keep a fraction (<1) or a count (>=1) of jobs.")
    ] = None,
    submit_scale: Annotated[float, typer.Option(help="Multiply submit times.")] = 1.0,
    duration_scale: Annotated[float, typer.Option(help="Multiply run times.")] = 1.0,
    deadlines: Annotated[
        str | None,
        typer.Option(
            help="LOW:HIGH: give every job the deadline submit + U(LOW, HIGH) × its run time "
            "(ElasticFlow's method, e.g. 0.5:1.5), replacing the trace's."
        ),
    ] = None,
    best_effort: Annotated[
        float,
        typer.Option(help="With --deadlines: the probability that a job gets no deadline."),
    ] = 0.0,
    workloads: Annotated[
        str | None,
        typer.Option(
            help="lucid: give every GPU job that names no application a workload drawn from "
            "the Lucid co-location profiles."
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Seed for --subsample, --deadlines and --workloads.")
    ] = 0,
    force: ForceOpt = False,
) -> None:
    """Convert a trace to dlsched's native Parquet format, optionally selecting jobs; a request
    trace (Azure LLM, BurstGPT, Mooncake) to dlsched's request CSV."""
    from dlsched.runner import Selection, check_has_jobs
    from dlsched.serving.readers.read import is_request_file
    from dlsched.trace.io import PARQUET_FILE, write_parquet
    from dlsched.trace.read import read_trace

    with user_errors(BAD_ROWS_HINT):
        source = one_trace(path, trace)
        check_format(trace_format, requests=True)
        if trace_format in REQUEST_FORMAT_NAMES or (
            trace_format is None and is_request_file(source)
        ):
            given = {
                "--start": start, "--end": end, "--vc": vc or None,
                "--gpu-only": gpu_only or None, "--subsample": subsample,
                "--submit-scale": None if submit_scale == 1.0 else submit_scale,
                "--duration-scale": None if duration_scale == 1.0 else duration_scale,
                "--deadlines": deadlines,
                "--best-effort": None if best_effort == 0.0 else best_effort,
                "--workloads": workloads,
            }  # fmt: skip
            chosen = [flag for flag, value in given.items() if value is not None]
            if chosen:
                raise ValueError(
                    f"{', '.join(chosen)}: job selections; {source} is a request trace "
                    "(serve-sim --load-scale scales its arrivals)"
                )
            _convert_requests(source, out, trace_format, skip_bad_rows, force)
            return
        PARQUET_FILE.check(out, force, inputs=[source])
        if out.suffix != ".parquet":
            raise ValueError(f"--out {out}: trace convert writes Parquet; name the output .parquet")
        selection = Selection(
            start,
            end,
            split_list(vc, "--vc"),
            gpu_only,
            subsample,
            submit_scale,
            duration_scale,
            deadlines,
            best_effort,
            workloads,
        )
        selection.check()
        result = read_trace(source, trace_format, skip_bad_rows=skip_bad_rows)
        check_has_jobs(source, result)
        selected = selection.apply(result.trace, seed)
        PARQUET_FILE.check(out, force, inputs=[source])
        write_parquet(selected, out)
    typer.echo(
        f"{source}: {result.format}, {result.rows_read} rows read, "
        f"{len(result.errors)} rejected, {len(selected)} written to {out}"
    )
    if result.errors:
        typer.echo(f"skipped {len(result.errors)} bad rows; first: {result.errors[0]}", err=True)


def _convert_requests(
    source: str, out: Path, trace_format: str | None, skip_bad_rows: bool, force: bool
) -> None:
    """A request trace to dlsched's request CSV (what serve-sim reads back as ``requests``)."""
    from dlsched.serving.readers.read import REQUESTS_FILE, read_requests, write_requests_csv

    if out.suffix != ".csv":
        raise ValueError(
            f"--out {out}: a request trace converts to dlsched's request CSV; name the output .csv"
        )
    REQUESTS_FILE.check(out, force, inputs=[source])
    read = read_requests(source, trace_format, skip_bad_rows)
    if not len(read.trace):
        raise ValueError(f"{source}: no request to convert")
    write_requests_csv(read.trace, out, force)
    typer.echo(
        f"{source}: {read.format}, {read.rows_read} rows read, {len(read.errors)} rejected, "
        f"{len(read.trace)} written to {out}"
    )
    if read.errors:
        typer.echo(f"skipped {len(read.errors)} bad rows; first: {read.errors[0]}", err=True)


def check_format(name: str | None, requests: bool = False) -> None:
    """An unknown ``--format`` is a mistake in the command (exit 2), not a failed check; with
    ``requests``, request-trace formats are known too."""
    known = (*FORMAT_NAMES, *REQUEST_FORMAT_NAMES) if requests else FORMAT_NAMES
    if name is not None and name not in known:
        raise ValueError(f"--format: unknown trace format {name!r}; known: {', '.join(known)}")


trace_app.command(name="synth")(synth)
