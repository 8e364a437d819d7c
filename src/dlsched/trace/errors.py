"""Errors raised for bad trace input. Every message names the file, the line and the field."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RowError:
    """One rejected row: ``path:line`` (1-based, the header is line 1), the field, and why."""

    path: str
    line: int
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.reason}"


class TraceError(ValueError):
    """A trace cannot be read as asked. ``errors`` lists the rejected rows, if any."""

    def __init__(self, message: str, errors: tuple[RowError, ...] = ()) -> None:
        shown = "\n".join(f"  {e}" for e in errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(message + ("\n" + shown + more if errors else ""))
        self.errors = errors
