"""Field rules every request format shares: token counts, arrival times, wall-clock stamps."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from dlsched.safe_load import MAX_NUMBER_CHARS, check_date, shown
from dlsched.trace.checks import MAX_SECONDS
from dlsched.trace.readers.fields import BadField, show_number
from dlsched.trace.walltime import parse_wall_time

MAX_TOKENS = 10_000_000
"""The largest prompt or output a request may give: beyond it a value is a mistake (no model
serves a context of ten million tokens)."""


def tokens(field: str, value: int, least: int = 1) -> int:
    """``value`` if it is a token count in ``least..MAX_TOKENS``; BadField naming ``field``."""
    if value < least:
        what = "a request generates at least one token" if least == 1 else f"at least {least}"
        raise BadField(field, f"{value} tokens ({what})")
    if value > MAX_TOKENS:
        raise BadField(field, f"{value} tokens is beyond the limit of {MAX_TOKENS:,}")
    return value


def seconds(field: str, value: float) -> float:
    """``value`` if it is an arrival offset in ``0..MAX_SECONDS``; BadField otherwise."""
    if value < 0:
        raise BadField(field, f"negative time: {show_number(value)}")
    if value > MAX_SECONDS:
        raise BadField(field, f"beyond the limit of {MAX_SECONDS:g} s (about 317 years)")
    return value


def wall_time(field: str, text: str) -> float:
    """Unix seconds of ``YYYY-MM-DD HH:MM:SS`` with an optional fraction (up to
    :data:`~dlsched.safe_load.MAX_NUMBER_CHARS` digits) and an optional UTC suffix
    (``+00:00`` or ``Z``), read as UTC (the Azure LLM traces' stamps), dated within
    :data:`~dlsched.safe_load.EARLIEST_DATE` .. :data:`~dlsched.safe_load.LATEST_DATE`."""
    if len(text) > 20 + MAX_NUMBER_CHARS + 6:
        raise BadField(field, f"not a time of the form YYYY-MM-DD HH:MM:SS[.ffffff]: {shown(text)}")
    stamp = text
    for suffix in ("+00:00", "Z"):
        if stamp.endswith(suffix):
            stamp = stamp[: -len(suffix)]
            break
    whole, dot, fraction = stamp.partition(".")
    try:
        unix = parse_wall_time(whole)
    except ValueError as exc:
        raise BadField(field, str(exc).replace("HH:MM:SS", "HH:MM:SS[.ffffff]")) from None
    if dot:
        if not (fraction.isascii() and fraction.isdigit()):
            raise BadField(field, f"not a fraction of a second: {shown(text)}")
        unix += float("0." + fraction)
    try:
        return check_date(unix, text)
    except ValueError as exc:
        raise BadField(field, str(exc)) from None


def shift_to_origin(table: pa.Table) -> tuple[pa.Table, float | None]:
    """``table`` with arrival times (Unix seconds) made relative to the earliest one, which is
    returned as the origin (None for an empty table)."""
    if table.num_rows == 0:
        return table, None
    times = table.column("arrival_time")
    origin = float(pc.min(times).as_py())
    index = table.schema.get_field_index("arrival_time")
    field = table.schema.field(index)
    return table.set_column(index, field, pc.subtract(times, origin)), origin
