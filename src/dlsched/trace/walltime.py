"""Wall-clock times in traces: strict parsing of naive ``YYYY-MM-DD HH:MM:SS`` stamps.

Trace files give wall times without a zone. dlsched reads them as UTC so that a trace's
``origin_unix`` and a date given on the command line (read the same way) line up exactly, whatever
the zone of the machine running the code.
"""

from __future__ import annotations

from datetime import datetime, timedelta

WALL_TIME_FORM = "YYYY-MM-DD HH:MM:SS"
_EPOCH = datetime(1970, 1, 1)


def parse_wall_time(text: str) -> float:
    """Return the Unix seconds of a naive ``YYYY-MM-DD HH:MM:SS`` stamp read as UTC.

    Raises ValueError for any other form (``datetime.fromisoformat`` alone would also accept
    dates without a time, 'T' separators and zone suffixes, which no trace format here uses).
    """
    if (
        len(text) != 19
        or text[4] != "-"
        or text[7] != "-"
        or text[10] != " "
        or text[13] != ":"
        or text[16] != ":"
    ):
        raise ValueError(f"not a time of the form {WALL_TIME_FORM}: {text!r}")
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a valid time: {text!r}") from None
    # Naive arithmetic from the naive epoch is UTC by construction (and faster than tz-aware).
    return (stamp - _EPOCH).total_seconds()


def parse_date_or_time(text: str) -> float:
    """Return the Unix seconds of ``YYYY-MM-DD`` (midnight) or ``YYYY-MM-DD HH:MM:SS``, as UTC."""
    stripped = text.strip()
    if len(stripped) == 10:
        return parse_wall_time(stripped + " 00:00:00")
    return parse_wall_time(stripped)


def format_utc(unix_s: float) -> str:
    """``YYYY-MM-DD HH:MM:SS`` (UTC) of Unix seconds: the form :func:`parse_wall_time` reads."""
    return (_EPOCH + timedelta(seconds=unix_s)).strftime("%Y-%m-%d %H:%M:%S")
