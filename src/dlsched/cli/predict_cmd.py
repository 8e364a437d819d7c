"""``dlsched predict``: evaluate job-duration estimators on a trace."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from dlsched.cli.errors import BAD_ROWS_HINT, user_errors
from dlsched.cli.options import TraceArg, TraceOpt, one_trace, split_list
from dlsched.extras import require_components
from dlsched.perf.duration.evaluate import (
    DEFAULT_ESTIMATORS,
    Evaluation,
    build_estimators,
    evaluate,
)
from dlsched.trace.read import read_trace
from dlsched.trace.readers import FORMAT_NAMES

predict_app = typer.Typer(help="Evaluate job-duration estimators.", no_args_is_help=True)


@predict_app.callback()
def _group() -> None:
    """Evaluate job-duration estimators (the duration predictions QSSF schedules by)."""


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def render(result: Evaluation) -> Table:
    """The evaluation as a rich table, one row per estimator."""
    scored = result.scores[0].queries if result.scores else 0
    table = Table(
        title=result.source,
        caption=f"{scored:,} jobs scored after {result.warmup_jobs:,} warm-up jobs; "
        f"{result.skipped_no_duration:,} without a duration skipped",
    )
    for column in ("estimator", "MAE (s)", "MdAPE (%)", "within 2×", "coverage", "queries/s"):
        table.add_column(column, justify="left" if column == "estimator" else "right")
    for s in result.scores:
        table.add_row(
            s.estimator,
            _fmt(s.mae_s, ",.0f"),
            _fmt(s.mdape_pct, ".1f"),
            _fmt(s.within_2x, ".1%"),
            _fmt(s.coverage, ".1%"),
            _fmt(s.queries_per_s, ",.0f"),
        )
    return table


@predict_app.command("eval")
def eval_cmd(
    path: TraceArg = None,
    trace: TraceOpt = None,
    trace_format: Annotated[
        str | None,
        typer.Option(
            "--format", help=f"Trace format ({', '.join(FORMAT_NAMES)}); default: detect."
        ),
    ] = None,
    estimators: Annotated[
        list[str] | None,
        typer.Option(
            "--estimator",
            help="Estimators to score (repeated or comma-separated; default "
            f"{','.join(DEFAULT_ESTIMATORS)}).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of every estimator.")] = 0,
    warmup: Annotated[
        float,
        typer.Option(
            help="Share of jobs (by submit order) observed but not scored; lgbm trains on them."
        ),
    ] = 0.3,
    skip_bad_rows: Annotated[
        bool, typer.Option(help="Drop bad trace rows (their count is reported) instead of failing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Replay TRACE online in submit order and score each estimator: MAE, median absolute
    percentage error, share within 2× of the truth, coverage and queries/s."""
    with user_errors(BAD_ROWS_HINT):
        source = one_trace(path, trace)
        names = split_list(estimators, "--estimator") or DEFAULT_ESTIMATORS
        if not 0.0 <= warmup < 1.0:
            raise ValueError(f"--warmup must be in [0, 1), got {warmup}")
        require_components(("--estimator", name) for name in names)
        chosen = build_estimators(list(names), seed, warmup)
        read = read_trace(source, trace_format, skip_bad_rows)
        result = evaluate(read.trace, chosen, warmup)
    if read.errors:
        typer.echo(f"skipped {len(read.errors)} bad rows; first: {read.errors[0]}", err=True)
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        Console(width=110).print(render(result))
