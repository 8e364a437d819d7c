"""Read any supported request-trace file into a :class:`RequestTrace`; write dlsched's own.

Reading is strict, as for job traces: every rejected row is reported as ``file:line: field:
reason``, nothing is coerced or dropped silently, and ``skip_bad_rows`` keeps the good rows
with every error listed. The format is detected from a CSV header (``.jsonl`` files are
Mooncake's).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dlsched.outdir import FileKind
from dlsched.serving.readers import MOONCAKE, REQUEST_CSV_FORMATS, REQUEST_FORMAT_NAMES
from dlsched.serving.readers.mooncake import read_mooncake
from dlsched.serving.requests import REQUEST_COLUMNS, RequestTrace
from dlsched.trace.checks import bad_rows_error
from dlsched.trace.errors import RowError, TraceError
from dlsched.trace.read import parse_csv_file
from dlsched.trace.readers.spec import CsvFormat
from dlsched.trace.schema import sort_stable

JSONL_SUFFIXES = (".jsonl", ".json")


@dataclass(frozen=True)
class RequestReadResult:
    """The accepted requests of a file, how many it had and why the others were rejected:
    ``len(trace) + len(errors) == rows_read``."""

    trace: RequestTrace
    rows_read: int
    errors: tuple[RowError, ...]
    format: str


def is_request_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` looks like a request trace: a JSON-lines file, or a CSV file whose
    header fits a request format (an unreadable file is not one)."""
    if Path(path).suffix.lower() in JSONL_SUFFIXES:
        return True
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            header = next(csv.reader(handle), None)
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return header is not None and _detect([c.strip() for c in header]) is not None


def _detect(header: Iterable[str]) -> CsvFormat | None:
    columns = frozenset(header)
    matches = [f for f in REQUEST_CSV_FORMATS.values() if f.matches(columns)]
    return matches[0] if len(matches) == 1 else None


def read_requests(
    path: str | os.PathLike[str], format: str | None = None, skip_bad_rows: bool = False
) -> RequestReadResult:
    """Read a request trace of any known format (:data:`REQUEST_FORMAT_NAMES`; None:
    detect). Without ``skip_bad_rows`` any rejected row raises TraceError listing
    ``file:line: field: reason``; a file-level problem always does."""
    if format is not None and format not in REQUEST_FORMAT_NAMES:
        raise TraceError(
            f"unknown request format {format!r}; known formats: {', '.join(REQUEST_FORMAT_NAMES)}"
        )
    name = str(path)
    if format == MOONCAKE or (format is None and Path(name).suffix.lower() in JSONL_SUFFIXES):
        table, _, rows_read, errors = read_mooncake(name)
        fmt_name, origin = MOONCAKE, None
    else:
        fmt, parsed = parse_csv_file(name, lambda header: _choose(name, header, format))
        table, origin = parsed.parser.finish(parsed.table)
        rows_read, errors, fmt_name = parsed.rows_read, parsed.errors, fmt.name
    if errors and not skip_bad_rows:
        raise bad_rows_error(name, rows_read, errors)
    trace = RequestTrace(sort_stable(table, "arrival_time"), name, origin)
    return RequestReadResult(trace, rows_read, errors, fmt_name)


def _choose(path: str, header: list[str], format: str | None) -> CsvFormat:
    if format is not None:
        return REQUEST_CSV_FORMATS[format]
    found = _detect(header)
    if found is None:
        known = "\n".join(f"  {f.describe()}" for f in REQUEST_CSV_FORMATS.values())
        raise TraceError(
            f"{path}: not a request trace: columns {', '.join(header)}; known formats:\n{known}"
            f"\n  {MOONCAKE} (Mooncake JSON lines, *.jsonl): timestamp,input_length,"
            "output_length,hash_ids"
        )
    return found


REQUESTS_FILE = FileKind("request trace", lambda p: _detect(_header(p)) is not None)
"""Request CSV files as outputs (:mod:`dlsched.outdir`)."""


def _header(path: Path) -> list[str]:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return [c.strip() for c in next(csv.reader(handle), [])]
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def write_requests_csv(trace: RequestTrace, out: str | Path, force: bool = False) -> Path:
    """Write ``trace`` as dlsched's request CSV (read back by format ``requests``),
    atomically; an existing file is replaced only with ``force`` and only if it is a request
    trace."""

    def fill(tmp: Path) -> None:
        columns = [trace.column(name).to_pylist() for name in REQUEST_COLUMNS]
        with open(tmp, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(REQUEST_COLUMNS)
            for row in zip(*columns, strict=True):
                writer.writerow(["" if v is None else v for v in row])

    return REQUESTS_FILE.write(out, fill, force)
