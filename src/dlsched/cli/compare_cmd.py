"""``dlsched compare``: one table of runs with ratios to the first, or the same figures as CSV
or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from dlsched.analysis.compare import Comparison, compare_runs
from dlsched.analysis.compare_export import to_csv, to_json
from dlsched.cli.errors import user_errors

FORMATS = ("table", "csv", "json")
FORMAT_HELP = (
    "Output: table (ratios to the first run), csv (a header, then a row per run) or json "
    "(an object per run, with its ratios)."
)


def compare(
    runs: Annotated[list[Path], typer.Argument(help="Run directories; the first is the base.")],
    output_format: Annotated[str, typer.Option("--format", help=FORMAT_HELP)] = "table",
) -> None:
    """Compare run directories side by side; ratios are to the first run.

    Only figures that apply to at least one of the runs are shown: serving latencies for
    serving runs, energy where accounted, tenant and queue figures for runs with queues, and
    topology figures (comm model, fragmented jobs, starts by tier, multi-node starts spanning
    racks) where modelled, n/a for a run that did not model them. csv and json write plain
    numbers (shares as fractions), empty or null where a figure does not apply."""
    with user_errors():
        if output_format not in FORMATS:
            raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {output_format!r}")
        cmp = compare_runs(list(runs))
    if output_format == "csv":
        typer.echo(to_csv(cmp), nl=False)
    elif output_format == "json":
        typer.echo(to_json(cmp), nl=False)
    else:
        _print_table(cmp)


def _print_table(cmp: Comparison) -> None:
    table = Table(title=f"ratios to {cmp.labels[0]}")
    table.add_column("metric", no_wrap=True)
    for label, policy in zip(cmp.labels, cmp.policies(), strict=True):
        table.add_column(label if label == policy else f"{label}\n{policy}", justify="right")
    figures = cmp.figures()
    for figure in figures:
        table.add_row(figure.title, *figure.cells())
    console = Console(width=max(100, 24 * (len(cmp.labels) + 1)))
    console.print(table)
    for note in cmp.notes(figures):
        # One line, however wide: a footnote is read, not laid out.
        console.print(note, soft_wrap=True, highlight=False, markup=False)
