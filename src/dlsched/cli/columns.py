"""Plain two-column listings (``dlsched list ...``, ``dlsched preset list``)."""

from __future__ import annotations

from collections.abc import Iterable


def two_columns(rows: Iterable[tuple[str, str]]) -> str:
    """``name  text`` lines with the text column aligned after the longest name."""
    rows = list(rows)
    width = max((len(name) for name, _ in rows), default=0)
    return "\n".join(f"{name:<{width}}  {text}" for name, text in rows)
