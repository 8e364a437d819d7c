"""What a CSV trace format declares: its columns, how it is recognized, how a record is read."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from dlsched.trace.readers.fields import Row
from dlsched.trace.schema import SCHEMA


class RowParser(Protocol):
    """Reads the records of one file, in file order. A fresh parser is made for every file."""

    def parse(self, row: Row) -> tuple[Any, ...]:
        """Return the canonical values of ``row`` in the order of the format's ``outputs``.

        Raise :class:`~dlsched.trace.readers.fields.BadField` to reject the record.
        """
        ...

    def finish(self, table: pa.Table) -> tuple[pa.Table, float | None]:
        """Given the parsed rows (canonical schema, file order), return the table with times
        relative to the trace's origin, and that origin as Unix seconds if known. Formats with
        absolute wall times shift them here; the shared row checks run on the result."""
        ...


@dataclass(frozen=True)
class CsvFormat:
    """A CSV trace format.

    A header is recognized as this format when it holds every ``signature`` column (and, for a
    ``closed`` format, no column outside ``required`` + ``optional``). Once recognized, a missing
    ``required`` column or a column outside ``required`` + ``optional`` is an error at line 1.
    ``variants``, when given, are alternative spellings of further required columns (one file
    layout each): a header must hold every column of one of them, the one it shares most columns
    with (the first on a tie), and the columns of the others are unexpected.
    ``gpu_jobs_note``, when set, makes 0 GPUs a row error and says why; ``missing_column_note``
    is added to the error for a header that lacks required columns. ``source_columns`` maps a
    canonical column to the file column it comes from, where the names differ. ``schema`` is
    the table the parser's rows fill: the canonical job schema, or another record's (LLM
    requests: :data:`dlsched.serving.requests.REQUEST_SCHEMA`).
    """

    name: str
    source: str
    required: tuple[str, ...]
    optional: tuple[str, ...]
    signature: frozenset[str]
    outputs: tuple[str, ...]
    new_parser: Callable[[], RowParser]
    closed: bool = False
    gpu_jobs_note: str | None = None
    missing_column_note: str | None = None
    source_columns: Mapping[str, str] = field(default_factory=dict)
    schema: pa.Schema = SCHEMA
    variants: tuple[tuple[str, ...], ...] = ()

    def columns_for(self, header: Iterable[str]) -> tuple[str, ...]:
        """The required columns of a file with ``header``: ``required`` and, with ``variants``,
        the variant the header comes closest to."""
        if not self.variants:
            return self.required
        present = set(header)
        best = max(self.variants, key=lambda v: len(present.intersection(v)))
        return self.required + best

    def file_column(self, canonical: str) -> str:
        """The file's name for canonical column ``canonical``, for messages about a row."""
        return self.source_columns.get(canonical, canonical)

    def matches(self, header: frozenset[str]) -> bool:
        """Whether a file with these header columns looks like this format."""
        if not self.signature <= header:
            return False
        return not self.closed or header <= set(self.required) | set(self.optional)

    def describe(self) -> str:
        """One line for error messages: the name and the expected columns."""
        columns = ",".join(self.required)
        if self.variants:
            columns += " + " + " | ".join(",".join(v) for v in self.variants)
        extra = f" [optional: {','.join(self.optional)}]" if self.optional else ""
        return f"{self.name} ({self.source}): {columns}{extra}"


class RelativeTimes:
    """``finish`` for formats whose times are already seconds from an unknown origin."""

    def finish(self, table: pa.Table) -> tuple[pa.Table, float | None]:
        return table, None
