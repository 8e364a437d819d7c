"""The progress callback every long computation takes: ``report(done, total)``.

``done`` counts finished units (jobs, sweep cells, requests) of ``total``; a callback may be
called any number of times, ``done`` never decreasing, and need not be called at the end."""

from __future__ import annotations

from collections.abc import Callable

ProgressFn = Callable[[int, int], None]
