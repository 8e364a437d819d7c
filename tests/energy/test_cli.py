"""``dlsched energy replay``: the report directory, input errors, gap repair, overrides and
series derived from a simulator run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner, Result

from dlsched.cli.energy_cmd import energy_app
from dlsched.cluster.parse import resolve_cluster
from dlsched.energy.series import SeriesError, series_from_run
from dlsched.metrics.rundir import write_run
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.read import read_trace
from tests.energy.helpers import minute_rows, series_csv

# The lead registers energy_app under this name in dlsched.cli.main.
app = typer.Typer()
app.add_typer(energy_app, name="energy")
RUNNER = CliRunner()


def invoke(*args: str | Path) -> Result:
    return RUNNER.invoke(app, ["energy", "replay", *map(str, args)])


@pytest.fixture(scope="module")
def philly_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    out = tmp_path_factory.mktemp("philly") / "report"
    result = invoke("philly", "--preset", "philly", "--fill-gaps", "--out", out)
    return out, result


def test_philly_report_directory(philly_report: tuple[Path, Result]) -> None:
    out, result = philly_report
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "accuracy.png",
        "index.html",
        "nodes.png",
        "stats.json",
    ]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["mean_powered_off_nodes"] >= 90
    assert stats["utilization_after"] >= 0.85
    assert stats["shortfall_steps"] <= 10
    assert stats["forecast_smape"] <= 8
    assert stats["preset"] == "philly"
    assert stats["split"]["mode"] == "months"
    assert stats["window"]["first_step"] == "2017-12-01 00:00:00"
    # The repair is explicit: counted and listed.
    assert stats["input"]["filled_steps"] == 59
    assert stats["input"]["gaps"][0]["after"] == "2017-10-26 00:00:00"
    assert "filled 59 missing ten-minute steps" in result.output
    # The headline sets the forecast beside both naive baselines, persistence included.
    smape = f"persistence {stats['persistence_forecast_smape']:.2f}%"
    assert "seasonal naive" in result.output and smape in result.output
    page = (out / "index.html").read_text()
    assert 'src="nodes.png"' in page and "forward-filled steps" in page
    assert "SC&#x27;21" in page  # the published figures carry their citation
    assert (out / "nodes.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_gap_without_fill_gaps_fails_with_file_line(tmp_path: Path) -> None:
    result = invoke("philly", "--preset", "philly", "--out", tmp_path / "r")
    assert result.exit_code == 2
    assert "philly_node_sequence_10min.csv:3255: gap: 10 h between consecutive samples" in (
        result.output
    )
    assert "--fill-gaps" in result.output
    assert not (tmp_path / "r").exists()


def small_series(tmp_path: Path, days: int = 8) -> Path:
    """Minute samples of a bounded random walk on a 40-node cluster (little to learn, so
    early stopping ends training quickly)."""
    steps = np.random.default_rng(3).integers(-1, 2, days * 1440)
    busy = np.clip(20 + np.cumsum(steps) // 4, 0, 40)
    path = tmp_path / "small.csv"
    return series_csv(path, minute_rows("2017-10-02 00:00:00", busy.tolist(), 40))


def test_bad_values_fail_with_file_line(tmp_path: Path) -> None:
    path = series_csv(
        tmp_path / "bad.csv",
        [("2017-10-03 00:00:00", "5", "10"), ("2017-10-03 00:01:00", "12", "10")],
    )
    result = invoke(path, "--preset", "venus", "--out", tmp_path / "r")
    assert result.exit_code == 2
    assert f"{path}:3: active (12) exceeds total (10)" in result.output


def test_overrides_and_parameters_without_a_preset(tmp_path: Path) -> None:
    path = small_series(tmp_path)
    out = tmp_path / "r"
    result = invoke(path, "--preset", "uranus", "--buffer", "3", "--fut-th", "0.5", "--out", out)
    assert result.exit_code == 0, result.output
    stats = json.loads((out / "stats.json").read_text())
    assert stats["parameters"] == {
        "history": 3,
        "future": 18,
        "his_th": 1.0,
        "fut_th": 0.5,
        "de_th": 1,
        "buffer": 3,
        "hold_off": 12,
    }
    assert "published_reference" not in stats
    assert stats["window"]["steps"] == len(range(int(0.8 * 8 * 144), 8 * 144))
    fresh = tmp_path / "fresh"
    result = invoke(path, "--history", "2", "--future", "3", "--out", fresh)
    assert result.exit_code == 2
    assert "missing --his-th, --fut-th, --de-th, --buffer, --hold-off" in result.output
    result = invoke(path, "--preset", "mars", "--out", fresh)
    assert result.exit_code == 2 and "unknown CES preset 'mars'" in result.output


def test_split_options(tmp_path: Path) -> None:
    path = small_series(tmp_path)
    out = tmp_path / "r"
    result = invoke(path, "--preset", "venus", "--split", "months", "--out", out)
    assert result.exit_code == 2
    assert "cannot split by months: the series spans 1 calendar month(s)" in result.output
    result = invoke(path, "--preset", "venus", "--split", "weeks", "--out", out)
    assert result.exit_code == 2 and "--split must be one of auto, months" in result.output
    result = invoke(
        path,
        "--preset",
        "venus",
        "--test-start",
        "2017-10-08",
        "--train-fraction",
        "0.5",
        "--out",
        out,
    )
    assert result.exit_code == 2 and "give either dates" in result.output
    result = invoke(path, "--preset", "venus", "--train-fraction", "0.5", "--out", out)
    assert result.exit_code == 0, result.output
    stats = json.loads((out / "stats.json").read_text())
    assert stats["split"]["mode"] == "fractions"
    assert stats["windows"]["train"]["steps"] == 4 * 144
    assert stats["windows"]["validation"]["steps"] == int(0.7 * 8 * 144) - 4 * 144


def test_flags_become_features(tmp_path: Path) -> None:
    flags = tmp_path / "flags.csv"
    flags.write_text("date,holiday,deadline\n2017-10-07,1,0\n2017-10-09,0,1\n")
    out = tmp_path / "r"
    result = invoke(small_series(tmp_path), "--preset", "venus", "--flags", flags, "--out", out)
    assert result.exit_code == 0, result.output
    stats = json.loads((out / "stats.json").read_text())
    assert stats["input"]["flags"] == str(flags)
    assert stats["forecaster"]["features"][7:9] == ["holiday", "deadline"]
    flags.write_text("date,holiday,deadline\n2017-10-07,2,0\n")
    result = invoke(
        small_series(tmp_path), "--preset", "venus", "--flags", flags, "--out", out, "--force"
    )
    assert result.exit_code == 2 and f"{flags}:2: holiday: expected 0 or 1" in result.output


def test_the_output_directory_is_never_clobbered(tmp_path: Path) -> None:
    out = tmp_path / "results"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = invoke(small_series(tmp_path), "--preset", "venus", "--out", out)
    assert result.exit_code == 2
    assert "refusing to replace it" in result.output
    assert (out / "notes.txt").read_text() == "mine"


def test_split_by_dates_and_power_options(tmp_path: Path) -> None:
    out = tmp_path / "r"
    result = invoke(
        small_series(tmp_path),
        *("--preset", "saturn", "--out", out, "--valid-start", "2017-10-06"),
        *("--test-start", "2017-10-08", "--idle-power-w", "1000", "--busy-power-w", "2000"),
    )
    assert result.exit_code == 0, result.output
    stats = json.loads((out / "stats.json").read_text())
    assert stats["windows"]["validation"]["first_step"] == "2017-10-06 00:00:00"
    assert stats["window"]["first_step"] == "2017-10-08 00:00:00"
    assert stats["energy"]["idle_power_source"] == "given with --idle-power-w"
    off_hours = stats["powered_off_node_hours"]
    assert stats["energy_saved_kwh"] == pytest.approx(off_hours * 1000 / 1000)
    result = invoke(
        small_series(tmp_path), "--preset", "saturn", "--out", out, "--test-start", "2017-10-08",
        "--force",
    )  # fmt: skip
    assert result.exit_code == 2 and "needs both" in result.output


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    trace = read_trace(bundled_trace_path("vc_0e4a51")).trace
    run = simulate(trace, resolve_cluster("32x8"))
    out = tmp_path_factory.mktemp("sim") / "run"
    write_run(out, run.jobs, run.timeline, run.summary, {"trace": "vc_0e4a51"})
    return out


def test_from_run(simulated_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    result = invoke(
        "--from-run", simulated_run, "--preset", "venus", "--origin", "2017-10-01", "--out", out
    )
    assert result.exit_code == 0, result.output
    stats = json.loads((out / "stats.json").read_text())
    assert stats["input"]["source"].endswith("timeline.parquet")
    assert stats["input"]["first_step"] == "2017-10-01 00:00:00"
    assert stats["input"]["wall_clock_times"] is True
    assert 0 <= stats["mean_powered_off_nodes"] <= 32
    assert math.isfinite(stats["forecast_rmse"])
    # The series is the per-minute busy GPUs of the one partition, in nodes, as 10-min maxima.
    timeline = pq.read_table(simulated_run / "timeline.parquet")
    busy_gpus = timeline.column("busy_gpus").to_numpy()
    series = series_from_run(simulated_run)
    assert series.origin_known is False and set(series.total.tolist()) == {32}
    assert series.label(0) == "day 0 00:00:00" and series.label(145) == "day 1 00:10:00"
    minutes = timeline.column("time_s").to_numpy()
    first_step = np.floor(minutes / 600) == 0
    assert series.busy[0] == np.ceil(busy_gpus[first_step] / 8).max()
    assert series.busy.max() == np.ceil(busy_gpus / 8).max()


def test_from_run_errors(simulated_run: Path, tmp_path: Path) -> None:
    result = invoke(
        "--from-run",
        simulated_run,
        "--preset",
        "venus",
        "--gpus-per-node",
        "7",
        "--out",
        tmp_path / "r",
    )
    assert result.exit_code == 2
    assert "partition 'default': total_gpus is not a multiple of --gpus-per-node 7" in (
        result.output
    )
    result = invoke("--from-run", tmp_path, "--preset", "venus", "--out", tmp_path / "r")
    assert result.exit_code == 2 and "no timeline.parquet" in result.output
    result = invoke(
        "philly", "--from-run", simulated_run, "--preset", "venus", "--out", tmp_path / "r"
    )
    assert result.exit_code == 2 and "either a SERIES" in result.output


def timeline_dir(tmp_path: Path, rows: dict[str, list[object]]) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    pq.write_table(pa.table(rows), run / "timeline.parquet")
    return run


def test_busy_nodes_sum_over_partitions(tmp_path: Path) -> None:
    run = timeline_dir(
        tmp_path,
        {
            "time_s": [0.0, 0.0, 300.0, 300.0, 600.0, 600.0],
            "partition": ["a", "b"] * 3,
            "total_gpus": [16, 32] * 3,
            "busy_gpus": [1.0, 9.0, 0.5, 0.0, 16.0, 32.0],
        },
    )
    series = series_from_run(run, origin_s=86_400.0)
    # ceil(1/8) + ceil(9/8) = 3, then ceil(0.5/8) = 1 (the step's max is 3); then 2 + 4 = 6.
    assert series.busy.tolist() == [3, 6] and series.total.tolist() == [6, 6]
    assert series.label(0) == "1970-01-02 00:00:00" and series.origin_known


def test_timeline_problems_name_the_row(tmp_path: Path) -> None:
    run = timeline_dir(
        tmp_path,
        {
            "time_s": [0.0, 0.0, 60.0],
            "partition": ["a", "a", "a"],
            "total_gpus": [8, 8, 8],
            "busy_gpus": [1.0, 2.0, 9.0],
        },
    )
    with pytest.raises(SeriesError) as err:
        series_from_run(run)
    text = str(err.value)
    assert "timeline.parquet: row 3: busy_gpus (9) exceeds total_gpus (8)" in text
    assert "timeline.parquet: row 2: duplicate sample of partition 'a' at time_s 0" in text
