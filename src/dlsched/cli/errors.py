"""How the CLI reports a user's mistake: one clear message on stderr and exit code 2."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

from dlsched.metrics.rundir import RunDirError
from dlsched.trace.errors import TraceError

USER_ERRORS = (TraceError, RunDirError, ValueError, FileNotFoundError, IsADirectoryError)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn expected input errors into a message and exit status 2 (no traceback)."""
    try:
        yield
    except USER_ERRORS as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {exc}", highlight=False, markup=True)
        raise typer.Exit(2) from exc
