"""``dlsched sweep``: a grid of simulations in parallel, resumable, with one comparison."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.options import ProgressOpt, QueueMapOpt, parse_options, seeds, split_list
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
    placement_opt: Annotated[
        ListOpt,
        typer.Option(
            help="Placement option KEY=VALUE for every cell (repeatable), as for simulate; "
            "every --placement must take it (topology: required=LEVEL or preferred=LEVEL)."
        ),
    ] = None,
    comm_model: Annotated[
        str | None,
        typer.Option(
            help="tiers: in every cell, rigid jobs spread over nodes, racks or blocks run "
            "slower (as for simulate); the table adds the topology figures."
        ),
    ] = None,
    seed: Annotated[ListOpt, typer.Option(help="Seeds (repeated or comma-separated; 0).")] = None,
    estimator: Annotated[
        str | None, typer.Option(help="Duration estimator for policies that need one.")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Processes (default: one per core).")] = None,
    ray_address: Annotated[
        str | None, typer.Option(help="Run the cells on this Ray cluster instead.")
    ] = None,
    requests: Annotated[
        str | None,
        typer.Option(
            help="Sweep serving runs of this request trace (file or bundled name) over "
            "--scheduler × --router × --load-scale × --replicas × --seed instead."
        ),
    ] = None,
    scheduler: Annotated[
        ListOpt, typer.Option(help="With --requests: schedulers (continuous).")
    ] = None,
    router: Annotated[ListOpt, typer.Option(help="With --requests: routers (round-robin).")] = None,
    load_scale: Annotated[
        ListOpt, typer.Option(help="With --requests: arrival-rate multipliers (1).")
    ] = None,
    replicas: Annotated[ListOpt, typer.Option(help="With --requests: replica counts (1).")] = None,
    queues: Annotated[
        str | None,
        typer.Option(
            help="Kueue manifests (YAML file, directory or bundled name) every cell admits "
            "jobs through; the table adds tenant fairness."
        ),
    ] = None,
    queue_map: QueueMapOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Run every cell of traces × clusters × policies × placements × seeds not already in OUT,
    then write OUT/results.csv, OUT/table.md (means with 95% CIs over seeds) and figures.

    --placement-opt and --comm-model apply to every cell; an option some --placement does not
    take is refused (exit 2, naming it) before OUT is created."""
    if requests is not None:
        serving = {"--scheduler": scheduler, "--router": router, "--load-scale": load_scale}
        serving["--replicas"] = replicas
        job_only = {
            "--grid": grid,
            "--trace": trace,
            "--cluster": cluster,
            "--policy": policy,
            "--placement": placement,
            "--estimator": estimator,
            "--ray-address": ray_address,
            "--queues": queues,
            "--queue-map": queue_map,
            "--placement-opt": placement_opt,
            "--comm-model": comm_model,
        }
        _sweep_serving(out, requests, serving, seed, job_only, workers)
        return
    with user_errors():
        for flag, value in (("--scheduler", scheduler), ("--router", router)):
            if value:
                raise ValueError(f"{flag} needs --requests (a sweep of serving runs)")
        for flag, value in (("--load-scale", load_scale), ("--replicas", replicas)):
            if value:
                raise ValueError(f"{flag} needs --requests (a sweep of serving runs)")
        if queue_map is not None and queues is None:
            raise ValueError("--queue-map maps jobs to the LocalQueues of --queues; give --queues")
        options = parse_options(placement_opt or [], "--placement-opt")
        if grid is not None:
            given: dict[str, object] = {"--trace": trace, "--cluster": cluster}
            given |= {"--policy": policy, "--placement": placement, "--seed": seed}
            given |= {"--estimator": estimator, "--queues": queues, "--queue-map": queue_map}
            given |= {"--placement-opt": options, "--comm-model": comm_model}
            if any(given.values()):
                raise ValueError(
                    "--grid sets the axes and the options of every cell; drop "
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
                queues=None if queues is None else _absolute_if_path(queues),
                queue_map=None if queue_map is None else str(Path(queue_map).resolve()),
                placement_options=options,
                comm_model=comm_model,
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


def _sweep_serving(
    out: Path,
    requests: str,
    axes: dict[str, ListOpt],
    seed: ListOpt,
    job_only: Mapping[str, object],
    workers: int | None,
) -> None:
    from dlsched.sweep.serving import ServingGrid, run_serving_sweep

    with user_errors():
        for flag, value in job_only.items():
            if value:
                raise ValueError(f"{flag} does not apply to a sweep of serving runs (--requests)")
        if workers is not None and workers < 1:
            raise ValueError(f"--workers must be at least 1, got {workers}")
        scales = [float(_number(v, "--load-scale")) for v in _split(axes, "--load-scale")]
        counts = [int(_number(v, "--replicas", whole=True)) for v in _split(axes, "--replicas")]
        grid = ServingGrid(
            requests,
            schedulers=split_list(axes["--scheduler"], "--scheduler") or ("continuous",),
            routers=split_list(axes["--router"], "--router") or ("round-robin",),
            load_scales=tuple(scales) or (1.0,),
            replicas=tuple(counts) or (1,),
            seeds=seeds(seed) or (0,),
        )
        ran = run_serving_sweep(grid, out, workers)
    typer.echo(f"ran {ran} cells, reused {len(grid.cells()) - ran}")
    typer.echo((out / "table.md").read_text(), nl=False)
    typer.echo(f"wrote {out}")


def _absolute_if_path(text: str) -> str:
    # A bundled manifest name stays a name; a path is made absolute so a resume from
    # another directory finds the same grid.
    return str(Path(text).resolve()) if Path(text).exists() else text


def _split(axes: Mapping[str, ListOpt], flag: str) -> tuple[str, ...]:
    return split_list(axes[flag], flag)


def _number(text: str, flag: str, whole: bool = False) -> float:
    try:
        return int(text) if whole else float(text)
    except ValueError:
        kind = "whole numbers" if whole else "numbers"
        raise ValueError(f"{flag} expects {kind}, got {text!r}") from None
