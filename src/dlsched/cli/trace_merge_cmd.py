"""``dlsched trace merge``: several traces as one mixed workload (e.g. rigid, elastic and
parameter-server jobs in one run)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.options import ForceOpt


def merge_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Trace files (any supported format).")],
    out: Annotated[Path, typer.Option(help="Parquet file to write (atomically).")],
    name: Annotated[
        list[str] | None,
        typer.Option(help="Job-id prefix of each trace, in order (default: file stems)."),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Merge traces into one: each starts at time 0, its job ids prefixed NAME:, every field
    (job kind included) kept; write it as Parquet."""
    from dlsched.trace.io import PARQUET_FILE, write_parquet
    from dlsched.trace.read import read_trace
    from dlsched.trace.transforms import merge_traces

    with user_errors():
        names = list(name) if name else [p.stem for p in paths]
        if len(names) != len(paths):
            raise ValueError(f"--name given {len(names)} times for {len(paths)} traces")
        PARQUET_FILE.check(out, force, inputs=paths)
        traces = [(n, read_trace(p).trace) for n, p in zip(names, paths, strict=True)]
        merged = merge_traces(traces, source=f"merge of {', '.join(str(p) for p in paths)}")
        write_parquet(merged, out)
    typer.echo(f"{len(merged)} jobs from {len(paths)} traces; wrote {out}")
