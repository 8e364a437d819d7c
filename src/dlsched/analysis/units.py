"""How the analysis reports write numbers: shares, counts, GPU-hours and durations."""

from __future__ import annotations


def pct(share: float) -> str:
    """A share (0..1) as a percentage with one decimal."""
    return f"{100 * share:.1f}%"


def num(value: float) -> str:
    """A number: whole with thousands separators from 100 on, three significant digits below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


def gpu_hours(seconds: float) -> str:
    """GPU-seconds as GPU-hours."""
    return f"{num(seconds / 3600)} GPU·h"


def duration(seconds: float) -> str:
    """Seconds as written in the tables: exact seconds plus a human unit from a minute on."""
    text = f"{num(seconds)} s"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{text} ({seconds / size:.3g} {unit})"
    return text
