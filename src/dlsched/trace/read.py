"""Read any supported trace file into a checked :class:`Trace`.

Reading is strict: every rejected row is reported with its file line and field, nothing is
coerced or dropped silently. Blank lines hold no job and are skipped; they are not counted as rows.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from dlsched.safe_load import InputError, bounded_lines
from dlsched.trace.checks import bad_rows_error, check_rows
from dlsched.trace.errors import RowError, TraceError, reading
from dlsched.trace.io import is_parquet, read_parquet_checked
from dlsched.trace.readers import CSV_FORMATS, FORMAT_NAMES, CsvFormat
from dlsched.trace.readers.records import LineTrackingReader, ParsedRecords, parse_records
from dlsched.trace.schema import Trace, sort_by_submit

PARQUET_SUFFIX = ".parquet"


@dataclass(frozen=True)
class ReadResult:
    """The accepted rows of a file, how many data rows it had, and why the others were rejected.

    ``len(trace) + len(errors) == rows_read`` always holds: each rejected row has one error.
    """

    trace: Trace
    rows_read: int
    errors: tuple[RowError, ...]
    format: str


def read_trace(
    path: str | os.PathLike[str], format: str | None = None, skip_bad_rows: bool = False
) -> ReadResult:
    """Read a trace file of any known format (see :data:`FORMAT_NAMES`).

    ``format=None`` detects it: a Parquet file (by its name or its first bytes) is a canonical
    trace written by ``write_parquet``; a CSV file's format is recognized from its header
    columns. Without
    ``skip_bad_rows`` any rejected row raises TraceError listing ``file:line: field: reason`` for
    each; with it, the result holds the accepted rows and every error. A file-level problem
    (unreadable, empty, unrecognized header, missing or unexpected column) always raises
    TraceError. The trace is sorted by submit time (stable).
    """
    if format is not None and format not in FORMAT_NAMES:
        raise TraceError(
            f"unknown trace format {format!r}; known formats: {', '.join(FORMAT_NAMES)}"
        )
    name = str(path)
    if Path(path).suffix.lower() == PARQUET_SUFFIX or is_parquet(path):
        if format not in (None, "canonical"):
            raise TraceError(f"{name}: a Parquet file is a canonical trace, not {format!r}")
        trace, rows_read, errors = read_parquet_checked(path, skip_bad_rows)
        return ReadResult(trace, rows_read, errors, "canonical")
    return _read_csv(name, format, skip_bad_rows)


def detect_format(path: str, header: Iterable[str]) -> CsvFormat:
    """The CSV format whose columns ``header`` matches; TraceError if none or several do."""
    columns = frozenset(header)
    matches = [f for f in CSV_FORMATS.values() if f.matches(columns)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join(f.name for f in matches)
        raise TraceError(f"{path}: header matches several formats ({names}); pass the format")
    known = "\n".join(f"  {f.describe()}" for f in CSV_FORMATS.values())
    raise TraceError(
        f"{path}: unrecognized header, columns {', '.join(header)}; known formats:\n{known}"
    )


def parse_csv_file(
    path: str, choose: Callable[[list[str]], CsvFormat]
) -> tuple[CsvFormat, ParsedRecords]:
    """Open the CSV file ``path``, pick its format from its header with ``choose`` (which raises
    TraceError when none fits), check the header against it and run the format's parser over
    every record. Every file-level problem (missing, unreadable, not UTF-8, not CSV, bad header)
    is a TraceError naming the file (and line); rejected records are in the result."""
    with reading(path), open(path, newline="", encoding="utf-8-sig") as handle:
        # strict: a quote inside an unquoted field, or text after a closing quote, is an
        # error naming its line instead of a silently altered value. Lines are read bounded:
        # a line longer than MAX_LINE_CHARS is refused before it is held whole.
        reader = csv.reader(bounded_lines(handle, path), strict=True)
        records: LineTrackingReader | None = None
        try:
            first = next(reader, None)
            if first is None:
                raise TraceError(f"{path}: empty file, expected a header line")
            header = [column.strip() for column in first]
            fmt = choose(header)
            _check_header(path, header, fmt)
            records = LineTrackingReader(reader, lambda: reader.line_num)
            return fmt, parse_records(path, iter(records), header, fmt)
        except csv.Error as e:
            start = records.start if records is not None else reader.line_num
            hint = (
                " (a quote opened in this record is never closed)"
                if "end of data" in str(e)
                else ""
            )
            raise TraceError(f"{path}:{start}: unreadable CSV: {e}{hint}") from None
        except InputError as e:
            raise TraceError(str(e)) from None


def _read_csv(path: str, format: str | None, skip_bad_rows: bool) -> ReadResult:
    def choose(header: list[str]) -> CsvFormat:
        return CSV_FORMATS[format] if format else detect_format(path, header)

    fmt, parsed = parse_csv_file(path, choose)
    table, origin = parsed.parser.finish(parsed.table)
    keep, checked = check_rows(table, path, parsed.lines, fmt.gpu_jobs_note)
    checked = tuple(dataclasses.replace(e, field=fmt.file_column(e.field)) for e in checked)
    errors = tuple(sorted(parsed.errors + checked, key=lambda e: e.line))
    if errors and not skip_bad_rows:
        raise bad_rows_error(path, parsed.rows_read, errors)
    if checked:
        table = table.filter(pa.array(keep))
    trace = Trace(sort_by_submit(table), path, origin)
    return ReadResult(trace, parsed.rows_read, errors, fmt.name)


def _check_header(path: str, header: list[str], fmt: CsvFormat) -> None:
    """Header problems reject the whole file: they are reported at line 1, one per column."""
    problems: list[RowError] = []
    seen: set[str] = set()
    for column in header:
        if column in seen:
            problems.append(RowError(path, 1, column, "column appears more than once"))
        seen.add(column)
    required = fmt.columns_for(header)
    allowed = set(required) | set(fmt.optional)
    problems.extend(
        RowError(path, 1, column, f"required column missing (format {fmt.name})")
        for column in required
        if column not in seen
    )
    problems.extend(
        RowError(path, 1, column or "(empty)", f"unexpected column for format {fmt.name}")
        for column in header
        if column not in allowed
    )
    if problems:
        missing = any(column not in seen for column in required)
        note = f"; {fmt.missing_column_note}" if missing and fmt.missing_column_note else ""
        raise TraceError(f"{path}: header does not fit format {fmt.name}{note}", tuple(problems))
