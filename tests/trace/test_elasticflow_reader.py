"""The ElasticFlow reader: both layouts, every published file, the mapping of fields checked
against the raw CSV, detection, bad rows named by file, line and column, and generated files
that read back what they hold."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.trace import TraceError, bundled_trace_path, read_trace
from dlsched.trace.readers.elasticflow import MAX_ITERATIONS, MAX_MODEL_CHARS
from tests.fuzz.strategies import fuzz
from tests.trace.helpers import TRACES, requires_traces

WriteFile = Callable[[str, str], Path]

ELASTICFLOW = TRACES / "elasticflow" / "traces"
ITP_HEADER = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"
ARTIFACT_HEADER = "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration"
GENERATOR_HEADER = ARTIFACT_HEADER + ",best_effort"

ROWS = {
    "itp/cluster01.csv": 1_595,
    "itp/cluster02.csv": 5_778,
    "itp/cluster03.csv": 3_011,
    "itp/cluster04.csv": 15_802,
    "itp/cluster05.csv": 3_629,
    "itp/cluster06.csv": 2_396,
    "itp/cluster07.csv": 12_699,
    "itp/cluster08.csv": 13_047,
    "itp/cluster09.csv": 11_134,
    "itp/cluster10.csv": 260,
    "itp/195job.csv": 195,
    "artifact/elasticVpollux_e.csv": 195,
    "artifact/philly_103959.csv": 876,
    "artifact/resnet_cifar_trace.csv": 5,
    "generated/1000job_1500lam.csv": 1_000,
    "generated/100jobs_1500lam.csv": 100,
    "generated/200jobs_900lam_0.1.csv": 200,
    "generated/200jobs_900lam_0.5.csv": 200,
    "generated/200jobs_900lam_0.9.csv": 200,
}
BEST_EFFORT = {
    "generated/200jobs_900lam_0.1.csv": 22,
    "generated/200jobs_900lam_0.5.csv": 110,
    "generated/200jobs_900lam_0.9.csv": 179,
}


# ---------------------------------------------------------------- the published files


@requires_traces
def test_the_table_lists_every_published_file() -> None:
    found = {
        str(path.relative_to(ELASTICFLOW))
        for folder in ("itp", "artifact", "generated")
        for path in (ELASTICFLOW / folder).glob("*.csv")
    }
    assert found == set(ROWS)


@requires_traces
@pytest.mark.parametrize(("relative", "rows"), list(ROWS.items()))
def test_every_published_file_reads_without_a_rejected_row(relative: str, rows: int) -> None:
    result = read_trace(ELASTICFLOW / relative)
    assert (result.format, result.rows_read, len(result.trace), result.errors) == (
        "elasticflow",
        rows,
        rows,
        (),
    )
    table = result.trace.table
    assert set(table.column("kind").to_pylist()) == {"elastic"}
    assert set(table.column("work_unit").to_pylist()) == {"iterations"}
    assert all(a.startswith("elasticflow/") for a in table.column("application").to_pylist())
    assert table.column("deadline").null_count == BEST_EFFORT.get(relative, 0)
    assert read_trace(ELASTICFLOW / relative, format="elasticflow").rows_read == rows


def _raw_rows(relative: str) -> list[dict[str, str]]:
    with open(ELASTICFLOW / relative, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@requires_traces
@pytest.mark.parametrize(
    "relative",
    ["itp/cluster10.csv", "itp/195job.csv", "artifact/elasticVpollux_e.csv"],
)
def test_first_rows_map_as_documented(relative: str) -> None:
    jobs = {job.job_id: job for job in read_trace(ELASTICFLOW / relative).trace.jobs()}
    itp = relative.startswith("itp/")
    names = (
        ("submission_time", "num_iteration", "deadline")
        if itp
        else ("submit_time", "iteration", "ddl")
    )
    for raw in _raw_rows(relative)[:5]:
        job = jobs[raw["job_id"]]
        submit, iterations, deadline = (float(raw[name]) for name in names)
        assert job.submit_time == submit
        assert job.work == iterations and job.work_unit == "iterations"
        assert job.deadline == deadline
        assert job.num_gpus == int(raw["num_gpu"])
        assert job.batch_size == int(raw["batch_size"])
        assert job.duration == float(raw["duration"])
        assert job.application == "elasticflow/" + raw["model_name"]
        assert job.kind == "elastic"
        assert job.user is None and job.vc is None and job.max_gpus is None


@requires_traces
def test_cluster10_first_row_exactly() -> None:
    # 5dc7d9cd-c300-9a4f-c3cd-dc2cc0935548,2266647,6503,bert,2267101,128,16,604
    job = next(
        j
        for j in read_trace(ELASTICFLOW / "itp/cluster10.csv").trace.jobs()
        if j.job_id == "5dc7d9cd-c300-9a4f-c3cd-dc2cc0935548"
    )
    assert (job.submit_time, job.work, job.application, job.deadline) == (
        2266647.0,
        6503.0,
        "elasticflow/bert",
        2267101.0,
    )
    assert (job.batch_size, job.num_gpus, job.duration) == (128, 16, 604.0)


@requires_traces
def test_the_last_row_without_a_newline_is_read() -> None:
    path = ELASTICFLOW / "itp/cluster10.csv"
    assert not path.read_bytes().endswith(b"\n")
    last = _raw_rows("itp/cluster10.csv")[-1]
    ids = read_trace(path).trace.column("job_id").to_pylist()
    assert last["job_id"] in ids


@requires_traces
def test_philly_103959_reads_iteration_and_duration() -> None:
    # In this file they equal real_iteration and real_duration; a file where they differ is
    # read by its iteration and duration (test_both_layouts_are_detected_by_their_header).
    relative = "artifact/philly_103959.csv"
    raw = {row["job_id"]: row for row in _raw_rows(relative)}
    for job in read_trace(ELASTICFLOW / relative).trace.jobs():
        assert job.work == float(raw[job.job_id]["iteration"])
        assert job.duration == float(raw[job.job_id]["duration"])


@requires_traces
def test_best_effort_rows_have_no_deadline_and_the_others_keep_theirs() -> None:
    relative = "generated/200jobs_900lam_0.5.csv"
    raw = {row["job_id"]: row for row in _raw_rows(relative)}
    jobs = list(read_trace(ELASTICFLOW / relative).trace.jobs())
    assert sum(job.deadline is None for job in jobs) == 110
    for job in jobs:
        row = raw[job.job_id]
        if row["best_effort"] == "1":
            assert job.deadline is None
        else:
            assert job.deadline == float(row["ddl"])


@requires_traces
def test_itp_raw_is_not_taken_for_elasticflow() -> None:
    for path in sorted((ELASTICFLOW / "itp-raw").glob("*.csv")):
        with pytest.raises(TraceError, match="unrecognized header") as caught:
            read_trace(path)
        assert str(caught.value).startswith(f"{path}: unrecognized header")
        with pytest.raises(TraceError, match="header does not fit format elasticflow"):
            read_trace(path, format="elasticflow")


@requires_traces
def test_trace_validate_passes_every_published_file() -> None:
    paths = [str(ELASTICFLOW / relative) for relative in ROWS]
    result = CliRunner().invoke(app, ["trace", "validate", *paths])
    assert result.exit_code == 0, result.output
    assert result.output.count(": ok: format elasticflow") == len(ROWS)


def test_bundled_copies_read_in_both_layouts() -> None:
    be = read_trace(bundled_trace_path("elasticflow_200jobs_900lam_0.5")).trace
    assert be.column("deadline").null_count == 110
    pollux = read_trace(bundled_trace_path("elasticflow_elasticVpollux_e")).trace
    apps = set(pollux.column("application").to_pylist())
    assert apps == {
        f"elasticflow/{m}" for m in ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
    }


# ---------------------------------------------------------------- detection and headers


@pytest.mark.parametrize(
    "header",
    [
        ITP_HEADER,
        ARTIFACT_HEADER,
        GENERATOR_HEADER,
        "job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,real_duration,"
        "duration,iteration",
        # Any column order, spaces around names.
        "duration, num_gpu, batch_size, deadline, model_name, num_iteration, submission_time,"
        " job_id",
    ],
)
def test_both_layouts_are_detected_by_their_header(header: str, write_file: WriteFile) -> None:
    columns = [c.strip() for c in header.split(",")]
    values = {
        "job_id": "j",
        "submission_time": "10",
        "submit_time": "10",
        "num_iteration": "500",
        "iteration": "500",
        "real_iteration": "700",
        "model_name": "resnet50",
        "deadline": "200",
        "ddl": "200",
        "batch_size": "256",
        "num_gpu": "4",
        "duration": "100",
        "real_duration": "120",
        "best_effort": "0",
    }
    path = write_file("t.csv", header + "\n" + ",".join(values[c] for c in columns))
    result = read_trace(path)
    assert result.format == "elasticflow"
    job = next(result.trace.jobs())
    assert (job.submit_time, job.work, job.deadline, job.num_gpus, job.duration) == (
        10.0,
        500.0,
        200.0,
        4,
        100.0,
    )
    assert (job.application, job.batch_size, job.kind) == ("elasticflow/resnet50", 256, "elastic")


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        # A layout's column missing.
        (
            "job_id,submit_time,model_name,ddl,batch_size,num_gpu,duration",
            [(1, "iteration", "required column missing (format elasticflow)")],
        ),
        (
            "job_id,submission_time,num_iteration,model_name,batch_size,num_gpu,duration",
            [(1, "deadline", "required column missing (format elasticflow)")],
        ),
        # A shared column missing.
        (
            "job_id,submit_time,iteration,model_name,ddl,num_gpu,duration",
            [(1, "batch_size", "required column missing (format elasticflow)")],
        ),
        # The two layouts mixed: the closer one is expected, the other's column unexpected.
        (
            "job_id,submission_time,iteration,model_name,ddl,batch_size,num_gpu,duration",
            [
                (1, "submit_time", "required column missing (format elasticflow)"),
                (1, "submission_time", "unexpected column for format elasticflow"),
            ],
        ),
        (
            ARTIFACT_HEADER + ",deadline",
            [(1, "deadline", "unexpected column for format elasticflow")],
        ),
    ],
)
def test_header_problems_name_the_column_at_line_1(
    header: str, expected: list[tuple[int, str, str]], write_file: WriteFile
) -> None:
    path = write_file("t.csv", header + "\n")
    with pytest.raises(TraceError) as caught:
        read_trace(path, skip_bad_rows=True)
    assert [(e.line, e.field, e.reason) for e in caught.value.errors] == expected
    for line, field, reason in expected:
        assert f"{path}:{line}: {field}: {reason}" in str(caught.value)


def test_a_missing_column_is_one_error_whatever_the_number_of_rows(
    write_file: WriteFile,
) -> None:
    rows = "".join(f"j{i},{i},5,m,{i + 9},32,1,5\n" for i in range(50))
    path = write_file(
        "t.csv", "job_id,submit_time,model_name,ddl,batch_size,num_gpu,duration\n" + rows
    )
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    assert len(caught.value.errors) == 1


# ---------------------------------------------------------------- bad rows

BAD = f"""\
{GENERATOR_HEADER}
ok0,0,100,resnet50,50,64,1,20,0
nan,0,NaN,resnet50,50,64,1,20,0
neg,0,-5,resnet50,50,64,1,20,0
zero,0,0,resnet50,50,64,1,20,0
huge,0,1e13,resnet50,50,64,1,20,0
be2,0,100,resnet50,50,64,1,20,2
before,100,100,resnet50,40,64,1,20,0
equal,100,100,resnet50,100,64,1,20,0
space,0,100,res net,50,64,1,20,0
empty,0,100,,50,64,1,20,0
long,0,100,{"m" * (MAX_MODEL_CHARS + 1)},50,64,1,20,0
batch0,0,100,resnet50,50,0,1,20,0
gpu0,0,100,resnet50,50,64,0,20,0
gpuneg,0,100,resnet50,50,64,-1,20,0
negsub,-1,100,resnet50,50,64,1,20,0
farsub,2e10,100,resnet50,3e10,64,1,20,0
farddl,0,100,resnet50,2e10,64,1,20,0
infddl,0,100,resnet50,inf,64,1,20,0
negdur,0,100,resnet50,50,64,1,-20,0
be_half,0,100,resnet50,50,64,1,20,0.5
ok0,5,100,resnet50,50,64,1,20,0
short,0,100,resnet50,50,64,1,20
be1,100,100,resnet50,40,64,1,20,1
"""

BAD_ERRORS = [
    (3, "iteration", "not a finite number: 'NaN'"),
    (4, "iteration", "-5 iterations"),
    (5, "iteration", "0 iterations"),
    (6, "iteration", "10000000000000 iterations (a job runs more than 0 and at most 1e+12)"),
    (7, "best_effort", "expected 0 or 1, got '2'"),
    (8, "ddl", "deadline 40 s is not after submit 100 s"),
    (9, "ddl", "deadline 100 s is not after submit 100 s"),
    (10, "model_name", "not a model name"),
    (11, "model_name", "missing value"),
    (12, "model_name", "not a model name of up to 64 characters"),
    (13, "batch_size", "not a positive batch size: 0"),
    (14, "num_gpu", "0 GPUs (every ElasticFlow job is a GPU job)"),
    (15, "num_gpu", "negative GPU count: -1"),
    (16, "submit_time", "negative submit time: -1"),
    (17, "submit_time", "beyond the limit of 1e+10 s"),
    (18, "ddl", "beyond the limit of 1e+10 s"),
    (19, "ddl", "not a finite number: 'inf'"),
    (20, "duration", "negative duration: -20"),
    (21, "best_effort", "not an integer: '0.5'"),
    (22, "job_id", "duplicate job_id 'ok0' (first on line 2)"),
    (23, "(row)", "8 fields, the header has 9"),
]


def test_bad_rows_name_file_line_and_column(write_file: WriteFile) -> None:
    path = write_file("ef.csv", BAD)
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    message = str(caught.value)
    rows = sum(1 for line in BAD.splitlines()[1:] if line)
    assert message.startswith(f"{path}: {len(BAD_ERRORS)} of {rows} rows rejected")
    errors = caught.value.errors
    assert [(e.line, e.field) for e in errors] == [(line, field) for line, field, _ in BAD_ERRORS]
    for error, (line, field, reason) in zip(errors, BAD_ERRORS, strict=True):
        assert reason in error.reason, (line, error.reason)
        assert "\n" not in str(error)
        assert str(error).startswith(f"{path}:{line}: {field}: ")


def test_skip_bad_rows_keeps_the_good_ones(write_file: WriteFile) -> None:
    result = read_trace(write_file("ef.csv", BAD), skip_bad_rows=True)
    jobs = {job.job_id: job for job in result.trace.jobs()}
    assert set(jobs) == {"ok0", "be1"}
    assert jobs["ok0"].submit_time == 0.0 and jobs["ok0"].deadline == 50.0
    # A best-effort job has no deadline, so a ddl before its submission is not an error.
    assert jobs["be1"].deadline is None


@pytest.mark.parametrize(
    ("row", "field", "reason"),
    [
        ("a,0,nan,bert,50,64,1,20", "num_iteration", "not a finite number"),
        ("a,0,-1,bert,50,64,1,20", "num_iteration", "-1 iterations"),
        ("a,100,5,bert,100,64,1,20", "deadline", "not after submit 100 s"),
        ("a,-3,5,bert,100,64,1,20", "submission_time", "negative submit time: -3"),
        ("a,2e10,5,bert,3e10,64,1,20", "submission_time", "beyond the limit"),
        ("a,0,5,bert,50,64,1.5,20", "num_gpu", "not an integer: '1.5'"),
        ("a,0,5,bert/x,50,64,1,20", "model_name", "not a model name"),
        ("a,0,5,bert," + "9" * 200 + ",64,1,20", "deadline", "a number of 200 characters"),
    ],
)
def test_itp_errors_name_the_itp_columns(
    row: str, field: str, reason: str, write_file: WriteFile
) -> None:
    path = write_file("itp.csv", ITP_HEADER + "\n" + row)
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    (error,) = caught.value.errors
    assert (error.line, error.field) == (2, field)
    assert reason in error.reason
    assert f"{path}:2: {field}: " in str(caught.value)


# ---------------------------------------------------------------- generated files


@st.composite
def elasticflow_rows(draw: st.DrawFn) -> tuple[bool, list[dict[str, str]]]:
    """A layout and valid rows of it (values as the CSV writes them)."""
    itp = draw(st.booleans())
    rows = []
    for i in range(draw(st.integers(0, 12))):
        submit = draw(st.integers(0, 10**8))
        duration = draw(st.integers(1, 10**6))
        slack = draw(st.integers(1, 10**6))
        rows.append(
            {
                "job_id": f"j{i}",
                "submit": str(submit),
                "iterations": draw(
                    st.one_of(st.integers(1, 10**9).map(str), st.just(f"{MAX_ITERATIONS:g}"))
                ),
                "model_name": draw(st.from_regex(r"[A-Za-z0-9_.-]{1,16}", fullmatch=True)),
                "deadline": str(submit + slack),
                "batch_size": str(draw(st.integers(1, 2**20))),
                "num_gpu": str(draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))),
                "duration": str(duration),
                "best_effort": "0" if itp else draw(st.sampled_from(["0", "1"])),
            }
        )
    return itp, rows


@fuzz(150)
@given(drawn=elasticflow_rows(), trailing_newline=st.booleans())
def test_generated_files_read_back_what_they_hold(
    tmp_path_factory: pytest.TempPathFactory,
    drawn: tuple[bool, list[dict[str, str]]],
    trailing_newline: bool,
) -> None:
    itp, rows = drawn
    lines = [ITP_HEADER if itp else GENERATOR_HEADER]
    for r in rows:
        fields = [r["job_id"], r["submit"], r["iterations"], r["model_name"], r["deadline"]]
        fields += [r["batch_size"], r["num_gpu"], r["duration"]]
        lines.append(",".join(fields if itp else [*fields, r["best_effort"]]))
    path = tmp_path_factory.mktemp("ef") / "t.csv"
    path.write_text("\n".join(lines) + ("\n" if trailing_newline else ""), encoding="utf-8")
    result = read_trace(path)
    assert (result.format, result.rows_read, result.errors) == ("elasticflow", len(rows), ())
    jobs = {job.job_id: job for job in result.trace.jobs()}
    for r in rows:
        job = jobs[r["job_id"]]
        assert job.submit_time == float(r["submit"])
        assert job.work == float(r["iterations"]) and math.isfinite(job.work)
        assert job.application == "elasticflow/" + r["model_name"]
        assert job.num_gpus == int(r["num_gpu"]) and job.batch_size == int(r["batch_size"])
        assert job.duration == float(r["duration"])
        expected = None if r["best_effort"] == "1" else float(r["deadline"])
        assert job.deadline == expected
