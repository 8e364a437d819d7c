"""How the CLI reports a user's mistake: one clear message on stderr and exit code 2."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from dlsched.metrics.rundir import RunDirError
from dlsched.service.store_dialect import StoreError
from dlsched.trace.errors import TraceError

USER_ERRORS = (
    TraceError,
    RunDirError,
    StoreError,
    ValueError,
    FileNotFoundError,
    IsADirectoryError,
)
BAD_ROWS_HINT = "pass --skip-bad-rows to drop the rejected rows (their count is reported)"


@contextmanager
def user_errors(bad_rows_hint: str | None = None) -> Iterator[None]:
    """Turn expected input errors into a message and exit status 2 (no traceback).

    The message is printed as given: never re-wrapped (a ``file:line`` must stay on one line)
    and never read as rich markup (messages quote user text such as ``[optional: ...]``).
    ``bad_rows_hint`` is added after a trace error that lists rejected rows.
    """
    try:
        yield
    except USER_ERRORS as exc:
        console = Console(stderr=True, soft_wrap=True, highlight=False)
        console.print(f"[bold red]error:[/] {escape(str(exc))}")
        if bad_rows_hint and isinstance(exc, TraceError) and exc.errors:
            console.print(escape(bad_rows_hint))
        raise typer.Exit(2) from exc
