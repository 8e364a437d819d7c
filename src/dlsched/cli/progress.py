"""A progress bar for long simulations (rich), shown only on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from dlsched.sim.simulator import ProgressFn


@contextmanager
def job_progress(label: str, enabled: bool = True) -> Iterator[ProgressFn | None]:
    """Yields a callback ``(finished, total)`` driving a bar, or None when not on a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
