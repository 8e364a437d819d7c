"""Format detection from headers, file-level errors, and CSV corner cases."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dlsched.trace import FORMAT_NAMES, TraceError, read_trace

WriteFile = Callable[[str, str], Path]

HEADERS = {
    "philly": "job_id,submit_time,submit_s,duration_s,num_gpus,gpu_time_s,vc",
    "gavel-philly": "job_id,vc,gpu_num,submit_time,duration,job_type,total_steps",
    "helios": (
        "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,"
        "end_time,duration,queue"
    ),
    "alibaba-2023": (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time"
    ),
    "pollux": "name,time,application,num_replicas,batch_size",
    "elasticflow": (
        "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"
    ),
    "canonical": "job_id,submit_time,num_gpus,duration,vc",
}


def test_every_format_has_a_header_case() -> None:
    assert set(HEADERS) == set(FORMAT_NAMES)


@pytest.mark.parametrize("fmt", list(HEADERS))
def test_header_only_file_is_an_empty_valid_trace(fmt: str, write_file: WriteFile) -> None:
    result = read_trace(write_file("t.csv", HEADERS[fmt] + "\n"))
    assert result.format == fmt
    assert (result.rows_read, len(result.trace), result.errors) == (0, 0, ())


def test_gavel_header_without_optional_columns(write_file: WriteFile) -> None:
    result = read_trace(write_file("t.csv", "job_id,gpu_num,submit_time,duration,job_type\n"))
    assert result.format == "gavel-philly"


def test_columns_may_come_in_any_order_and_with_spaces(write_file: WriteFile) -> None:
    text = "name, batch_size, num_replicas, time, application\nj,32,2,5,bert\n"
    job = next(read_trace(write_file("t.csv", text)).trace.jobs())
    assert (job.job_id, job.batch_size, job.num_gpus, job.submit_time, job.application) == (
        "j",
        32,
        2,
        5.0,
        "bert",
    )


def test_unrecognized_header_names_file_columns_and_formats(write_file: WriteFile) -> None:
    path = write_file("t.csv", "a,b,c\n1,2,3\n")
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    message = str(caught.value)
    assert str(path) in message and "a, b, c" in message
    for name in FORMAT_NAMES:
        assert name in message


def test_missing_required_column_is_line_1(write_file: WriteFile) -> None:
    path = write_file("t.csv", "job_id,submit_time,submit_s,duration_s,vc\n1,x,0,1,a\n")
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    assert [(e.line, e.field) for e in caught.value.errors] == [(1, "num_gpus")]
    assert f"{path}:1: num_gpus: required column missing" in str(caught.value)


def test_unexpected_and_repeated_columns_are_line_1(write_file: WriteFile) -> None:
    header = "name,time,application,num_replicas,batch_size,extra,time"
    with pytest.raises(TraceError) as caught:
        read_trace(write_file("t.csv", header + "\n"))
    found = {(e.line, e.field, e.reason) for e in caught.value.errors}
    assert (1, "extra", "unexpected column for format pollux") in found
    assert (1, "time", "column appears more than once") in found


def test_missing_columns_are_errors_even_with_skip_bad_rows(write_file: WriteFile) -> None:
    with pytest.raises(TraceError):
        read_trace(write_file("t.csv", "job_id,submit_time\n1,2\n"), skip_bad_rows=True)


def test_explicit_format_overrides_detection(write_file: WriteFile) -> None:
    path = write_file("t.csv", HEADERS["pollux"] + "\nj,1,bert,1,8\n")
    with pytest.raises(TraceError) as caught:
        read_trace(path, format="philly")
    assert "header does not fit format philly" in str(caught.value)
    assert read_trace(path, format="pollux").rows_read == 1


def test_unknown_format_name() -> None:
    with pytest.raises(TraceError, match="unknown trace format 'slurm'"):
        read_trace("whatever.csv", format="slurm")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        read_trace(tmp_path / "absent.csv")


def test_empty_file(write_file: WriteFile) -> None:
    with pytest.raises(TraceError, match="empty file"):
        read_trace(write_file("t.csv", ""))


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(b"job_id,submit_time,num_gpus\n\xff\xfe,1,1\n")
    with pytest.raises(TraceError, match="not UTF-8"):
        read_trace(path)


def test_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,num_gpus\na,0,1\n", encoding="utf-8-sig")
    assert read_trace(path).format == "canonical"


def test_blank_lines_are_skipped_and_lines_still_counted(write_file: WriteFile) -> None:
    text = "job_id,submit_time,num_gpus\n\na,0,1\n\n\nb,-1,1\n\n"
    result = read_trace(write_file("t.csv", text), skip_bad_rows=True)
    assert result.rows_read == 2
    assert [(e.line, e.field) for e in result.errors] == [(6, "submit_time")]


def test_quoted_field_spanning_lines_is_rejected_and_keeps_line_numbers(
    write_file: WriteFile,
) -> None:
    # No trace field holds a line break: a record spanning lines is an unclosed quote that
    # swallowed the rows after it, reported at the line it starts, never a silent loss.
    text = 'job_id,submit_time,num_gpus,job_name\na,0,1,"two\nc,1,1,n"\nb,x,1,n\nd,2,1,n\n'
    result = read_trace(write_file("t.csv", text), skip_bad_rows=True)
    assert [(e.line, e.field) for e in result.errors] == [(2, "(row)"), (4, "submit_time")]
    assert "runs on to line 3" in result.errors[0].reason
    assert [j.job_id for j in result.trace.jobs()] == ["d"]


def test_unclosed_quote_names_the_line_it_opens(write_file: WriteFile) -> None:
    text = 'job_id,submit_time,num_gpus,job_name\na,0,1,n\nb,1,1,"open\nc,2,1,n\n'
    with pytest.raises(TraceError, match=r"t\.csv:3: unreadable CSV: .*never closed"):
        read_trace(write_file("t.csv", text))
    text = 'job_id,submit_time,num_gpus,job_name\na,0,1,"x"y\n'
    with pytest.raises(TraceError, match=r"t\.csv:2: unreadable CSV"):
        read_trace(write_file("t.csv", text))


def test_times_beyond_the_limit_are_row_errors(write_file: WriteFile) -> None:
    text = "job_id,submit_time,num_gpus,duration\na,0,1,1e308\nb,2e10,1,5\nc,1e9,1,5\n"
    result = read_trace(write_file("t.csv", text), skip_bad_rows=True)
    assert [(e.line, e.field) for e in result.errors] == [(2, "duration"), (3, "submit_time")]
    assert "beyond the limit of 1e+10 s" in result.errors[0].reason
    assert "1e+308" in result.errors[0].reason
    assert [j.job_id for j in result.trace.jobs()] == ["c"]


def test_parquet_suffix_must_be_canonical(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="Parquet file is a canonical trace"):
        read_trace(tmp_path / "t.parquet", format="philly")


def test_canonical_csv_reads_every_column(write_file: WriteFile) -> None:
    text = (
        "job_id,submit_time,num_gpus,duration,user,vc,job_name,state,gpu_type,num_cpus,"
        "memory_mib,gpu_milli,application,batch_size,work,work_unit,start_time,end_time,num_nodes\n"
        "a,1.5,2,10,u,v,n,COMPLETED,V100,4,1024,1000,bert,64,300,iterations,2,12,1\n"
        "b,0,0,,,,,,,,,,,,,,,,\n"
    )
    result = read_trace(write_file("t.csv", text))
    second, first = result.trace.jobs()  # sorted by submit time: b (0) before a (1.5)
    assert second.job_id == "b" and second.num_gpus == 0 and second.duration is None
    assert first.job_id == "a" and first.work_unit == "iterations" and first.batch_size == 64
    assert (first.submit_time, first.start_time, first.end_time, first.num_nodes) == (1.5, 2, 12, 1)


def test_integers_must_fit_their_column(write_file: WriteFile) -> None:
    text = (
        "job_id,submit_time,num_gpus,batch_size\n"
        "a,0,1,1099511627776\n"
        "b,0,4294967296,1\n"
        "c,0,1e300,1\n"
    )
    result = read_trace(write_file("t.csv", text), skip_bad_rows=True)
    assert next(result.trace.jobs()).batch_size == 2**40
    assert [(e.line, e.field) for e in result.errors] == [(3, "num_gpus"), (4, "num_gpus")]
    assert all("out of range for a 32-bit integer" in e.reason for e in result.errors)
