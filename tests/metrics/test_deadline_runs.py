"""Deadline figures end to end: real ``simulate`` runs of a small canonical trace with
deadlines (and one without), their ``jobs.parquet`` and ``summary.json``, ``analyze``'s
deadlines section and ``compare``'s satisfaction ratio."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dlsched.metrics.summary import DEADLINE_KEYS
from tests.analysis.run_dirs import invoke, ok, simulate, summary_of

# One node of 4 GPUs under FIFO: a (4 GPUs, 100 s) ends at 100 = its deadline (met exactly);
# b waits for it and ends at 150, 30 s after its deadline; c has none (best effort) and ends
# at 160; d needs 8 GPUs and is set aside.
TRACE = (
    "job_id,submit_time,num_gpus,duration,deadline\n"
    "a,0,4,100,100\nb,0,4,50,120\nc,1,1,10,\nd,2,8,10,500\n"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("deadlines")
    (root / "deadlines.csv").write_text(TRACE)
    no_deadlines = "\n".join(line.rsplit(",", 1)[0] for line in TRACE.splitlines())
    (root / "plain.csv").write_text(no_deadlines + "\n")
    return root


def run(root: Path, trace: str, name: str) -> Path:
    out = root / name
    if not out.exists():
        simulate(out, "--trace", root / trace, "--cluster", "1x4", "--policy", "fifo")
    return out


@pytest.fixture(scope="module")
def with_deadlines(root: Path) -> Path:
    return run(root, "deadlines.csv", "fifo")


@pytest.fixture(scope="module")
def without(root: Path) -> Path:
    return run(root, "plain.csv", "plain")


def test_jobs_parquet_has_the_deadline_columns(with_deadlines: Path) -> None:
    rows = {r["job_id"]: r for r in pq.read_table(with_deadlines / "jobs.parquet").to_pylist()}
    assert {k: rows[k]["deadline"] for k in "abcd"} == {"a": 100, "b": 120, "c": None, "d": 500}
    assert {k: rows[k]["deadline_met"] for k in "abcd"} == {
        "a": True,
        "b": False,
        "c": None,
        "d": False,
    }
    assert {k: rows[k]["tardiness_s"] for k in "abcd"} == {"a": 0, "b": 30, "c": None, "d": None}
    assert not any(r["declined"] for r in rows.values())


def test_summary_deadlines_block(with_deadlines: Path) -> None:
    block = summary_of(with_deadlines)["deadlines"]
    assert tuple(block) == DEADLINE_KEYS
    assert block == {
        "jobs_with_deadline": 3,
        "met": 1,
        "missed_late": 1,
        "declined": 0,
        "not_finished": 1,
        "satisfaction_ratio": pytest.approx(1 / 3),
        "tardiness_mean_s": 15.0,
        "tardiness_p99_s": pytest.approx(29.7),
        "best_effort_jobs": 1,
        "best_effort_avg_jct_s": 159.0,
    }


def test_a_run_without_deadlines_has_a_null_block(without: Path) -> None:
    assert summary_of(without)["deadlines"] == dict.fromkeys(DEADLINE_KEYS)
    jobs = pq.read_table(without / "jobs.parquet")
    assert jobs.column("deadline_met").null_count == jobs.num_rows


def test_analyze_shows_deadlines_only_when_some_job_had_one(
    with_deadlines: Path, without: Path, tmp_path: Path
) -> None:
    ok(invoke("analyze", with_deadlines, "--out", tmp_path / "a"))
    ok(invoke("analyze", without, "--out", tmp_path / "b"))
    page = (tmp_path / "a" / "index.html").read_text()
    assert '<section id="deadlines">' in page and "33.3%" in page
    stats = json.loads((tmp_path / "a" / "stats.json").read_text())
    assert stats["overview"]["deadlines"] == summary_of(with_deadlines)["deadlines"]
    assert 'id="deadlines"' not in (tmp_path / "b" / "index.html").read_text()


def test_compare_shows_satisfaction_where_some_run_had_deadlines(
    with_deadlines: Path, without: Path
) -> None:
    both = json.loads(ok(invoke("compare", with_deadlines, without, "--format", "json")).output)
    assert [r["deadlines.satisfaction_ratio"] for r in both] == [pytest.approx(1 / 3), None]
    table = ok(invoke("compare", with_deadlines, without)).output
    assert "deadline satisfaction" in table and "33.3%" in table
    plain = json.loads(ok(invoke("compare", without, without, "--format", "json")).output)
    assert "deadlines.satisfaction_ratio" not in plain[0]
