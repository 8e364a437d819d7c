"""Check trace files and report every rejected row, for ``dlsched trace validate``: job traces
and LLM request traces (Azure LLM, BurstGPT, Mooncake, dlsched's request CSV), each detected
from its header (a ``.jsonl`` file is Mooncake's) unless a format is given."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from dlsched.trace.errors import RowError, TraceError
from dlsched.trace.read import read_trace


@dataclass(frozen=True)
class FileReport:
    """The outcome of reading one file.

    ``problem`` is set when the file as a whole could not be read (missing, unrecognized header,
    missing column...); then ``format`` may be None and no rows were accepted. ``errors`` holds
    every rejected row (or the header problems, at line 1).
    """

    path: str
    format: str | None
    rows_read: int
    rows_accepted: int
    errors: tuple[RowError, ...]
    problem: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the file was read and every row accepted."""
        return self.problem is None and not self.errors


def validate_files(
    paths: Iterable[str | os.PathLike[str]], format: str | None = None
) -> list[FileReport]:
    """Read each file (format detected unless given) and report it; never raises TraceError."""
    from dlsched.serving.readers import REQUEST_FORMAT_NAMES
    from dlsched.serving.readers.read import is_request_file, read_requests

    reports = []
    for path in paths:
        requests = format in REQUEST_FORMAT_NAMES or (format is None and is_request_file(path))
        try:
            read = (
                read_requests(path, format, skip_bad_rows=True)
                if requests
                else read_trace(path, format, skip_bad_rows=True)
            )
        except TraceError as e:
            reports.append(FileReport(str(path), format, 0, 0, e.errors, _message_only(e)))
            continue
        # A header alone is a readable file but not a trace: nothing to simulate.
        what = "request" if requests else "job"
        empty = f"no {what} rows (the file holds a header only)" if not read.rows_read else None
        reports.append(
            FileReport(str(path), read.format, read.rows_read, len(read.trace), read.errors, empty)
        )
    return reports


def render_reports(
    reports: Iterable[FileReport], max_errors: int | None = None
) -> tuple[str, bool]:
    """Plain text for the reports and whether every file is clean.

    Each file gets a summary line, then its errors (at most ``max_errors`` per file when given,
    with a count of the rest), then the file-level problem if any.
    """
    lines: list[str] = []
    all_ok = True
    for report in reports:
        all_ok = all_ok and report.ok
        verdict = "ok" if report.ok else "FAILED"
        if report.problem is not None:
            lines.append(f"{report.path}: {verdict}: {report.problem}")
        else:
            rejected = report.rows_read - report.rows_accepted
            lines.append(
                f"{report.path}: {verdict}: format {report.format}, {report.rows_read} rows read, "
                f"{report.rows_accepted} accepted, {rejected} rejected"
            )
        shown = report.errors if max_errors is None else report.errors[:max_errors]
        lines.extend(f"  {error}" for error in shown)
        if len(shown) < len(report.errors):
            lines.append(f"  ... and {len(report.errors) - len(shown)} more")
    return "\n".join(lines), all_ok


def _message_only(error: TraceError) -> str:
    """The message of ``error`` without the listing of its row errors (reported separately)."""
    text = str(error)
    if error.errors:
        text = text.split("\n  " + str(error.errors[0]), 1)[0]
    return text
