"""``dlsched sweep``: a grid of simulations in parallel, resumable, with one comparison."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.progress import job_progress
from dlsched.sweep.grid import Grid, load_grid
from dlsched.sweep.run import run_sweep


def _names(text: str | None, flag: str) -> tuple[str, ...]:
    if text is None:
        raise ValueError(f"give {flag} (comma-separated) or --grid FILE")
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _seeds(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise ValueError(f"--seeds expects comma-separated integers, got {text!r}") from None


def sweep(
    out: Annotated[Path, typer.Option(help="Sweep directory (rerun to resume).")],
    grid: Annotated[
        Path | None, typer.Option(help="TOML grid file instead of the list options.")
    ] = None,
    trace: Annotated[str | None, typer.Option(help="Trace file(s), comma-separated.")] = None,
    cluster: Annotated[str | None, typer.Option(help="Cluster(s), comma-separated.")] = None,
    policy: Annotated[str | None, typer.Option(help="Policies, comma-separated.")] = None,
    placement: Annotated[str, typer.Option(help="Placements, comma-separated.")] = ("consolidate"),
    seeds: Annotated[str, typer.Option(help="Seeds, comma-separated.")] = "0",
    estimator: Annotated[
        str | None, typer.Option(help="Duration estimator for policies that need one.")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Processes (default: one per core).")] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Run the cells on this Ray cluster instead.")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Run every cell of traces × clusters × policies × placements × seeds not already in OUT,
    then write OUT/results.csv, OUT/table.md (means with 95% CIs over seeds) and figures."""
    with user_errors():
        if grid is not None:
            if any(v is not None for v in (trace, cluster, policy)):
                raise ValueError("--grid sets the axes; drop --trace/--cluster/--policy")
            spec = load_grid(grid)
        else:
            spec = Grid(
                traces=_names(trace, "--trace"),
                clusters=_names(cluster, "--cluster"),
                policies=_names(policy, "--policy"),
                placements=_names(placement, "--placement"),
                seeds=_seeds(seeds),
                estimator=estimator,
            )
        if workers is not None and workers < 1:
            raise ValueError(f"--workers must be at least 1, got {workers}")
        with job_progress("sweep cells", progress) as bar:
            outcome = run_sweep(spec, out, workers, ray_address, bar)
    typer.echo(f"ran {len(outcome.ran)} cells, reused {len(outcome.reused)}")
    typer.echo((out / "table.md").read_text(), nl=False)
    typer.echo(f"wrote {out}")
