"""Parquet storage of a :class:`Trace`: the canonical schema plus ``source`` and ``origin_unix``.

Parquet has no lines; errors about a stored trace give the 1-based row number in the ``line``
field of :class:`RowError`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dlsched.outdir import FileKind, write_file_atomic
from dlsched.trace.checks import bad_rows_error, check_rows
from dlsched.trace.errors import RowError, TraceError
from dlsched.trace.schema import ADDED_FIELDS, SCHEMA, Trace, sort_by_submit

SOURCE_KEY = b"dlsched.source"
ORIGIN_KEY = b"dlsched.origin_unix"
PARQUET_MAGIC = b"PAR1"


def is_parquet(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file that starts with the Parquet magic bytes (whatever its name)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC
    except OSError:
        return False


PARQUET_FILE = FileKind("Parquet file", is_parquet)
"""Parquet traces as outputs (:mod:`dlsched.outdir`): only a Parquet file is replaced."""


def write_parquet(trace: Trace, path: str | os.PathLike[str]) -> None:
    """Write ``trace`` to ``path`` atomically.

    The file is written to a temporary name in the same directory and renamed over ``path`` only
    when complete, so ``path`` is either the old file or the whole new one, never a partial write.
    ``trace.source`` and ``trace.origin_unix`` are kept in the schema metadata.
    """
    target = Path(path)
    metadata = dict(SCHEMA.metadata or {})
    metadata[SOURCE_KEY] = trace.source.encode()
    if trace.origin_unix is not None:
        metadata[ORIGIN_KEY] = repr(float(trace.origin_unix)).encode()
    table = trace.table.replace_schema_metadata(metadata)
    write_file_atomic(
        target,
        b"",
        lambda tmp: pq.write_table(table, tmp, compression="zstd", compression_level=9),
    )


def read_parquet(path: str | os.PathLike[str]) -> Trace:
    """Read a trace written by :func:`write_parquet`.

    Raises TraceError when the file is not a Parquet file, when its schema is not the canonical
    one (naming every differing field), or when any row breaks the shared row checks.
    """
    trace, _, _ = read_parquet_checked(path, skip_bad_rows=False)
    return trace


def read_parquet_checked(
    path: str | os.PathLike[str], skip_bad_rows: bool
) -> tuple[Trace, int, tuple[RowError, ...]]:
    """Read and check a canonical Parquet trace: ``(trace, rows read, rejected rows)``.

    Without ``skip_bad_rows`` any rejected row raises TraceError; with it the trace holds the
    accepted rows.
    """
    name = str(path)
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise TraceError(f"{name}: no such file") from None
    except (OSError, pa.ArrowException) as e:
        raise TraceError(f"{name}: not a readable Parquet file: {e}") from None
    _check_schema(name, table.schema)
    metadata = table.schema.metadata or {}
    try:
        source = metadata.get(SOURCE_KEY, name.encode()).decode()
    except UnicodeDecodeError:
        raise TraceError(f"{name}: metadata {SOURCE_KEY.decode()} is not UTF-8 text") from None
    origin_text = metadata.get(ORIGIN_KEY)
    try:
        origin = None if origin_text is None else float(origin_text.decode())
    except (ValueError, UnicodeDecodeError):
        origin = math.nan
    if origin is not None and not math.isfinite(origin):
        raise TraceError(f"{name}: metadata {ORIGIN_KEY.decode()} is not a finite number")
    for column in ADDED_FIELDS:
        if column not in table.schema.names:
            kind = SCHEMA.field(column).type
            table = table.append_column(pa.field(column, kind), pa.nulls(table.num_rows, kind))
    table = table.select(list(SCHEMA.names)).cast(SCHEMA)
    rows = range(1, table.num_rows + 1)
    keep, errors = check_rows(table, name, rows, place="row")
    if errors and not skip_bad_rows:
        raise bad_rows_error(name, table.num_rows, errors)
    if errors:
        table = table.filter(pa.array(keep))
    return Trace(sort_by_submit(table), source, origin), len(rows), errors


def _check_schema(path: str, schema: pa.Schema) -> None:
    """Every canonical field, with its type and nullability, and nothing else (order is free)."""
    problems: list[str] = []
    for field in SCHEMA:
        indices = schema.get_all_field_indices(field.name)
        if not indices and field.name in ADDED_FIELDS:
            continue
        if not indices:
            problems.append(f"field {field.name!r}: missing")
            continue
        if len(indices) > 1:
            problems.append(f"field {field.name!r}: appears {len(indices)} times")
            continue
        found = schema.field(indices[0])
        if not found.type.equals(field.type):
            problems.append(f"field {field.name!r}: type {found.type}, expected {field.type}")
        elif found.nullable and not field.nullable:
            problems.append(f"field {field.name!r}: nullable, expected non-nullable")
    problems.extend(
        f"field {name!r}: not a canonical field"
        for name in schema.names
        if name not in SCHEMA.names
    )
    if problems:
        raise TraceError(
            f"{path}: not a dlsched trace, its schema differs from the canonical one:\n  "
            + "\n  ".join(problems)
        )
