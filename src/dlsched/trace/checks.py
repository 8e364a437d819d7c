"""Row checks every format shares, run column-wise on a canonical table.

Format readers reject what only they can judge (unparsable fields, format-specific consistency);
the rules here hold for any trace: finite non-negative times and sizes (times and durations
at most :data:`MAX_SECONDS`), start/end order, deadlines after submission, GPU
counts and shares, the state and work-unit vocabularies, and unique job ids. Each rejected row
gets one RowError, for the first rule it breaks in the order below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from dlsched.trace.errors import RowError, TraceError
from dlsched.trace.readers.fields import show_number
from dlsched.trace.schema import FINAL_STATES, WORK_UNITS

Mask = npt.NDArray[np.bool_]
MAX_SECONDS = 1e10
"""The largest time or duration a trace may give (about 317 years): beyond it a value is a
mistake, and the simulator's clock and per-time structures would be asked for the absurd."""
_TIME_COLUMNS = ("submit_time", "duration", "start_time", "end_time", "deadline")
_FLOAT_COLUMNS = (
    "submit_time",
    "duration",
    "start_time",
    "end_time",
    "deadline",
    "num_cpus",
    "memory_mib",
    "work",
)


def check_rows(
    table: pa.Table,
    path: str,
    lines: Sequence[int],
    gpu_jobs_note: str | None = None,
    place: str = "line",
) -> tuple[Mask, tuple[RowError, ...]]:
    """Apply the shared rules to ``table`` (rows in file order; ``lines[i]`` locates row i).

    Returns a mask of the rows to keep and the errors of the others, ordered by row. With
    ``gpu_jobs_note`` set, a job with 0 GPUs is rejected and the note says why. ``place`` names
    what ``lines`` count ("line" in a CSV file, "row" in a Parquet file) in messages.
    """
    n = table.num_rows
    rejected = np.zeros(n, dtype=bool)
    found: list[tuple[int, str, str]] = []

    def reject(mask: Mask, field: str, reason: Callable[[int], str]) -> None:
        for i in np.flatnonzero(mask & ~rejected):
            found.append((int(i), field, reason(int(i))))
        rejected[mask] = True

    job_id = table.column("job_id")
    empty_id = _mask(pc.or_kleene(pc.is_null(job_id), pc.equal(pc.utf8_length(job_id), 0)))
    reject(empty_id, "job_id", lambda i: "missing value")

    values = {name: _floats(table, name) for name in _FLOAT_COLUMNS}
    for name in _FLOAT_COLUMNS:
        column = values[name]
        reject(_mask(pc.is_nan(table.column(name))), name, lambda i: "not a number (NaN)")
        reject(np.isinf(column), name, _with_value("not a finite number", column))
    for name in _TIME_COLUMNS:
        column = values[name]
        reject(
            np.isfinite(column) & (column > MAX_SECONDS),
            name,
            _with_value(f"beyond the limit of {MAX_SECONDS:g} s (about 317 years)", column),
        )
    submit = values["submit_time"]
    reject(_mask(pc.is_null(table.column("submit_time"))), "submit_time", lambda i: "missing value")
    reject(submit < 0, "submit_time", lambda i: f"negative submit time: {show_number(submit[i])}")

    start, end = values["start_time"], values["end_time"]
    reject(
        start < submit,
        "start_time",
        lambda i: f"start {show_number(start[i])} s is before submit {show_number(submit[i])} s",
    )
    reject(
        end < start,
        "end_time",
        lambda i: f"end {show_number(end[i])} s is before start {show_number(start[i])} s",
    )
    reject(
        end < submit,
        "end_time",
        lambda i: f"end {show_number(end[i])} s is before submit {show_number(submit[i])} s",
    )
    deadline = values["deadline"]
    reject(
        deadline <= submit,
        "deadline",
        lambda i: (
            f"deadline {show_number(deadline[i])} s is not after submit "
            f"{show_number(submit[i])} s (deadlines are absolute times on the submit clock)"
        ),
    )
    duration = values["duration"]
    reject(duration < 0, "duration", lambda i: f"negative duration: {show_number(duration[i])}")
    for name in ("num_cpus", "memory_mib", "work"):
        column = values[name]
        reject(column < 0, name, _with_value("negative", column))

    gpus = _floats(table, "num_gpus")
    reject(_mask(pc.is_null(table.column("num_gpus"))), "num_gpus", lambda i: "missing value")
    reject(gpus < 0, "num_gpus", lambda i: f"negative GPU count: {show_number(gpus[i])}")
    if gpu_jobs_note is not None:
        reject(gpus == 0, "num_gpus", lambda i: f"0 GPUs ({gpu_jobs_note})")
    milli = _floats(table, "gpu_milli")
    reject(
        (gpus >= 1) & ((milli < 1) | (milli > 1000)),
        "gpu_milli",
        lambda i: f"{show_number(milli[i])} is outside 1..1000 for a GPU job",
    )
    reject(
        (gpus == 0) & (milli != 0) & ~np.isnan(milli),
        "gpu_milli",
        lambda i: f"{show_number(milli[i])} for a job without GPUs",
    )
    nodes = _floats(table, "num_nodes")
    reject(nodes < 0, "num_nodes", lambda i: f"negative: {show_number(nodes[i])}")
    batch = _floats(table, "batch_size")
    reject(batch < 1, "batch_size", lambda i: f"not a positive batch size: {show_number(batch[i])}")

    _reject_unknown(table, "state", FINAL_STATES, reject)
    _reject_unknown(table, "work_unit", WORK_UNITS, reject)
    no_unit = _mask(
        pc.and_kleene(pc.is_valid(table.column("work")), pc.is_null(table.column("work_unit")))
    )
    reject(no_unit, "work_unit", lambda i: "missing value (work is given)")

    # Counting distinct ids in Arrow is far cheaper than the Python walk, and usually enough.
    if pc.count_distinct(job_id, mode="all").as_py() < n:
        _reject_duplicates(job_id.to_pylist(), lines, place, rejected, found)
    found.sort()
    return ~rejected, tuple(RowError(path, lines[i], field, reason) for i, field, reason in found)


