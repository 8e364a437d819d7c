"""The validation report behind ``dlsched trace validate``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dlsched.trace import bundled_trace_path, render_reports, validate_files

WriteFile = Callable[[str, str], Path]


def test_reports_clean_bad_and_unreadable_files(write_file: WriteFile, tmp_path: Path) -> None:
    clean = bundled_trace_path("pollux_workload-6")
    bad = write_file("bad.csv", "job_id,submit_time,num_gpus\na,0,1\nb,-1,1\nc,x,1\nd,2,1\n")
    unknown = write_file("unknown.csv", "foo,bar\n1,2\n")
    missing = tmp_path / "missing.csv"
    reports = validate_files([clean, bad, unknown, missing])

    assert [r.ok for r in reports] == [True, False, False, False]
    assert (reports[0].format, reports[0].rows_read, reports[0].rows_accepted) == (
        "pollux",
        160,
        160,
    )
    assert (reports[1].format, reports[1].rows_read, reports[1].rows_accepted) == (
        "canonical",
        4,
        2,
    )
    assert [(e.line, e.field) for e in reports[1].errors] == [
        (3, "submit_time"),
        (4, "submit_time"),
    ]
    assert reports[2].problem is not None and "unrecognized header" in reports[2].problem
    assert reports[3].problem is not None and "no such file" in reports[3].problem

    text, ok = render_reports(reports)
    assert not ok
    lines = text.splitlines()
    assert lines[0] == f"{clean}: ok: format pollux, 160 rows read, 160 accepted, 0 rejected"
    assert f"{bad}: FAILED: format canonical, 4 rows read, 2 accepted, 2 rejected" in lines
    assert f"  {bad}:3: submit_time: negative submit time: -1" in lines
    assert f"  {bad}:4: submit_time: not a number: 'x'" in lines
    assert "known formats" in text


def test_header_problems_are_listed_and_errors_can_be_capped(write_file: WriteFile) -> None:
    missing_column = write_file("m.csv", "job_id,submit_time\n")
    many = write_file(
        "many.csv", "job_id,submit_time,num_gpus\n" + "".join(f"j{i},-1,1\n" for i in range(8))
    )
    reports = validate_files([missing_column, many])
    assert [(e.line, e.field) for e in reports[0].errors] == [(1, "num_gpus")]
    text, ok = render_reports(reports, max_errors=3)
    assert not ok
    assert f"  {missing_column}:1: num_gpus: required column missing (format canonical)" in text
    assert "  ... and 5 more" in text


def test_all_clean_is_ok() -> None:
    paths = [bundled_trace_path("vc_0e4a51"), bundled_trace_path("philly_jobs_2000")]
    text, ok = render_reports(validate_files(paths))
    assert ok and text.count(": ok: ") == 2


def test_forced_format_is_reported(write_file: WriteFile) -> None:
    path = write_file("t.csv", "name,time,application,num_replicas,batch_size\n")
    (report,) = validate_files([path], format="philly")
    assert not report.ok and report.format == "philly"
    assert report.problem is not None and "does not fit format philly" in report.problem
