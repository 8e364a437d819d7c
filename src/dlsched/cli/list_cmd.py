"""``dlsched list``: what policies, placements and built-in clusters exist."""

from __future__ import annotations

import typer

from dlsched.cli.columns import two_columns
from dlsched.cluster.builtin import list_builtin_clusters
from dlsched.elastic.registry import elastic_policies
from dlsched.placement.registry import placers
from dlsched.policy.registry import policies
from dlsched.power.registry import power_managers

list_app = typer.Typer(
    help="List policies, placements, power managers and built-in clusters.", no_args_is_help=True
)


@list_app.command("policies")
def list_policies() -> None:
    """Registered scheduling policies."""
    typer.echo(two_columns((name, cls.description) for name, cls in sorted(policies().items())))
    typer.echo("elastic (traces of application-described jobs, e.g. Pollux workloads):")
    typer.echo(two_columns((n, p.description) for n, p in sorted(elastic_policies().items())))


@list_app.command("placements")
def list_placements() -> None:
    """Registered placers."""
    typer.echo(two_columns((name, cls.description) for name, cls in sorted(placers().items())))


@list_app.command("clusters")
def list_clusters() -> None:
    """Built-in cluster specifications."""
    typer.echo(two_columns(sorted(list_builtin_clusters().items())))


@list_app.command("power-managers")
def list_power_managers() -> None:
    """Node power managers for ``simulate --power-manager``."""
    managers = sorted(power_managers().items())
    typer.echo(two_columns((name, cls.description) for name, cls in managers))
