"""Parquet storage: round trip, atomic writes, schema and value checks on reading."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dlsched.trace import (
    SCHEMA,
    Trace,
    TraceError,
    bundled_trace_path,
    read_parquet,
    read_trace,
    synthetic_trace,
    write_parquet,
)


def _full_trace() -> Trace:
    columns: dict[str, Any] = {
        "job_id": ["a", "b", "c"],
        "submit_time": [0.0, 5.5, 5.5],
        "num_gpus": [1, 0, 8],
        "duration": [10.0, None, 3.25],
        "user": ["u", None, "w"],
        "vc": ["v", "v", None],
        "job_name": [None, "n", "m"],
        "state": ["COMPLETED", "PENDING", None],
        "gpu_type": ["V100|T4", None, "A100"],
        "num_cpus": [1.5, 2.0, None],
        "memory_mib": [None, 100.0, 2048.0],
        "gpu_milli": [500, None, 1000],
        "application": ["bert", None, "cifar10"],
        "batch_size": [32, None, 2**40],
        "work": [100.0, None, 7.0],
        "work_unit": ["iterations", None, "epochs"],
        "start_time": [1.0, None, 6.0],
        "end_time": [11.0, 9.0, 9.25],
        "num_nodes": [1, None, 2],
    }
    return Trace.from_columns(columns, "hand-made", origin_unix=1_500_000_000.5)


def test_round_trip_keeps_every_column_source_and_origin(tmp_path: Path) -> None:
    trace = _full_trace()
    path = tmp_path / "t.parquet"
    write_parquet(trace, path)
    back = read_parquet(path)
    assert back.table.equals(trace.table)
    assert (back.source, back.origin_unix) == ("hand-made", 1_500_000_000.5)
    result = read_trace(path)
    assert result.format == "canonical" and result.rows_read == 3 and result.errors == ()


def test_round_trip_of_a_read_trace_and_of_an_empty_one(tmp_path: Path) -> None:
    trace = read_trace(bundled_trace_path("philly_jobs_2000")).trace
    write_parquet(trace, tmp_path / "p.parquet")
    back = read_parquet(tmp_path / "p.parquet")
    assert back.table.equals(trace.table)
    assert back.origin_unix == trace.origin_unix and back.source == trace.source

    empty = Trace(SCHEMA.empty_table(), "nothing")
    write_parquet(empty, tmp_path / "e.parquet")
    back = read_parquet(tmp_path / "e.parquet")
    assert len(back) == 0 and back.origin_unix is None and back.source == "nothing"


def test_write_replaces_atomically_and_cleans_up_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.parquet"
    write_parquet(_full_trace(), path)
    before = path.read_bytes()

    def broken_write(table: pa.Table, where: str, **options: object) -> None:
        Path(where).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken_write)
    with pytest.raises(OSError, match="disk full"):
        write_parquet(synthetic_trace(10, seed=1), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]


def test_overwrite_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    write_parquet(_full_trace(), path)
    write_parquet(synthetic_trace(5, seed=2), path)
    assert len(read_parquet(path)) == 5
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda t: t.drop_columns(["vc"]), "'vc': missing"),
        (lambda t: t.append_column("extra", pa.array([1, 2, 3])), "'extra': not a canonical"),
        (
            lambda t: t.set_column(2, "num_gpus", pa.array([1, 0, 8], type=pa.int64())),
            "'num_gpus': type int64, expected int32",
        ),
        (
            lambda t: t.set_column(0, pa.field("job_id", pa.string()), t.column("job_id")),
            "'job_id': nullable, expected non-nullable",
        ),
    ],
)
def test_wrong_schema_names_the_field(tmp_path: Path, change: Any, named: str) -> None:
    path = tmp_path / "bad.parquet"
    pq.write_table(change(_full_trace().table), path)
    with pytest.raises(TraceError) as caught:
        read_parquet(path)
    assert str(path) in str(caught.value) and named in str(caught.value)


def test_not_parquet_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    path.write_text("job_id\n")
    with pytest.raises(TraceError, match="not a readable Parquet file"):
        read_parquet(path)
    with pytest.raises(TraceError, match="no such file"):
        read_trace(tmp_path / "absent.parquet")


def test_bad_values_in_parquet_are_row_errors(tmp_path: Path) -> None:
    columns: dict[str, Any] = {
        "job_id": ["a", "b", "a", "c"],
        "submit_time": [0.0, 1.0, 2.0, 3.0],
        "num_gpus": [1, 1, 1, -1],
        "duration": [1.0, float("nan"), 1.0, 1.0],
    }
    path = tmp_path / "t.parquet"
    write_parquet(Trace.from_columns(columns, "bad"), path)
    with pytest.raises(TraceError) as caught:
        read_parquet(path)
    assert [(e.line, e.field) for e in caught.value.errors] == [
        (2, "duration"),
        (3, "job_id"),
        (4, "num_gpus"),
    ]
    assert "first on row 1" in caught.value.errors[1].reason
    result = read_trace(path, skip_bad_rows=True)
    assert result.trace.column("job_id").to_pylist() == ["a"]
    assert result.rows_read == 4


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        (b"dlsched.source", b"\xff\xfe", "dlsched.source is not UTF-8 text"),
        (b"dlsched.origin_unix", b"abc", "dlsched.origin_unix is not a finite number"),
        (b"dlsched.origin_unix", b"inf", "dlsched.origin_unix is not a finite number"),
        (b"dlsched.origin_unix", b"\xff", "dlsched.origin_unix is not a finite number"),
        (b"ARROW:schema", b"garbage", "not a readable Parquet file"),
    ],
)
def test_bad_metadata_is_an_error_naming_the_file(
    tmp_path: Path, key: bytes, value: bytes, problem: str
) -> None:
    table = _full_trace().table
    metadata = {**(table.schema.metadata or {}), key: value}
    path = tmp_path / "bad.parquet"
    pq.write_table(table.replace_schema_metadata(metadata), path)
    with pytest.raises(TraceError, match=re.escape(f"{path}: ") + ".*" + re.escape(problem)):
        read_parquet(path)
