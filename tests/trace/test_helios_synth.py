"""The Helios-like generator: deterministic, calibrated to the published statistics, and its
trace runs on its own cluster."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dlsched.cli.main import app as main_app
from dlsched.cli.synth_cmd import synth
from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.io import read_parquet
from dlsched.trace.synth.data import (
    ORIGIN_UNIX,
    fold_weekly,
    format_weekly,
    load_targets,
    vc_sizes,
)
from dlsched.trace.synth.gpus import GPU_SIZES, gpu_sizes, job_weighted_ranks
from dlsched.trace.synth.helios import (
    CALIBRATION_FILE,
    CLUSTER_FILE,
    TRACE_FILE,
    HeliosSynth,
    HeliosSynthConfig,
    helios_cluster,
    synthesize_helios,
    write_helios_synth,
)
from dlsched.trace.synth.stats import recurrence, top_user_share

SHARED_SERIES = (
    Path(__file__).resolve().parents[3] / "shared/traces/helios/venus_submissions_10min.csv"
)
BUNDLED_WEEKLY = (
    Path(__file__).resolve().parents[2] / "src/dlsched/data/helios/venus_gpu_submissions_weekly.csv"
)
NAME = re.compile(r"^[a-z]+_[a-z0-9]+_[A-Za-z0-9.\-_]+$")


def _stats(synth: HeliosSynth) -> dict[str, Any]:
    return {row["name"]: row for row in synth.calibration["statistics"]}


@pytest.fixture(scope="module", params=[0, 1], ids=["seed0", "seed1"])
def venus_30(request: pytest.FixtureRequest) -> HeliosSynth:
    return synthesize_helios(HeliosSynthConfig("venus", 30, seed=request.param))


def test_same_seed_same_trace_other_seed_other_trace() -> None:
    a = synthesize_helios(HeliosSynthConfig("venus", 2, seed=5))
    b = synthesize_helios(HeliosSynthConfig("venus", 2, seed=5))
    c = synthesize_helios(HeliosSynthConfig("venus", 2, seed=6))
    assert a.trace.table.equals(b.trace.table)
    assert a.calibration == b.calibration
    assert a.cluster == b.cluster
    assert not a.trace.table.equals(c.trace.table)


def test_venus_30_days_lands_on_the_published_statistics(venus_30: HeliosSynth) -> None:
    stats = _stats(venus_30)
    tolerances = {
        "gpu_jobs_per_day": 0.10,
        "avg_run_s": 0.15,
        "median_run_s": 0.25,
        "avg_gpus": 0.10,
        "gpu_time_per_job_s": 0.15,
    }
    for name, rel in tolerances.items():
        row = stats[name]
        assert row["generated"] == pytest.approx(row["published"], rel=rel), name
    for state in ("COMPLETED", "CANCELLED", "FAILED"):
        row = stats[f"share_{state}"]
        assert abs(row["generated"] - row["published"]) <= 0.03, state
        time_row = stats[f"gpu_time_share_{state}"]
        assert abs(time_row["generated"] - time_row["published"]) <= 0.1, state
    # Recurrence is QSSF's premise: most jobs repeat a name their user used before.
    assert stats["recurrence_same_name"]["generated"] > 0.6
    assert stats["recurrence_same_stem"]["generated"] > 0.85
    assert stats["top10_users_gpu_time_share"]["generated"] > 0.4


def test_trace_columns_follow_the_helios_schema(venus_30: HeliosSynth) -> None:
    trace = venus_30.trace
    table = trace.table
    assert trace.origin_unix == ORIGIN_UNIX
    assert table.column("start_time").null_count == len(trace)
    assert table.column("end_time").null_count == len(trace)
    for name in ("user", "vc", "job_name", "state", "duration", "num_cpus", "num_nodes"):
        assert table.column(name).null_count == 0, name
    assert set(table.column("state").to_pylist()) == {"COMPLETED", "CANCELLED", "FAILED"}
    gpus = table.column("num_gpus").to_numpy()
    assert set(np.unique(gpus)) <= set(GPU_SIZES)
    assert np.median(gpus) == 1
    duration = table.column("duration").to_numpy()
    assert duration.min() >= 1 and np.all(duration == np.rint(duration))
    assert duration.max() <= 7 * 86400
    submit = table.column("submit_time").to_numpy()
    assert np.all(np.diff(submit) >= 0) and submit[0] >= 0 and submit[-1] < 30 * 86400
    ids = table.column("job_id").to_pylist()
    assert ids[:3] == ["1", "2", "3"] and len(set(ids)) == len(ids)
    names = table.column("job_name").to_pylist()
    assert all(NAME.match(n) for n in names[:2000])
    nodes = table.column("num_nodes").to_numpy()
    assert np.all(nodes == np.maximum(1, -(-gpus // 8)))


def test_every_job_fits_a_quarter_of_its_vc(venus_30: HeliosSynth) -> None:
    sizes = venus_30.cluster.partition_gpus()
    vcs = venus_30.trace.column("vc").to_pylist()
    gpus = venus_30.trace.column("num_gpus").to_pylist()
    assert set(vcs) <= set(sizes)
    assert all(g <= max(1, sizes[v] // 4) for v, g in zip(vcs, gpus, strict=True))
    # Every VC is offered about the cluster's load: none is swamped for the whole trace.
    load = venus_30.calibration["offered_load"]["generated"]
    assert load == pytest.approx(venus_30.calibration["offered_load"]["published"], rel=0.1)
    assert max(venus_30.calibration["vc_offered_load"].values()) <= 1.2 * load
    # Arrivals follow VC size: the job share of each VC is close to its GPU share.
    total = sum(sizes.values())
    for vc, size in sizes.items():
        share = vcs.count(vc) / len(vcs)
        assert share == pytest.approx(size / total, abs=0.03), vc


def test_written_files_resolve_and_simulate_under_fifo_without_set_aside(tmp_path: Path) -> None:
    synth_result = synthesize_helios(HeliosSynthConfig("venus", 3, seed=2))
    paths = write_helios_synth(synth_result, tmp_path / "out")
    assert set(paths) == {TRACE_FILE, CLUSTER_FILE, CALIBRATION_FILE}
    cluster = resolve_cluster(str(paths[CLUSTER_FILE]))
    assert cluster.nodes == synth_result.cluster.nodes
    assert all(node.gpus == 8 for node in cluster.nodes)
    assert cluster.partition_gpus() == vc_sizes("venus")
    trace = read_parquet(paths[TRACE_FILE])
    assert trace.table.equals(synth_result.trace.table)
    assert trace.origin_unix == ORIGIN_UNIX
    report = json.loads(paths[CALIBRATION_FILE].read_text(encoding="utf-8"))
    assert report["like"] == "Venus" and report["jobs"] == len(trace)
    result = simulate(trace, cluster, SimConfig(policy="fifo"))
    assert result.summary["jobs_set_aside"] == 0
    assert result.summary["jobs"] == len(trace)


@pytest.mark.parametrize(
    ("like", "gpus", "vcs"), [("earth", 1168, 18), ("saturn", 2088, 15), ("uranus", 2144, 15)]
)
def test_other_clusters(like: str, gpus: int, vcs: int) -> None:
    cluster = helios_cluster(like)
    assert cluster.total_gpus == gpus and len(cluster.partitions) == vcs
    synth_result = synthesize_helios(HeliosSynthConfig(like, 1, seed=0))
    stats = _stats(synth_result)
    for name in ("avg_run_s", "median_run_s", "avg_gpus", "gpu_time_per_job_s"):
        assert stats[name]["generated"] == pytest.approx(stats[name]["published"], rel=0.1), name


def test_rate_scale_scales_the_job_count() -> None:
    base = synthesize_helios(HeliosSynthConfig("venus", 2, seed=3))
    half = synthesize_helios(HeliosSynthConfig("venus", 2, seed=3, rate_scale=0.5))
    assert len(half.trace) == pytest.approx(len(base.trace) / 2, rel=0.15)


@pytest.mark.parametrize(
    "config",
    [
        {"like": "mars", "days": 1},
        {"like": "venus", "days": 0},
        {"like": "venus", "days": float("nan")},
        {"like": "venus", "days": 1, "rate_scale": 0},
        {"like": "venus", "days": 1, "vc_day": "2019-01-01"},
    ],
)
def test_bad_configurations_are_value_errors(config: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        synthesize_helios(HeliosSynthConfig(**config))


def test_targets_read_the_published_summary() -> None:
    venus = load_targets("Venus")
    assert venus.gpu_jobs == 125_303
    assert venus.avg_run_s == pytest.approx(13_040.598)
    assert venus.median_run_s == 204
    assert venus.state_shares["CANCELLED"] == pytest.approx(0.272)
    assert sum(venus.gpu_time_shares.values()) == pytest.approx(1.0)
    assert venus.gpu_time_per_job == pytest.approx(98_526.07, rel=1e-6)


def test_job_weighted_ranks_give_shares_among_jobs() -> None:
    u = np.array([0.9, 0.1, 0.5, 0.3])
    counts = np.array([1, 6, 2, 1], dtype=np.int64)
    ranks = job_weighted_ranks(u, counts)
    # Ordered by u: template 1 (6 jobs), 3 (1), 2 (2), 0 (1) -> mid-ranks over 10 jobs.
    assert ranks.tolist() == pytest.approx([0.95, 0.3, 0.8, 0.65])


@settings(max_examples=50, deadline=None)
@given(
    ranks=st.lists(st.floats(0, 0.999), min_size=1, max_size=30),
    cap_power=st.integers(0, 8),
    ratio=st.floats(0.05, 5.0),
)
def test_gpu_sizes_respect_caps_and_grow_with_the_ratio(
    ranks: list[float], cap_power: int, ratio: float
) -> None:
    r = np.array(ranks)
    cap = np.full(r.size, 2**cap_power, dtype=np.int64)
    sizes = gpu_sizes(r, cap, ratio, 0.6)
    assert np.all(sizes <= cap) and set(sizes.tolist()) <= set(GPU_SIZES)
    assert np.all((sizes == 1) == ((r < 0.6) | (cap == 1)))
    assert np.all(gpu_sizes(r, cap, ratio * 1.5, 0.6) >= sizes)


def test_recurrence_and_top_users() -> None:
    users: list[str | None] = ["a", "a", "b", "a", "b", None]
    names: list[str | None] = ["x", "x", "x", "y", "x", "x"]
    assert recurrence(users, names) == pytest.approx(2 / 6)
    used = np.array([1.0, 1.0, 8.0, 1.0, 0.0, 0.0])
    assert top_user_share(users, used, 0.1) == pytest.approx(8 / 11)


def test_fold_weekly_sums_slots_of_the_week() -> None:
    times = ["2020-04-01 00:00:00", "2020-04-08 00:00:00", "2020-04-06 23:50:00"]
    rows = fold_weekly(times, [2, 3, 7])
    assert len(rows) == 7 * 144
    assert rows[2 * 144] == ("Wed", "00:00", 5, 2)
    assert rows[143] == ("Mon", "23:50", 7, 1)
    with pytest.raises(ValueError):
        fold_weekly(["2020-04-01 00:05:00"], [1])


@pytest.mark.skipif(not SHARED_SERIES.is_file(), reason="the 10-minute Venus series is absent")
def test_bundled_weekly_profile_rederives_from_the_series() -> None:
    with SHARED_SERIES.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    text = format_weekly(
        fold_weekly([r["time"] for r in rows], [int(r["submit_gpu_job"]) for r in rows])
    )
    assert text == BUNDLED_WEEKLY.read_text(encoding="utf-8")


def test_cli_writes_files_that_dlsched_simulate_runs(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(synth)
    runner = CliRunner()
    out = tmp_path / "venus"
    result = runner.invoke(
        app, ["--like", "venus", "--days", "1", "--seed", "4", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "avg_run_s" in result.output and "published" in result.output
    assert {p.name for p in out.iterdir()} == {TRACE_FILE, CLUSTER_FILE, CALIBRATION_FILE}
    run = runner.invoke(
        main_app,
        [
            "simulate",
            "--trace",
            str(out / TRACE_FILE),
            "--cluster",
            str(out / CLUSTER_FILE),
            "--policy",
            "fifo",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert run.exit_code == 0, run.output
    summary = json.loads((tmp_path / "run" / "summary.json").read_text(encoding="utf-8"))
    assert summary["jobs_set_aside"] == 0


def test_cli_reports_a_bad_cluster_name(tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(synth)
    result = CliRunner().invoke(
        app, ["--like", "mars", "--days", "1", "--out", str(tmp_path / "x")]
    )
    assert result.exit_code == 2
    assert "unknown Helios cluster" in result.output
