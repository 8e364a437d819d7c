"""Paths and small series shared by the energy (CES) tests."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

# The shared traces sit beside the project checkout (see their README).
SHARED_PHILLY = (
    Path(__file__).resolve().parents[2].parent
    / "shared"
    / "traces"
    / "philly"
    / "philly_node_sequence.csv"
)


def series_csv(
    path: Path, rows: list[tuple[str, str, str]], header: str = "time,active,total"
) -> Path:
    """Write ``rows`` (already formatted fields) under ``header``; return ``path``."""
    path.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def minute_rows(
    start: str, busy: list[int], total: int = 10, every_s: int = 60
) -> list[tuple[str, str, str]]:
    """One row per ``every_s`` seconds from ``start`` with the given busy counts."""
    t0 = datetime.fromisoformat(start)
    return [
        ((t0 + timedelta(seconds=k * every_s)).strftime("%Y-%m-%d %H:%M:%S"), str(b), str(total))
        for k, b in enumerate(busy)
    ]
