"""``dlsched preset``: list the named setups and recalibrate their load."""

from __future__ import annotations

from typing import Annotated

import typer

from dlsched.cli.columns import two_columns
from dlsched.cli.errors import user_errors
from dlsched.presets import HELIOS_ARTIFACT_FIFO_QUEUE_S, calibrate_load, get_preset, presets

preset_app = typer.Typer(help="Named experiment setups from the literature.", no_args_is_help=True)


@preset_app.command("list")
def list_presets() -> None:
    """The presets, with their default load scale."""
    rows = sorted(presets().items())
    typer.echo(
        two_columns((n, f"load scale {p.default_load_scale:g}: {p.description}") for n, p in rows)
    )


@preset_app.command()
def calibrate(
    name: Annotated[str, typer.Argument(help="Preset name.")],
    target_queue: Annotated[
        float, typer.Option(help="FIFO average queueing delay to match (s).")
    ] = HELIOS_ARTIFACT_FIFO_QUEUE_S,
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
) -> None:
    """Search the load scale whose FIFO average queueing is closest to TARGET_QUEUE."""
    with user_errors():
        preset = get_preset(name)

        def show(scale: float, queue: float) -> None:
            typer.echo(f"  load scale {scale:g}: FIFO average queueing {queue:,.0f} s")

        scale, queue = calibrate_load(preset, target_queue, seed=seed, report=show)
    typer.echo(
        f"{name}: load scale {scale:g} gives FIFO average queueing {queue:,.0f} s "
        f"(target {target_queue:,.0f} s; preset default {preset.default_load_scale:g})"
    )
