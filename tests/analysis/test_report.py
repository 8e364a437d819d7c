"""The report directory on real and Helios-format traces: files, figures, stats and the CLI.

Fast tests use the slices bundled in ``dlsched/data/traces`` and a generated Helios-format
trace; the full Philly and Alibaba files are marked slow.
"""

from __future__ import annotations

import csv
import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from dlsched.analysis.characterize import characterize
from dlsched.analysis.report import (
    INDEX,
    REPORT_FILES,
    SECTIONS,
    STATS,
    ReportDirError,
    TraceInput,
    write_report,
)
from dlsched.cli.analyze_cmd import analyze
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from tests.analysis.helios_csv import HeliosTrace, write_helios_csv
from tests.trace.helpers import TRACES, requires_traces

ALL_SECTIONS = tuple(attr for attr, _, _ in SECTIONS)
MIN_FIGURE_BYTES = 15_000


@dataclass(frozen=True)
class Case:
    """A trace file, the CSV column holding GPUs per job, and the sections it must support."""

    path: Path
    gpu_column: str
    available: frozenset[str]


def bundled(name: str, gpu_column: str, *available: str) -> Case:
    return Case(bundled_trace_path(name), gpu_column, frozenset(available))


CASES = {
    "philly": bundled(
        "philly_jobs_2000",
        "num_gpus",
        "durations",
        "gpu_demand",
        "submissions",
        "cluster_demand",
        "vcs",
    ),
    "alibaba": bundled(
        "openb_pod_list_default_500",
        "num_gpu",
        "durations",
        "gpu_demand",
        "states",
        "queueing",
        "cluster_demand",
    ),
    "pollux": bundled("pollux_workload-6", "num_replicas", "gpu_demand"),
    "gavel-philly": bundled("vc_0e4a51", "gpu_num", "durations", "gpu_demand", "cluster_demand"),
}


