"""``dlsched compare``: one table of runs with ratios to the first."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from dlsched.analysis.compare import compare_runs, format_value, tenant_rows, topology_rows
from dlsched.cli.errors import user_errors


def compare(
    runs: Annotated[list[Path], typer.Argument(help="Run directories; the first is the base.")],
) -> None:
    """Compare run directories side by side; ratios are to the first run.

    Job runs also show their topology figures (comm model, fragmented jobs, starts by tier,
    multi-node starts spanning racks): n/a where a run did not model them."""
    with user_errors():
        cmp = compare_runs(list(runs))
    table = Table(title=f"ratios to {cmp.labels[0]}")
    table.add_column("metric", no_wrap=True)
    for label, s in zip(cmp.labels, cmp.summaries, strict=True):
        policy = str(s.get("policy", s.get("scheduler", "?")))
        table.add_column(label if label == policy else f"{label}\n{policy}", justify="right")
    for key, title in cmp.metrics:
        cells = []
        for i in range(len(cmp.summaries)):
            text = format_value(key, cmp.value(i, key))
            r = cmp.ratio(i, key)
            if i > 0 and r is not None:
                text += f" ({r:.2f}x)"
            cells.append(text)
        table.add_row(title, *cells)
    count = cmp.count_key
    table.add_row(count, *[format_value(count, s.get(count)) for s in cmp.summaries])
    for title, values in tenant_rows(cmp.summaries):
        table.add_row(title, *[format_value(title, v) for v in values])
    if not cmp.serving:
        for title, shown in topology_rows(cmp.summaries):
            table.add_row(title, *shown)
    Console(width=max(100, 24 * (len(cmp.labels) + 1))).print(table)
