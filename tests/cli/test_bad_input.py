"""What the ``dlsched`` command does with bad input: every problem is named (file, line, field,
the valid choices), the exit status says it failed, and no partial or stale output is left."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow
import pyarrow.parquet
import pytest
from typer.testing import CliRunner, Result

from dlsched.cli.main import app
from dlsched.cluster.builtin import list_builtin_clusters
from dlsched.placement.registry import placers
from dlsched.sim.groups import policy_catalog
from dlsched.trace.bundled import bundled_trace_path

HEADER = "job_id,submit_time,submit_s,duration_s,num_gpus,gpu_time_s,vc\n"
# Lines 2 and 7 are good; 3-6 each break one rule.
MALFORMED = HEADER + (
    "1,2017-10-01 00:00:00,0,100,1,100,0e4a51\n"
    "2,yesterday,10,100,1,100,0e4a51\n"  # line 3: garbage time
    "3,2017-10-01 00:01:00,60,-5,1,-5,0e4a51\n"  # line 4: negative duration
    "4,2017-10-01 00:02:00,120,100,,100,0e4a51\n"  # line 5: num_gpus missing
    "5,2017-10-01 00:02:30,150,100,1,100\n"  # line 6: the vc column is missing
    "6,2017-10-01 00:03:00,180,100,2,200,0e4a51\n"
)
EXPECTED_ERRORS = (
    (3, "submit_time", "yesterday"),
    (4, "duration_s", "negative duration"),
    (5, "num_gpus", "missing value"),
    (6, "(row)", "6 fields, the header has 7"),
)
RUN_FILES = {"jobs.parquet", "timeline.parquet", "config.json", "summary.json"}
SMALL_TRACE = HEADER + "".join(
    f"{i},2017-10-01 00:0{i}:00,{60 * i},{100 + 10 * i},{1 + i % 2},{(100 + 10 * i) * (1 + i % 2)},"
    "0e4a51\n"
    for i in range(6)
)


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def summary_of(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "summary.json").read_text())
    return data


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    def write_file(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write_file


@pytest.fixture
def small_run(tmp_path: Path, write: Callable[[str, str], Path]) -> Path:
    """A valid run directory of a six-job trace."""
    trace = write("small.csv", SMALL_TRACE)
    out = tmp_path / "runs" / "small"
    result = invoke("simulate", "--trace", trace, "--cluster", "philly-vcs", "--out", out)
    assert result.exit_code == 0, result.output
    assert summary_of(out)["jobs"] == 6
    return out


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


# ---- malformed traces ------------------------------------------------------------------------


def test_validate_names_file_line_and_field_of_each_bad_row(
    write: Callable[[str, str], Path],
) -> None:
    bad = write("bad.csv", MALFORMED)
    no_vc = write("no_vc.csv", HEADER.replace(",vc", "") + "1,2017-10-01 00:00:00,0,100,1,100\n")
    good = write("good.csv", SMALL_TRACE)
    result = invoke("trace", "validate", bad, no_vc, good)
    assert result.exit_code == 1, result.output
    out = result.output
    assert f"{bad}: FAILED: format philly, 6 rows read, 2 accepted, 4 rejected" in out
    for line, field, reason in EXPECTED_ERRORS:
        assert f"{bad}:{line}: {field}: " in out
        error_line = next(x for x in out.splitlines() if f"{bad}:{line}: " in x)
        assert reason in error_line
    assert f"{bad}:2:" not in out and f"{bad}:7:" not in out
    # A missing header column rejects the whole file, named at line 1.
    assert f"{no_vc}: FAILED" in out
    assert f"{no_vc}:1: vc: required column missing" in out
    assert f"{good}: ok: format philly, 6 rows read, 6 accepted, 0 rejected" in out


def test_validate_clean_file_exits_zero(write: Callable[[str, str], Path]) -> None:
    result = invoke("trace", "validate", write("good.csv", SMALL_TRACE))
    assert result.exit_code == 0, result.output
    assert "ok" in result.output


def test_simulate_on_malformed_trace_fails_with_the_lines(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    bad = write("bad.csv", MALFORMED)
    out = tmp_path / "runs" / "bad"
    result = invoke("simulate", "--trace", bad, "--cluster", "philly-vcs", "--out", out)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # a message, not a traceback
    err = result.stderr
    assert f"error: {bad}: 4 of 6 rows rejected" in err
    for line, field, _ in EXPECTED_ERRORS:
        assert f"{bad}:{line}: {field}: " in err  # whole, on one line, even for long paths
    assert "--skip-bad-rows" in err
    assert not out.exists()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_skip_bad_rows_runs_the_good_ones_and_reports_the_count(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    bad = write("bad.csv", MALFORMED)
    out = tmp_path / "run"
    result = invoke(
        "simulate", "--trace", bad, "--cluster", "philly-vcs", "--out", out, "--skip-bad-rows"
    )
    assert result.exit_code == 0, result.output
    assert f"skipped 4 bad rows of {bad}" in result.stderr
    assert f"{bad}:3: submit_time" in result.stderr  # the first one, as an example
    s = summary_of(out)
    assert (s["jobs"], s["jobs_in_trace"]) == (2, 2)
    assert json.loads((out / "config.json").read_text())["skip_bad_rows"] is True


def test_convert_malformed_trace_hints_at_skip_bad_rows(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    bad = write("bad.csv", MALFORMED)
    out = tmp_path / "bad.parquet"
    result = invoke("trace", "convert", bad, "--out", out)
    assert result.exit_code == 2
    assert f"{bad}:4: duration_s" in result.stderr and "--skip-bad-rows" in result.stderr
    assert not out.exists()
    result = invoke("trace", "convert", bad, "--out", out, "--skip-bad-rows")
    assert result.exit_code == 0, result.output
    assert "6 rows read, 4 rejected, 2 written" in result.output
    assert "skipped 4 bad rows" in result.stderr


def test_error_text_is_printed_verbatim(tmp_path: Path, write: Callable[[str, str], Path]) -> None:
    """Messages quote user text and format descriptions with square brackets; they must not be
    read as rich markup (``[optional: gpu_time_s]`` used to vanish) nor be re-wrapped."""
    trace = write("nofmt.csv", "job_id,submit_time,num_gpus_x\n1,0,1\n")
    result = invoke(
        "simulate", "--trace", trace, "--cluster", "philly-vcs", "--out", tmp_path / "r"
    )
    assert result.exit_code == 2
    assert f"error: {trace}: unrecognized header" in result.stderr
    assert "[optional: gpu_time_s]" in result.stderr
    philly_line = next(x for x in result.stderr.splitlines() if x.strip().startswith("philly "))
    assert philly_line.endswith("[optional: gpu_time_s]")


# ---- unknown names -----------------------------------------------------------------------

POLICY_NAMES = {name for name, _, _ in policy_catalog()}


def test_a_misspelt_name_is_reported_before_the_trace_is_read(tmp_path: Path) -> None:
    # The trace does not exist: had it been read first, that would be the error.
    for option, value in (("--policy", "tiresas"), ("--estimator", "lgmb")):
        result = invoke("simulate", "--trace", tmp_path / "missing.csv", "--cluster", "32x8",
                        option, value, "--out", tmp_path / "run")  # fmt: skip
        assert result.exit_code == 2, result.output
        assert f"{option}: unknown" in result.stderr and "did you mean" in result.stderr


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        (
            "--policy",
            "lifo",
            ("unknown policy 'lifo'; did you mean 'fifo'?", ", ".join(sorted(POLICY_NAMES))),
        ),
        (
            "--placement",
            "packed",
            ("unknown placement 'packed'; did you mean 'pack'?", ", ".join(sorted(placers()))),
        ),
        (
            "--cluster",
            "phily-vcs",
            (
                "cannot resolve cluster 'phily-vcs'",
                ", ".join(list_builtin_clusters()),
                "did you mean 'philly-vcs'?",
            ),
        ),
    ],
)
def test_unknown_names_list_the_valid_ones(
    tmp_path: Path, option: str, value: str, expected: tuple[str, ...]
) -> None:
    args = {"--policy": "fifo", "--placement": "consolidate", "--cluster": "32x8", option: value}
    out = tmp_path / "run"
    trace = bundled_trace_path("vc_0e4a51")
    result = invoke("simulate", "--trace", trace, *[x for kv in args.items() for x in kv],
                    "--out", out)  # fmt: skip
    assert result.exit_code == 2, result.output
    for text in expected:
        assert text in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("shorthand", "token", "reason"),
    [
        ("32x8,v100:4xq", "group 'v100:4xq'", "GPUS 'q' is not a decimal integer"),
        ("32x8,16y4", "group '16y4'", "missing 'x' between COUNT and GPUS"),
        ("32x8,,4x4", "group ''", "empty group"),
        ("0x8", "group '0x8'", "COUNT must be >= 1"),
    ],
)
def test_bad_cluster_shorthand_names_the_token(
    tmp_path: Path, shorthand: str, token: str, reason: str
) -> None:
    trace = bundled_trace_path("vc_0e4a51")
    result = invoke("simulate", "--trace", trace, "--cluster", shorthand, "--out", tmp_path / "r")
    assert result.exit_code == 2
    assert f"{token}: {reason}" in result.stderr
    assert "[TYPE:]COUNTxGPUS" in result.stderr  # the grammar, for the fix


def test_policy_options_are_checked(tmp_path: Path) -> None:
    trace = bundled_trace_path("vc_0e4a51")
    base = ("simulate", "--trace", trace, "--cluster", "32x8", "--policy", "tiresias")
    result = invoke(*base, "--policy-opt", "bogus=1", "--out", tmp_path / "a")
    assert result.exit_code == 2 and "unknown option(s) bogus of 'tiresias'" in result.stderr
    assert "[" not in result.stderr  # names as text, not a Python list
    assert "thresholds" in result.stderr  # the known options
    result = invoke(*base, "--policy-opt", "thresholds", "--out", tmp_path / "b")
    assert result.exit_code == 2 and "KEY=VALUE" in result.stderr
    result = invoke(*base, "--policy-opt", "thresholds=9,3", "--out", tmp_path / "c")
    assert result.exit_code == 2 and "increasing" in result.stderr
    result = invoke(*base, "--backfill", "--out", tmp_path / "d")
    assert result.exit_code == 2
    assert "--backfill does not apply to policy 'tiresias'" in result.stderr
    able = result.stderr.split("policies that backfill: ")[1].strip().split(", ")
    assert {"fifo", "sjf"} <= set(able) and "tiresias" not in able
    assert not any((tmp_path / name).exists() for name in "abcd")


@pytest.mark.parametrize(
    ("policy", "extra", "message"),
    [
        ("pollux", ("--backfill",), "--backfill does not apply to policy 'pollux'"),
        ("fifo", ("--estimator", "history"), "--estimator history: no policy of this run"),
        ("fifo", ("--wake-latency", "10"), "--wake-latency: needs --power-manager"),
        ("fifo", ("--power-opt", "buffer=1"), "--power-opt: needs --power-manager"),
        ("pollux", ("--placement", "pack"), "--placement pack: policy pollux places its jobs"),
    ],
)
def test_options_a_run_cannot_honour_are_refused(
    tmp_path: Path, policy: str, extra: tuple[str, ...], message: str
) -> None:
    trace = bundled_trace_path("pollux_workload-6" if policy == "pollux" else "vc_0e4a51")
    cluster = "pollux" if policy == "pollux" else "32x8"
    result = invoke(
        "simulate", "--trace", trace, "--cluster", cluster, "--policy", policy, *extra,
        "--out", tmp_path / "run",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


# ---- compare -----------------------------------------------------------------------------


def test_compare_names_a_directory_that_is_not_a_run(tmp_path: Path, small_run: Path) -> None:
    not_run = tmp_path / "notes"
    not_run.mkdir()
    result = invoke("compare", small_run, not_run)
    assert result.exit_code == 2
    assert f"{not_run}: not a dlsched run directory" in result.stderr
    missing = tmp_path / "nowhere"
    result = invoke("compare", small_run, missing)
    assert result.exit_code == 2 and str(missing) in result.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "summary.json").write_text("{not json")
    result = invoke("compare", small_run, broken)
    assert result.exit_code == 2
    assert f"{broken / 'summary.json'}:1: not JSON" in result.stderr


# ---- replacing a run -----------------------------------------------------------------------


def test_rewriting_a_run_needs_force(tmp_path: Path, small_run: Path) -> None:
    trace = tmp_path / "small.csv"
    args = ("simulate", "--trace", trace, "--cluster", "philly-vcs", "--policy", "sjf")
    before = snapshot(small_run)
    refused = invoke(*args, "--out", small_run)
    assert refused.exit_code == 2
    assert f"{small_run}: already exists (run directory); pass --force" in refused.stderr
    assert snapshot(small_run) == before
    result = invoke(*args, "--out", small_run, "--force")
    assert result.exit_code == 0, result.output
    assert summary_of(small_run)["policy"] == "sjf"
    assert sorted(p.name for p in small_run.parent.iterdir()) == ["small"]  # no leftovers


def test_failed_rewrite_leaves_the_old_run_intact(
    tmp_path: Path, small_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(small_run)
    real_write = pyarrow.parquet.write_table
    calls: list[tuple[Any, ...]] = []

    def failing_write(*args: Any, **kwargs: Any) -> None:
        calls.append(args)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_write(*args, **kwargs)

    monkeypatch.setattr(pyarrow.parquet, "write_table", failing_write)
    trace = tmp_path / "small.csv"
    result = invoke(
        "simulate",
        "--trace",
        trace,
        "--cluster",
        "philly-vcs",
        "--policy",
        "sjf",
        "--out",
        small_run,
        "--force",
    )
    assert len(calls) == 2, "the failure must hit the run being written"
    assert result.exit_code == 2
    assert result.stderr == "error: No space left on device\n"  # one line, no traceback
    assert snapshot(small_run) == before
    assert summary_of(small_run)["policy"] == "fifo"
    assert sorted(p.name for p in small_run.parent.iterdir()) == ["small"]  # no temp left


def test_failure_between_the_renames_keeps_the_old_run(
    tmp_path: Path, small_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old run is moved aside before the new one is renamed into place: if that rename
    fails, the old run must be put back."""
    before = snapshot(small_run)
    real_replace = os.replace
    calls: list[tuple[Any, ...]] = []

    def failing_replace(src: Any, dst: Any) -> None:
        calls.append((src, dst))
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    trace = tmp_path / "small.csv"
    result = invoke(
        "simulate",
        "--trace",
        trace,
        "--cluster",
        "philly-vcs",
        "--policy",
        "sjf",
        "--out",
        small_run,
        "--force",
    )
    assert len(calls) >= 2 and Path(calls[1][1]) == small_run, "must fail the swap of the runs"
    assert result.exit_code == 2 and "Input/output error" in result.stderr
    assert small_run.is_dir() and snapshot(small_run) == before
    assert sorted(p.name for p in small_run.parent.iterdir()) == ["small"]  # no temp left