def bad_rows_error(path: str, rows_read: int, errors: tuple[RowError, ...]) -> TraceError:
    """The TraceError for a file with rejected rows, read without ``skip_bad_rows`` (the
    caller says how to keep the good rows: ``--skip-bad-rows`` on the command line)."""
    return TraceError(f"{path}: {len(errors)} of {rows_read} rows rejected", errors)


def _with_value(text: str, column: npt.NDArray[np.float64]) -> Callable[[int], str]:
    """A reason naming the offending value."""
    return lambda i: f"{text}: {show_number(column[i])}"


def _floats(table: pa.Table, name: str) -> npt.NDArray[np.float64]:
    """Column ``name`` as float64 with null read as NaN (so every comparison with it is False)."""
    column = pc.cast(table.column(name), pa.float64())
    result: npt.NDArray[np.float64] = column.to_numpy(zero_copy_only=False).astype(np.float64)
    return result


def _mask(values: pa.ChunkedArray) -> Mask:
    """A boolean Arrow column as a numpy mask, null read as False."""
    result: Mask = pc.fill_null(values, False).to_numpy(zero_copy_only=False).astype(bool)
    return result


def _reject_unknown(
    table: pa.Table,
    name: str,
    vocabulary: tuple[str, ...],
    reject: Callable[[Mask, str, Callable[[int], str]], None],
) -> None:
    column = table.column(name)
    unknown = _mask(pc.invert(pc.is_in(column, value_set=pa.array(vocabulary))))
    unknown &= _mask(pc.is_valid(column))
    texts = column.to_pylist() if unknown.any() else []
    reject(unknown, name, lambda i: f"unknown value {texts[i]!r} (expected one of {vocabulary})")


def _reject_duplicates(
    ids: list[str | None],
    lines: Sequence[int],
    place: str,
    rejected: Mask,
    found: list[tuple[int, str, str]],
) -> None:
    """Reject every row whose job_id an earlier, otherwise valid row already holds."""
    first: dict[str, int] = {}
    for i, job_id in enumerate(ids):
        if rejected[i] or job_id is None:
            continue
        seen = first.setdefault(job_id, i)
        if seen != i:
            found.append(
                (i, "job_id", f"duplicate job_id {job_id!r} (first on {place} {lines[seen]})")
            )
            rejected[i] = True
