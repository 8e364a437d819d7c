"""The quota time series of a run with queues (``tenants.parquet``): one row per queue and per
cohort tree per change, worked by hand on borrowing and reclaim, consistent with the summary's
averages, bounded by the number of changes, and absent without queues."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, simulate
from dlsched.tenancy.series import COHORT, QUEUE, queue_steps
from dlsched.trace.bundled import bundled_trace_path
from tests.tenancy.kueue_manifests import documents, write
from tests.tenancy.test_admission_sim import CLUSTER, _config, _rigid

Row = tuple[float, str, str, str | None, float, float, float, float | None]


def _rows(result: RunResult) -> list[Row]:
    assert result.tenants is not None
    keys = ("time", "level", "queue", "cohort", "used", "nominal", "borrowed", "lent")
    return [tuple(r[k] for k in keys) for r in result.tenants.to_pylist()]  # type: ignore[misc]


def test_borrow_reclaim_and_borrow_again_by_hand(tmp_path: Path) -> None:
    # b borrows a's idle 4 GPUs at 0 (a lends them); a reclaims at 10 and finishes at 110;
    # b borrows again until its job ends.
    trace = _rigid([("b1", 0, 8, 1000, "b"), ("a1", 10, 4, 100, "a")])
    result = simulate(trace, CLUSTER, _config(tmp_path))
    rows = _rows(result)
    end = result.jobs.to_pylist()[0]["end_s"]
    assert rows == [
        (0.0, QUEUE, "a", "pool", 0.0, 4.0, 0.0, None),
        (0.0, QUEUE, "b", "pool", 8.0, 4.0, 4.0, None),
        (0.0, COHORT, "pool", "pool", 8.0, 8.0, 4.0, 4.0),
        (10.0, QUEUE, "a", "pool", 4.0, 4.0, 0.0, None),
        (10.0, QUEUE, "b", "pool", 0.0, 4.0, 0.0, None),
        (10.0, COHORT, "pool", "pool", 4.0, 8.0, 0.0, 0.0),
        (110.0, QUEUE, "a", "pool", 0.0, 4.0, 0.0, None),
        (110.0, QUEUE, "b", "pool", 8.0, 4.0, 4.0, None),
        (110.0, COHORT, "pool", "pool", 8.0, 8.0, 4.0, 4.0),
        (end, QUEUE, "b", "pool", 0.0, 4.0, 0.0, None),
        (end, COHORT, "pool", "pool", 0.0, 8.0, 0.0, 0.0),
    ]
    assert result.tenants is not None
    a = queue_steps(result.tenants, "a", end + 5)
    assert list(a["time"]) == [0.0, 10.0, 110.0, end, end + 5]
    assert list(a["used"]) == [0.0, 4.0, 0.0, 0.0, 0.0]
    assert list(a["lent"]) == [4.0, 0.0, 4.0, 0.0, 0.0]
    b = queue_steps(result.tenants, "b", end + 5)
    assert list(b["lent"]) == [0.0] * 5 and list(b["borrowed"]) == [4.0, 0.0, 4.0, 0.0, 0.0]


def _integral(times: list[float], values: list[float], end: float) -> float:
    return sum(v * (t1 - t0) for t0, t1, v in zip(times, [*times[1:], end], values, strict=True))


def test_series_integrates_to_the_summary_averages(tmp_path: Path) -> None:
    out = tmp_path / "run"
    queues = Path(__file__).parents[2] / "src" / "dlsched" / "data" / "queues"
    r = CliRunner().invoke(
        app,
        [
            "simulate", "--trace", str(bundled_trace_path("philly_jobs_2000")),
            "--cluster", "philly-vcs", "--no-partitions", "--queues",
            str(queues / "philly-cohort.yaml"), "--out", str(out), "--no-progress",
        ],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    # Kueue's metrics at the run's end, every job counted by its ClusterQueue.
    metrics = (out / "kueue_metrics.prom").read_text()
    finished = [
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("kueue_finished_workloads_total{")
    ]
    assert len(finished) == 11 and sum(finished) == summary["jobs"]
    series = pq.read_table(out / "tenants.parquet")
    table = series.to_pylist()
    start = table[0]["time"]
    end = max(row["time"] for row in table)
    queues = [row for row in table if row["level"] == QUEUE]
    assert set(summary["tenants"]) == {row["queue"] for row in queues}
    for name, tenant in summary["tenants"].items():
        mine = [row for row in queues if row["queue"] == name]
        times = [row["time"] for row in mine]
        assert times == sorted(set(times))
        assert mine[0]["time"] == start and mine[-1]["used"] == 0
        assert all(row["nominal"] == tenant["nominal_gpus"] for row in mine)
        assert all(0 <= row["borrowed"] <= row["used"] for row in mine)
        used = _integral(times, [row["used"] for row in mine], end)
        borrowed = _integral(times, [row["borrowed"] for row in mine], end)
        ratio = tenant["used_gpus_avg"] * (end - start)
        assert abs(used - ratio) <= 1e-6 * max(1.0, ratio)
        ratio = tenant["borrowed_gpus_avg"] * (end - start)
        assert abs(borrowed - ratio) <= 1e-6 * max(1.0, ratio)
    # The cohort rows are the queues' totals, and the queues' lent adds up to the tree's.
    cohort = [row for row in table if row["level"] == COHORT]
    assert cohort and {row["queue"] for row in cohort} == {"philly"}
    steps = {name: queue_steps(series, name, end) for name in summary["tenants"]}
    for row in cohort:
        at = {
            name: int(np.searchsorted(s["time"], row["time"], side="right")) - 1
            for name, s in steps.items()
        }
        used = sum(steps[name]["used"][i] for name, i in at.items())
        lent = sum(steps[name]["lent"][i] for name, i in at.items())
        assert used == row["used"]
        assert abs(lent - row["lent"]) <= 1e-6
        assert 0 <= row["lent"] <= row["borrowed"]
    assert len(table) < 10 * summary["jobs"]


def test_no_series_without_queues(tmp_path: Path) -> None:
    result = simulate(_rigid([("a1", 0, 4, 100, "a")]), CLUSTER, SimConfig(use_partitions=False))
    assert result.tenants is None
    out = tmp_path / "run"
    r = CliRunner().invoke(
        app,
        [
            "simulate", "--trace", str(bundled_trace_path("philly_jobs_2000")),
            "--cluster", "philly-vcs", "--policy", "fifo", "--out", str(out), "--no-progress",
        ],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert not (out / "tenants.parquet").exists()
    assert not (out / "kueue_metrics.prom").exists()


def test_lending_stays_within_each_cohort_tree(tmp_path: Path) -> None:
    # a borrows b's idle 2 GPUs (same cohort); c, in no cohort, neither lends nor borrows.
    docs = documents(
        {"a": {"gpu": 2, "cohort": "pool"}, "b": {"gpu": 2, "cohort": "pool"}, "c": {"gpu": 4}}
    )
    config = SimConfig(use_partitions=False, queues=str(write(tmp_path / "q.yaml", docs)))
    trace = _rigid([("a1", 0, 4, 100, "a"), ("c1", 0, 4, 50, "c")])
    result = simulate(trace, CLUSTER, config)
    rows = _rows(result)
    assert rows == [
        (0.0, QUEUE, "a", "pool", 4.0, 2.0, 2.0, None),
        (0.0, QUEUE, "b", "pool", 0.0, 2.0, 0.0, None),
        (0.0, QUEUE, "c", None, 4.0, 4.0, 0.0, None),
        (0.0, COHORT, "pool", "pool", 4.0, 4.0, 2.0, 2.0),
        (50.0, QUEUE, "c", None, 0.0, 4.0, 0.0, None),
        (100.0, QUEUE, "a", "pool", 0.0, 2.0, 0.0, None),
        (100.0, COHORT, "pool", "pool", 0.0, 4.0, 0.0, 0.0),
    ]
    assert result.tenants is not None
    assert list(queue_steps(result.tenants, "b", 120)["lent"]) == [2.0, 0.0, 0.0]
    assert list(queue_steps(result.tenants, "c", 120)["lent"]) == [0.0, 0.0, 0.0]
