"""``dlsched list``: what policies, placements and built-in clusters exist."""

from __future__ import annotations

import typer

from dlsched.cluster.builtin import list_builtin_clusters
from dlsched.placement.registry import placers
from dlsched.power.registry import power_managers
from dlsched.sim.groups import policy_catalog

list_app = typer.Typer(
    help="List policies, placements, power managers and built-in clusters.", no_args_is_help=True
)


@list_app.command("policies")
def list_policies() -> None:
    """Registered scheduling policies and the job kinds each schedules (a run gives a kind
    another policy with --kind-policy KIND=POLICY)."""
    rows = policy_catalog()
    typer.echo(f"{'policy':12s} {'job kinds':18s} description")
    for name, kinds, description in rows:
        typer.echo(f"{name:12s} {kinds:18s} {description}")


@list_app.command("placements")
def list_placements() -> None:
    """Registered placers."""
    for name, cls in sorted(placers().items()):
        typer.echo(f"{name:12s} {cls.description}")


@list_app.command("clusters")
def list_clusters() -> None:
    """Built-in cluster specifications."""
    for name, text in sorted(list_builtin_clusters().items()):
        typer.echo(f"{name:14s} {text}")


@list_app.command("power-managers")
def list_power_managers() -> None:
    """Node power managers for ``simulate --power-manager``."""
    for name, cls in sorted(power_managers().items()):
        typer.echo(f"{name:12s} {cls.description}")
