"""The record loop shared by every CSV format: line numbers, field counts, per-row parsing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from dlsched.trace.errors import RowError
from dlsched.trace.readers.fields import BadField, Row
from dlsched.trace.readers.spec import CsvFormat, RowParser
from dlsched.trace.schema import SCHEMA

# Field name used in a RowError about the record as a whole (its field count).
WHOLE_ROW = "(row)"


@dataclass(frozen=True)
class ParsedRecords:
    """The rows a format's parser accepted, as an unsorted canonical table in file order.

    ``lines`` holds the 1-based line of each table row; ``rows_read`` counts the data records
    (blank lines are not records); ``errors`` the rejected ones, in file order.
    """

    table: pa.Table
    lines: tuple[int, ...]
    rows_read: int
    errors: tuple[RowError, ...]
    parser: RowParser


class LineTrackingReader:
    """Yields ``(line, last, record)`` from a ``csv.reader``: the record's first and last line.

    ``csv.reader.line_num`` counts physical lines read so far, so a record starts one line after
    where the previous one ended (quoted fields may span lines).
    """

    def __init__(self, reader: Iterator[list[str]], line_num: Callable[[], int]) -> None:
        self._reader = reader
        self._line_num = line_num

        self.start = line_num() + 1
        """The first line of the record being read (where a CSV error's record began)."""

    def __iter__(self) -> Iterator[tuple[int, int, list[str]]]:
        for record in self._reader:
            last = self._line_num()
            yield self.start, last, record
            self.start = last + 1


def parse_records(
    path: str, records: Iterator[tuple[int, int, list[str]]], header: list[str], fmt: CsvFormat
) -> ParsedRecords:
    """Run ``fmt``'s parser over ``records`` (``(line, last line, fields)`` after the header).

    Blank lines are skipped: they hold no job. A record whose field count differs from the
    header's, that spans several lines (no trace field holds a line break: an unclosed quote
    would otherwise swallow the rows after it), or that the parser rejects, becomes a RowError
    and contributes nothing.
    """
    row = Row({name: i for i, name in enumerate(header)})
    width = len(header)
    parser = fmt.new_parser()
    accepted: list[tuple[Any, ...]] = []
    lines: list[int] = []
    errors: list[RowError] = []
    rows_read = 0
    for line, last, record in records:
        if not record:
            continue
        rows_read += 1
        if last > line:
            errors.append(
                RowError(
                    path,
                    line,
                    WHOLE_ROW,
                    f"a quoted field runs on to line {last} (an unclosed quote? no field of a "
                    "trace holds a line break)",
                )
            )
            continue
        if len(record) != width:
            errors.append(
                RowError(path, line, WHOLE_ROW, f"{len(record)} fields, the header has {width}")
            )
            continue
        row.values = record
        try:
            accepted.append(parser.parse(row))
        except BadField as e:
            errors.append(RowError(path, line, e.field, e.reason))
            continue
        lines.append(line)
    table = columns_table(fmt.outputs, accepted, fmt.schema)
    return ParsedRecords(table, tuple(lines), rows_read, tuple(errors), parser)


def columns_table(
    names: tuple[str, ...], rows: list[tuple[Any, ...]], schema: pa.Schema = SCHEMA
) -> pa.Table:
    """A table of ``schema`` (the canonical job schema by default; file order, not sorted) from
    row tuples holding ``names``; the other columns are null."""
    n = len(rows)
    columns = dict(zip(names, zip(*rows, strict=True), strict=True)) if rows else {}
    arrays = []
    for field in schema:
        if field.name in columns:
            arrays.append(pa.array(columns[field.name], type=field.type))
        else:
            arrays.append(pa.nulls(n, type=field.type))
    return pa.Table.from_arrays(arrays, schema=schema)
