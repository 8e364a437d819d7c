"""Bounded log volume: a message repeated within a window is written once, then counted.

:class:`RepeatFilter` keys records by logger, level and message template (the format string
before its arguments, so "job j1 failed" and "job j2 failed" are one kind). The first record of
a kind in a window of ``window_s`` seconds passes; the next ones are dropped and counted; the
first record of the kind after the window passes with ``(N similar messages suppressed in the
last S s)`` appended. Tracebacks are kept only on records that pass. At most ``max_kinds``
kinds are tracked (the oldest forgotten first), so the filter's memory is bounded too.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable

DEFAULT_WINDOW_S = 60.0


class RepeatFilter(logging.Filter):
    """See the module docstring."""

    def __init__(
        self,
        window_s: float = DEFAULT_WINDOW_S,
        max_kinds: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.window_s = window_s
        self.max_kinds = max_kinds
        self.clock = clock
        self._seen: OrderedDict[tuple[str, int, str], tuple[float, int]] = OrderedDict()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        found = self._seen.get(key)
        if found is not None and now - found[0] < self.window_s:
            self._seen[key] = (found[0], found[1] + 1)
            return False
        if found is not None and found[1]:
            record.msg = (
                f"{record.msg} ({found[1]} similar messages suppressed in the last "
                f"{now - found[0]:.0f} s)"
            )
        self._seen[key] = (now, 0)
        self._seen.move_to_end(key)
        while len(self._seen) > self.max_kinds:
            self._seen.popitem(last=False)
        return True


UVICORN_LOGGERS = ("uvicorn", "uvicorn.error")
"""uvicorn's loggers, which write through their own handlers (they do not propagate)."""


def install(window_s: float = DEFAULT_WINDOW_S) -> logging.Handler:
    """Send warnings and errors of every propagating logger (the service's, asyncio's) to
    stderr through a :class:`RepeatFilter`, and give each of uvicorn's loggers one of its own
    (call after uvicorn configured its logging); returns the root handler."""
    handler = logging.StreamHandler()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RepeatFilter(window_s))
    logging.getLogger().addHandler(handler)
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RepeatFilter) for f in logger.filters):
            logger.addFilter(RepeatFilter(window_s))
    return handler
