"""How the CLI reports a user's mistake: one clear message on stderr and exit code 2.

Kept free of heavy imports: every command imports it, and ``dlsched --help`` must stay fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from dlsched.service.store.dialect import StoreError
from dlsched.trace.errors import TraceError

USER_ERRORS = (
    ValueError,  # TraceError, RunDirError, OutputError, GridError, ... derive from it
    StoreError,
    FileNotFoundError,
    IsADirectoryError,
)
BAD_ROWS_HINT = "pass --skip-bad-rows to drop the rejected rows (their count is reported)"
USER_ERROR = 2
"""The exit status of a command stopped by its input (bad option, file, trace, output path)."""


def print_error(message: str, hint: str | None = None) -> None:
    """``error: MESSAGE`` (and ``hint`` on the next line) on stderr, exactly as given: never
    re-wrapped (a ``file:line`` must stay on one line) and never read as rich markup (messages
    quote user text such as ``[optional: ...]`` and install commands such as
    ``pip install 'dlsched[service]'``)."""
    console = Console(stderr=True, soft_wrap=True, highlight=False, emoji=False)
    console.print(f"[bold red]error:[/] {escape(message)}")
    if hint:
        console.print(escape(hint))


@contextmanager
def user_errors(bad_rows_hint: str | None = None) -> Iterator[None]:
    """Turn expected input errors into a message and exit status 2 (no traceback).

    ``bad_rows_hint`` is added after a trace error that lists rejected rows.
    """
    try:
        yield
    except USER_ERRORS as exc:
        rows = isinstance(exc, TraceError) and exc.errors
        print_error(str(exc), bad_rows_hint if rows else None)
        raise typer.Exit(USER_ERROR) from exc
