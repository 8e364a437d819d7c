"""``dlsched sweep``: a grid of simulations in parallel, resumable, with one comparison."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from dlsched.cli.errors import user_errors
from dlsched.cli.options import ProgressOpt, split_list
from dlsched.cli.progress import job_progress
from dlsched.cli.run_options import with_run_options
from dlsched.extras import install_hint
from dlsched.run_options import BY_NAME, flag, is_default

ListOpt = list[str] | None
SERVING_AXES = ("--scheduler", "--router", "--replicas")
"""Options of a sweep of serving runs only (with --requests)."""


@with_run_options(axes=True)
def sweep(
    values: dict[str, Any],
    *,
    out: Annotated[Path, typer.Option(help="Sweep directory (an existing sweep is resumed).")],
    grid: Annotated[
        Path | None,
        typer.Option(help="TOML grid file (keys: the options' names) instead of the options."),
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
        ListOpt, typer.Option(help="With --requests: replica schedulers (vllm).")
    ] = None,
    router: Annotated[ListOpt, typer.Option(help="With --requests: routers (round-robin).")] = None,
    replicas: Annotated[ListOpt, typer.Option(help="With --requests: replica counts (1).")] = None,
    progress: ProgressOpt = True,
) -> None:
    """Run every combination of the axis options' values not already in OUT, then write
    OUT/results.csv, OUT/table.md (means with 95% CIs over seeds) and figures.

    The options are those of dlsched simulate. The axis options (trace, cluster, policy,
    placement, seed, queues, load scale) take several values, repeated or comma-separated;
    every other option holds for every cell. Several --queues compare queue configurations on
    the same jobs (the what-if of quotas). An option some cell cannot honour is refused (exit
    2, naming it) before OUT is created."""
    from dlsched.sweep.grid import Grid, load_grid
    from dlsched.sweep.run import run_sweep

    given = {name: v for name, v in values.items() if not _unset(name, v)}
    if requests is not None:
        serving = {"--scheduler": scheduler, "--router": router, "--replicas": replicas}
        _sweep_serving(out, requests, serving, given, workers, ray_address, grid)
        return
    with user_errors():
        for flag_name, value in zip(SERVING_AXES, (scheduler, router, replicas), strict=True):
            if value:
                raise ValueError(f"{flag_name} needs --requests (a sweep of serving runs)")
        if grid is not None:
            if given:
                raise ValueError(
                    "--grid sets the axes and the options of every cell; drop "
                    + ", ".join(flag(name) for name in given)
                )
            spec = load_grid(grid)
        else:
            if "queues" in given:
                given["queues"] = tuple(_absolute_if_path(q) for q in given["queues"])
            if "queue_map" in given:
                given["queue_map"] = str(Path(given["queue_map"]).resolve())
            spec = Grid.of(**given)
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


def _unset(name: str, value: Any) -> bool:
    return (
        value is None
        or (BY_NAME[name].kind in ("list", "pairs") and not value)
        or (not BY_NAME[name].axis and is_default(name, value))
    )


def _sweep_serving(
    out: Path,
    requests: str,
    axes: dict[str, ListOpt],
    given: Mapping[str, Any],
    workers: int | None,
    ray_address: str | None,
    grid: Path | None,
) -> None:
    from dlsched.sweep.serving import ServingGrid, run_serving_sweep

    with user_errors():
        job_only = [flag(name) for name in given if name not in ("seed", "load_scale")]
        job_only += [name for name, v in (("--grid", grid), ("--ray-address", ray_address)) if v]
        if job_only:
            raise ValueError(
                f"{', '.join(job_only)} does not apply to a sweep of serving runs (--requests)"
            )
        if workers is not None and workers < 1:
            raise ValueError(f"--workers must be at least 1, got {workers}")
        counts = [int(_number(v, "--replicas", whole=True)) for v in _split(axes, "--replicas")]
        scales = [float(_number(v, "--load-scale")) for v in given.get("load_scale", ())]
        seed_values = [int(_number(v, "--seed", whole=True)) for v in given.get("seed", ())]
        serving_grid = ServingGrid(
            requests,
            schedulers=split_list(axes["--scheduler"], "--scheduler") or ("vllm",),
            routers=split_list(axes["--router"], "--router") or ("round-robin",),
            load_scales=tuple(scales) or (1.0,),
            replicas=tuple(counts) or (1,),
            seeds=tuple(seed_values) or (0,),
        )
        ran = run_serving_sweep(serving_grid, out, workers)
    typer.echo(f"ran {ran} cells, reused {len(serving_grid.cells()) - ran}")
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
