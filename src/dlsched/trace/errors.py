"""Errors raised for bad trace input. Every message names the file, the line and the field."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def reading(path: str) -> Iterator[None]:
    """Turn a failure to open or decode ``path`` inside the block into a one-line TraceError
    naming the file: missing, not UTF-8, or unreadable."""
    try:
        yield
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except UnicodeDecodeError as e:
        raise TraceError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror or e}") from None
