"""The ``dlsched`` command: thin wrappers over the library (conventions in the README,
"Command-line conventions"). Subcommands are imported when run (:mod:`dlsched.cli.group`)."""

from __future__ import annotations

from typing import Annotated

import typer

from dlsched import __version__
from dlsched.cli.group import LazyGroup

app = typer.Typer(
    name="dlsched",
    cls=LazyGroup,
    help="Scheduling deep-learning workloads in GPU datacenters: traces, simulation, policies.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"dlsched {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_show_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Scheduling deep-learning workloads in GPU datacenters: traces, simulation, policies."""


if __name__ == "__main__":
    app()
