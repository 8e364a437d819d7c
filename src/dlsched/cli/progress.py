"""Progress of long runs: a bar on a terminal, a line every so often when stderr is piped
(a log file, CI, ``2>&1 | tee``), so a run of minutes never looks hung."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from dlsched.progress import ProgressFn

PIPED_EVERY_S = 30.0
"""Seconds between two progress lines when stderr is not a terminal."""


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


@contextmanager
def job_progress(label: str, enabled: bool = True) -> Iterator[ProgressFn | None]:
    """Yields a callback ``(done, total)``: driving a bar on a terminal, else writing
    ``LABEL: DONE of TOTAL (P%), H:MM:SS elapsed`` to stderr at most every
    :data:`PIPED_EVERY_S` seconds; None when ``enabled`` is false (``--no-progress``)."""
    if not enabled:
        yield None
        return
    if not sys.stderr.isatty():
        start = time.monotonic()
        last = start

        def report(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last < PIPED_EVERY_S:
                return
            last = now
            share = f" ({100 * done / total:.0f}%)" if total else ""
            print(
                f"{label}: {done:,} of {total:,}{share}, {_elapsed(now - start)} elapsed",
                file=sys.stderr,
                flush=True,
            )

        yield report
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