def cli_app() -> typer.Typer:
    """The command as the lead registers it, in an app of its own."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(analyze)
    app.command("version")(lambda: None)  # a second command keeps "analyze" a subcommand
    return app


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(cli_app(), ["analyze", *args])


def gpu_jobs_in_csv(path: Path, column: str) -> tuple[int, int]:
    """(data rows, rows asking for > 0 GPUs), counted from the CSV text itself."""
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return len(rows), sum(1 for r in rows if int(r[column]) > 0)


def load_stats(out: Path) -> dict[str, Any]:
    def refuse(name: str) -> None:
        raise AssertionError(f"stats.json holds {name}")

    data: dict[str, Any] = json.loads((out / STATS).read_text(), parse_constant=refuse)
    return data


def assert_real_picture(path: Path) -> None:
    """A PNG of some size that is not blank: its pixels vary and many are not white."""
    assert path.stat().st_size > MIN_FIGURE_BYTES, path
    pixels = np.asarray(mpimg.imread(path))[..., :3]
    assert pixels.shape[0] > 200 and pixels.shape[1] > 400
    assert float(pixels.std()) > 0.05, f"{path} looks blank"
    inked = (pixels < 0.9).any(axis=-1).mean()
    assert inked > 0.02, f"{path}: only {inked:.1%} of pixels are drawn"


def check_report(out: Path, available: frozenset[str]) -> dict[str, Any]:
    """Every file is there, figures are real pictures, and sections match ``available``."""
    stats = load_stats(out)
    page = (out / INDEX).read_text()
    sections = stats["sections"]
    assert set(sections) == set(ALL_SECTIONS)
    figures = set()
    for attr, heading, filename in SECTIONS:
        assert f'id="{attr}"' in page and heading in page
        entry = sections[attr]
        assert entry["available"] == (attr in available), (attr, entry)
        if not entry["available"]:
            assert entry["reason"] in page
        elif filename:
            assert_real_picture(out / filename)
            assert f'src="{filename}"' in page
            figures.add(filename)
    on_disk = {p.name for p in out.iterdir()}
    assert on_disk == {INDEX, STATS} | figures
    assert on_disk <= REPORT_FILES
    return stats


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_on_bundled_traces(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    out = tmp_path / "report"
    result = run_cli(str(case.path), "--out", str(out))
    assert result.exit_code == 0, result.output
    stats = check_report(out, case.available)
    rows, gpu_jobs = gpu_jobs_in_csv(case.path, case.gpu_column)
    assert stats["input"]["rows_read"] == rows
    assert stats["input"]["rows_rejected"] == 0
    assert stats["input"]["jobs"] == rows
    assert stats["input"]["gpu_jobs"] == gpu_jobs
    assert f"{rows:,} rows read" in result.output


@dataclass(frozen=True)
class HeliosReport:
    trace: HeliosTrace
    out: Path
    output: str


@pytest.fixture(scope="module")
def helios_report(tmp_path_factory: pytest.TempPathFactory) -> HeliosReport:
    """One report on a generated Helios-format trace, shared by the tests that read it."""
    folder = tmp_path_factory.mktemp("helios")
    trace = write_helios_csv(folder / "cluster_log.csv")
    out = folder / "report"
    result = run_cli(str(trace.path), "--out", str(out), "--cluster", "16x8")
    assert result.exit_code == 0, result.output
    return HeliosReport(trace, out, result.output)


def test_report_on_helios_format(helios_report: HeliosReport) -> None:
    helios = helios_report.trace
    stats = check_report(helios_report.out, frozenset(ALL_SECTIONS))
    assert stats["input"]["format"] == "helios"
    assert stats["input"]["rows_read"] == helios.jobs
    assert stats["input"]["gpu_jobs"] == helios.gpu_jobs
    sections = stats["sections"]
    assert sections["users"]["users"] == helios.gpu_users
    assert stats["overview"]["users"] == helios.users
    assert sections["cluster_demand"]["capacity_gpus"] == 128
    assert 0 < sections["recurrence"]["share_recurrent"] < 1
    assert {r["state"] for r in sections["states"]["rows"]} == {
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
    }
    assert "not available" not in helios_report.output


def test_stats_hold_what_the_page_shows(helios_report: HeliosReport) -> None:
    stats = load_stats(helios_report.out)
    page = (helios_report.out / INDEX).read_text()
    durations = stats["sections"]["durations"]
    assert len(stats["cdf_probabilities"]) == len(durations["curves"]["all jobs"]["quantiles"])
    for label, curve in durations["curves"].items():
        assert f"<td>{html.escape(label)}</td><td>{curve['count']:,}</td>" in page
    for top in stats["sections"]["users"]["top"]:
        assert f"{100 * top['share_gpu_time']:.1f}%" in page
    for row in stats["sections"]["vcs"]["rows"]:
        cells = [row["vc"], f"{row['jobs']:,}", f"{100 * row['share_jobs']:.1f}%"]
        assert "<td>" + "</td><td>".join(cells) + "</td>" in page
    for row in stats["sections"]["states"]["rows"]:
        assert f"<td>{row['state']}</td><td>{row['jobs']:,}</td>" in page


def test_sections_without_their_fields_are_marked_unavailable(tmp_path: Path) -> None:
    trace = tmp_path / "bare.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,30\nb,10,4,7200\nc,20,0,5\n")
    out = tmp_path / "report"
    result = run_cli(str(trace), "--out", str(out))
    assert result.exit_code == 0, result.output
    check_report(out, frozenset({"durations", "gpu_demand", "cluster_demand"}))
    page = (out / INDEX).read_text()
    for reason in (
        "the trace has no users (user)",
        "the trace has no final states (state)",
        "the trace has no wall-clock times",
        "the trace has no original start times (start_time)",
        "the trace has no virtual clusters (vc)",
    ):
        assert f"Not available: {reason}" in page
    assert "not available: states" in result.output


def test_report_replaces_an_earlier_report_with_force(tmp_path: Path) -> None:
    out = tmp_path / "report"
    gavel = str(CASES["gavel-philly"].path)
    assert run_cli(gavel, "--out", str(out)).exit_code == 0
    pollux = CASES["pollux"]
    refused = run_cli(str(pollux.path), "--out", str(out))
    assert refused.exit_code == 2 and "already exists (report directory)" in refused.output
    assert run_cli(str(pollux.path), "--out", str(out), "--force").exit_code == 0
    check_report(out, pollux.available)
    assert [p.name for p in tmp_path.iterdir()] == ["report"]


def test_refuses_to_replace_other_directories_and_files(tmp_path: Path) -> None:
    trace = read_trace(CASES["pollux"].path).trace
    source = TraceInput("x", "pollux", len(trace), 0)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("keep me")
    with pytest.raises(ReportDirError, match=r"thesis\.tex"):
        write_report(busy, characterize(trace), source)
    assert (busy / "thesis.tex").read_text() == "keep me"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    result = run_cli(str(CASES["pollux"].path), "--out", str(a_file))
    assert result.exit_code == 2
    assert "refusing to replace" in result.output


def test_cli_reports_bad_input(tmp_path: Path) -> None:
    pollux = str(CASES["pollux"].path)
    bad_cluster = run_cli(pollux, "--out", str(tmp_path / "r"), "--cluster", "nonsense")
    assert bad_cluster.exit_code == 2 and "cannot resolve cluster" in bad_cluster.output
    missing = run_cli(str(tmp_path / "none.csv"), "--out", str(tmp_path / "r"))
    assert missing.exit_code == 2 and "no such file" in missing.output
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit_time,num_gpus,duration\na,0,1,30\nb,x,1,5\n")
    strict = run_cli(str(bad), "--out", str(tmp_path / "r"))
    assert strict.exit_code == 2 and "--skip-bad-rows" in strict.output
    assert not (tmp_path / "r").exists()
    lenient = run_cli(str(bad), "--out", str(tmp_path / "r"), "--skip-bad-rows")
    assert lenient.exit_code == 0, lenient.output
    stats = load_stats(tmp_path / "r")
    assert (stats["input"]["rows_read"], stats["input"]["rows_rejected"]) == (2, 1)
    assert stats["input"]["jobs"] == 1


@pytest.mark.slow
@requires_traces
@pytest.mark.parametrize(
    ("relative", "cluster", "rows", "gpu_jobs", "available"),
    [
        (
            "philly/philly_jobs.csv",
            "philly-machines",
            82_247,
            82_247,
            CASES["philly"].available,
        ),
        (
            "alibaba-gpu-2023/openb_pod_list_default.csv",
            "alibaba-2023",
            8_152,
            7_064,
            CASES["alibaba"].available,
        ),
    ],
)
def test_report_on_full_traces(
    relative: str,
    cluster: str,
    rows: int,
    gpu_jobs: int,
    available: frozenset[str],
    tmp_path: Path,
) -> None:
    out = tmp_path / "report"
    result = run_cli(str(TRACES / relative), "--out", str(out), "--cluster", cluster)
    assert result.exit_code == 0, result.output
    stats = check_report(out, available)
    assert (stats["input"]["rows_read"], stats["input"]["gpu_jobs"]) == (rows, gpu_jobs)
    assert stats["sections"]["cluster_demand"]["capacity_name"] == cluster