def test_out_that_is_not_a_run_is_never_replaced(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    """Writing a run replaces what is at --out: a directory of other files (here, a thesis) or
    a file must be refused, not deleted."""
    trace = write("small.csv", SMALL_TRACE)
    precious = tmp_path / "results"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    result = invoke("simulate", "--trace", trace, "--cluster", "philly-vcs", "--out", precious)
    assert result.exit_code == 2
    assert f"{precious}: exists and is not a dlsched run directory" in result.stderr
    assert (precious / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in precious.iterdir()) == ["thesis.tex"]
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep")
    result = invoke("simulate", "--trace", trace, "--cluster", "philly-vcs", "--out", a_file)
    assert result.exit_code == 2 and a_file.read_text() == "keep"
    result = invoke("demo", "--out", tmp_path)  # tmp_path/fifo etc. do not exist: fine
    assert result.exit_code == 0, result.output
    (tmp_path / "sjf" / "mine.txt").write_text("keep")
    result = invoke("demo", "--out", tmp_path, "--force")
    assert result.exit_code == 2 and "holds mine.txt" in result.stderr
    assert (tmp_path / "sjf" / "mine.txt").read_text() == "keep"
    # An empty directory may become a run.
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("simulate", "--trace", trace, "--cluster", "philly-vcs", "--out", empty)
    assert result.exit_code == 0, result.output
    assert {p.name for p in empty.iterdir()} == RUN_FILES


def test_library_write_run_refuses_to_replace_a_directory_that_is_not_a_run(
    tmp_path: Path,
) -> None:
    from dlsched.metrics.rundir import RunDirError, write_run

    precious = tmp_path / "thesis"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(RunDirError, match=r"thesis\.tex"):
        write_run(precious, pyarrow.table({"a": [1]}), pyarrow.table({"b": [2]}), {}, {})
    assert (precious / "thesis.tex").read_text() == "years of work"


# ---- small defects of the first hour (issue #31) ------------------------------------------


def test_an_unknown_trace_format_is_a_mistake_in_the_command(tmp_path: Path) -> None:
    trace = bundled_trace_path("philly_jobs_2000")
    for argv in (
        ["trace", "validate", trace, "--format", "bogus"],
        ["trace", "convert", trace, "--format", "bogus", "--out", tmp_path / "x.parquet"],
        ["simulate", "--trace", trace, "--cluster", "philly-vcs", "--format", "bogus",
         "--out", tmp_path / "run"],
    ):  # fmt: skip
        result = invoke(*argv)
        assert result.exit_code == 2, (argv, result.output)
        assert "unknown trace format 'bogus'" in result.stderr
    assert not any(tmp_path.iterdir())


def test_trace_convert_writes_only_a_parquet_name(tmp_path: Path) -> None:
    trace = bundled_trace_path("philly_jobs_2000")
    result = invoke("trace", "convert", trace, "--out", tmp_path / "x.csv")
    assert result.exit_code == 2 and "name the output .parquet" in result.stderr
    assert not (tmp_path / "x.csv").exists()


def test_a_header_only_trace_fails_validation_and_is_not_simulated(tmp_path: Path) -> None:
    header = bundled_trace_path("philly_jobs_2000").read_text().splitlines()[0]
    empty = tmp_path / "empty.csv"
    empty.write_text(header + "\n")
    checked = invoke("trace", "validate", empty)
    assert checked.exit_code == 1 and "FAILED: no job rows" in checked.output
    ran = invoke("simulate", "--trace", empty, "--cluster", "philly-vcs", "--out", tmp_path / "r")
    assert ran.exit_code == 2 and "no job rows (the file holds a header only)" in ran.stderr
    converted = invoke("trace", "convert", empty, "--out", tmp_path / "e.parquet")
    assert converted.exit_code == 2 and not (tmp_path / "e.parquet").exists()


@pytest.mark.parametrize(
    ("option", "value"), [("--mtbf", "0"), ("--mttr", "-5"), ("--mtbf", "nan")]
)
def test_fault_times_name_their_option(tmp_path: Path, option: str, value: str) -> None:
    trace = bundled_trace_path("philly_jobs_2000")
    extra = [] if option == "--mtbf" else ["--mtbf", "86400"]
    result = invoke("simulate", "--trace", trace, "--cluster", "philly-vcs", option, value,
                    *extra, "--out", tmp_path / "r")  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {option} must be a positive number")
    assert result.stderr.count("\n") == 1


def test_a_date_window_may_be_open_on_one_side(tmp_path: Path) -> None:
    # The bundled Philly slice runs 2017-09-04 .. 2017-09-26.
    trace = bundled_trace_path("philly_jobs_2000")
    base = ["simulate", "--trace", trace, "--cluster", "philly-vcs", "--no-progress"]
    late = invoke(*base, "--start", "2017-09-20", "--out", tmp_path / "late")
    early = invoke(*base, "--end", "2017-09-20", "--out", tmp_path / "early")
    assert late.exit_code == 0 and early.exit_code == 0, late.output + early.output
    jobs = [json.loads((tmp_path / d / "summary.json").read_text())["jobs_in_trace"]
            for d in ("late", "early")]  # fmt: skip
    assert sum(jobs) == 2000 and min(jobs) > 0
