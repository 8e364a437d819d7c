"""``dlsched sweep``: a grid of simulations in parallel, resumable, with one comparison."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.options import ProgressOpt, seeds, split_list
from dlsched.cli.progress import job_progress
from dlsched.extras import install_hint
from dlsched.sweep.grid import Grid, load_grid
from dlsched.sweep.run import run_sweep

ListOpt = list[str] | None


def _axis(values: ListOpt, flag: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    found = split_list(values, flag) or default
    if not found:
        raise ValueError(f"give {flag} (repeated or comma-separated) or --grid FILE")
    return found


def _clusters(values: ListOpt) -> tuple[str, ...]:
    # Not split at commas: a shorthand such as v100:16x4,k80:8x4 is one cluster.
    if not values:
        raise ValueError("give --cluster (repeated for several) or --grid FILE")
    return tuple(values)


def sweep(
    out: Annotated[Path, typer.Option(help="Sweep directory (an existing sweep is resumed).")],
    grid: Annotated[
        Path | None, typer.Option(help="TOML grid file instead of the list options.")
    ] = None,
    trace: Annotated[
        ListOpt, typer.Option(help="Trace files (repeated or comma-separated).")
    ] = None,
    cluster: Annotated[
        ListOpt,
        typer.Option(help="Clusters, one per --cluster (a shorthand holds commas itself)."),
    ] = None,
    policy: Annotated[ListOpt, typer.Option(help="Policies (repeated or comma-separated).")] = None,
    placement: Annotated[
        ListOpt, typer.Option(help="Placements (repeated or comma-separated; consolidate).")
    ] = None,
    seed: Annotated[ListOpt, typer.Option(help="Seeds (repeated or comma-separated; 0).")] = None,
    estimator: Annotated[
        str | None, typer.Option(help="Duration estimator for policies that need one.")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Processes (default: one per core).")] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Run the cells on this Ray cluster instead.")
    ] = None,
    progress: ProgressOpt = True,
) -> None:
    """Run every cell of traces × clusters × policies × placements × seeds not already in OUT,
    then write OUT/results.csv, OUT/table.md (means with 95% CIs over seeds) and figures."""
    with user_errors():
        if grid is not None:
            given = {"--trace": trace, "--cluster": cluster, "--policy": policy}
            if any(given.values()):
                raise ValueError(
                    "--grid sets the axes; drop "
                    + ", ".join(flag for flag, value in given.items() if value)
                )
            spec = load_grid(grid)
        else:
            spec = Grid(
                traces=_axis(trace, "--trace"),
                clusters=_clusters(cluster),
                policies=_axis(policy, "--policy"),
                placements=_axis(placement, "--placement", ("consolidate",)),
                seeds=seeds(seed) or (0,),
                estimator=estimator,
            )
        if workers is not None and workers < 1:
            raise ValueError(f"--workers must be at least 1, got {workers}")
        with job_progress("sweep, cells done", progress) as bar:
            outcome = run_sweep(spec, out, workers, ray_address, bar)
    typer.echo(f"ran {len(outcome.ran)} cells, reused {len(outcome.reused)}")
    typer.echo((out / "table.md").read_text(), nl=False)
    if not outcome.figures:
        typer.echo(
            f"figures not drawn: they need matplotlib ({install_hint('analysis')})", err=True
        )
    typer.echo(f"wrote {out}")
