"""``dlsched list``: what policies, placements and built-in clusters exist."""

from __future__ import annotations

import typer

from dlsched.cli.columns import two_columns
from dlsched.cluster.builtin import list_builtin_clusters
from dlsched.placement.registry import placers
from dlsched.policy.catalog import policy_catalog
from dlsched.power.registry import power_managers

list_app = typer.Typer(
    help="List policies, placements, power managers and built-in clusters.", no_args_is_help=True
)


@list_app.command("policies")
def list_policies() -> None:
    """Registered scheduling policies and the job kinds each schedules (a run gives a kind
    another policy with --kind-policy KIND=POLICY)."""
    typer.echo(
        two_columns(
            [("policy", f"{'job kinds':18s} description")]
            + [(name, f"{kinds:18s} {text}") for name, kinds, text in policy_catalog()]
        )
    )


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
