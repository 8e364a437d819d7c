"""Deadline figures: the jobs table's ``declined``, ``deadline``, ``deadline_met`` and
``tardiness_s`` columns (:class:`JobRecords`) and the summary's ``deadlines`` block."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pyarrow as pa
import pytest

from dlsched.cluster.state import Demand
from dlsched.metrics.jobs import JOBS_SCHEMA, JobRecords
from dlsched.metrics.summary import DEADLINE_KEYS, DeadlineFigures, deadline_figures, summarize


@dataclass
class Done:
    """A finished job as :meth:`JobRecords.finish` reads it."""

    row: int
    submit_time: float
    end: float
    gpus: int = 1
    pool: int = 0
    first_start: float = 0.0
    work: float = 10.0
    duration: float | None = None
    preemptions: int = 0
    restarts: int = 0
    held_gpu_s: float = 10.0
    lost_gpu_s: float = 0.0

    @property
    def demand(self) -> Demand:
        return Demand(self.gpus)


IDS = ["met", "exact", "late", "declined", "aside", "best", "best_aside"]
DEADLINES = [100.0, 50.0, 30.0, 40.0, 60.0, None, None]


def records() -> JobRecords:
    """Rows: met early (end 80, deadline 100), met exactly (end 50 = deadline), late by 20
    (end 50, deadline 30), declined, set aside, a finished best-effort job (JCT 70) and a
    set-aside best-effort one."""
    rec = JobRecords(len(IDS))
    rec.finish(Done(0, submit_time=0.0, end=80.0))
    rec.finish(Done(1, submit_time=10.0, end=50.0))
    rec.finish(Done(2, submit_time=20.0, end=50.0))
    rec.decline(3, "cannot meet its deadline", 4, 5.0)
    rec.set_aside(4, "needs 99 GPUs", 99, 6.0)
    rec.finish(Done(5, submit_time=10.0, end=80.0))
    rec.set_aside(6, "needs 99 GPUs", 99, 7.0)
    return rec


def table(deadlines: list[float | None] | None = DEADLINES) -> pa.Table:
    column = None if deadlines is None else pa.array(deadlines, pa.float64())
    return records().to_table(IDS, ("p",), column)


def by_id(jobs: pa.Table) -> dict[str, dict[str, object]]:
    return {str(r["job_id"]): r for r in jobs.to_pylist()}


def test_jobs_table_deadline_columns() -> None:
    jobs = table()
    assert jobs.schema.equals(JOBS_SCHEMA)
    rows = by_id(jobs)
    assert [rows[i]["deadline"] for i in IDS] == DEADLINES
    assert [rows[i]["deadline_met"] for i in IDS] == [True, True, False, False, False, None, None]
    assert [rows[i]["tardiness_s"] for i in IDS] == [0.0, 0.0, 20.0, None, None, None, None]
    assert [rows[i]["declined"] for i in IDS] == [False] * 3 + [True] + [False] * 3


def test_decline_is_a_set_aside_with_the_policys_reason() -> None:
    row = by_id(table())["declined"]
    assert row["status"] == "set_aside" and row["reason"] == "cannot meet its deadline"
    assert row["gpus"] == 4 and row["submit_s"] == 5.0
    assert row["end_s"] is None and row["jct_s"] is None and row["partition"] is None


def test_the_last_record_of_a_row_stands() -> None:
    rec = JobRecords(2)
    rec.decline(0, "no", 1, 0.0)
    rec.set_aside(0, "cannot fit", 1, 0.0)
    rec.decline(1, "no", 1, 0.0)
    rec.finish(Done(1, submit_time=0.0, end=5.0))
    rows = rec.to_table(["a", "b"], ("p",), pa.array([10.0, 10.0])).to_pylist()
    assert [r["declined"] for r in rows] == [False, False]
    assert rows[0]["reason"] == "cannot fit" and rows[1]["deadline_met"] is True


def test_without_deadlines_the_columns_are_null_and_declined_still_recorded() -> None:
    jobs = table(None)
    assert jobs.schema.equals(JOBS_SCHEMA)
    for name in ("deadline", "deadline_met", "tardiness_s"):
        assert jobs.column(name).null_count == jobs.num_rows
    assert by_id(jobs)["declined"]["declined"] is True


def test_nan_deadline_is_no_deadline() -> None:
    rows = by_id(table([math.nan, *DEADLINES[1:]]))
    assert rows["met"]["deadline"] is None and rows["met"]["deadline_met"] is None
    assert rows["met"]["tardiness_s"] is None


def test_deadlines_must_match_the_rows() -> None:
    with pytest.raises(ValueError, match="2 deadlines for 7 jobs"):
        records().to_table(IDS, ("p",), pa.array([1.0, 2.0]))


def test_chunked_deadlines() -> None:
    chunked = pa.chunked_array([DEADLINES[:3], DEADLINES[3:]], pa.float64())
    assert records().to_table(IDS, ("p",), chunked).equals(table())


def test_deadline_figures() -> None:
    block = deadline_figures(table()).as_dict()
    assert tuple(block) == DEADLINE_KEYS
    assert block == {
        "jobs_with_deadline": 5,
        "met": 2,
        "missed_late": 1,
        "declined": 1,
        "not_finished": 1,
        "satisfaction_ratio": 0.4,
        "tardiness_mean_s": pytest.approx(20.0 / 3),
        "tardiness_p99_s": pytest.approx(19.6),
        "best_effort_jobs": 2,
        "best_effort_avg_jct_s": 70.0,
    }
    assert block["met"] + block["missed_late"] + block["declined"] + block["not_finished"] == 5


def test_met_exactly_at_the_deadline() -> None:
    rec = JobRecords(1)
    rec.finish(Done(0, submit_time=0.0, end=3600.0))
    jobs = rec.to_table(["j"], ("p",), pa.array([3600.0]))
    figures = deadline_figures(jobs)
    assert (figures.met, figures.missed_late, figures.satisfaction_ratio) == (1, 0, 1.0)
    assert figures.tardiness_mean_s == figures.tardiness_p99_s == 0.0
    assert figures.best_effort_jobs == 0 and figures.best_effort_avg_jct_s is None


def test_no_deadline_finished_gives_null_tardiness_and_a_real_zero_ratio() -> None:
    rec = JobRecords(2)
    rec.decline(0, "no", 1, 0.0)
    rec.finish(Done(1, submit_time=0.0, end=5.0))
    figures = deadline_figures(rec.to_table(["a", "b"], ("p",), pa.array([10.0, None])))
    assert figures.satisfaction_ratio == 0.0 and figures.declined == 1
    assert figures.tardiness_mean_s is None and figures.tardiness_p99_s is None
    assert figures.best_effort_jobs == 1 and figures.best_effort_avg_jct_s == 5.0


@pytest.mark.parametrize("deadlines", [None, [None] * len(IDS), [math.nan] * len(IDS)])
def test_no_deadlines_gives_a_null_block(deadlines: list[float | None] | None) -> None:
    assert deadline_figures(table(deadlines)).as_dict() == dict.fromkeys(DEADLINE_KEYS)


def test_a_table_from_before_deadlines_gives_a_null_block() -> None:
    old = table().drop_columns(["declined", "deadline", "deadline_met", "tardiness_s"])
    assert deadline_figures(old) == DeadlineFigures()


def test_a_finished_job_without_an_end_is_not_finished() -> None:
    rec = JobRecords(2)
    rec.finish(Done(0, submit_time=0.0, end=math.nan))
    rec.finish(Done(1, submit_time=0.0, end=math.inf))
    jobs = rec.to_table(["a", "b"], ("p",), pa.array([10.0, 10.0]))
    assert jobs.column("deadline_met").to_pylist() == [False, False]
    figures = deadline_figures(jobs)
    assert (figures.met, figures.missed_late, figures.not_finished) == (0, 1, 1)
    assert figures.tardiness_mean_s is None  # the infinite tardiness is left out


def summary_of(jobs: pa.Table) -> dict[str, object]:
    return summarize(jobs, {"p": 8}, policy="edf", placement="pack", sim_wall_s=0.1)


def test_every_summary_has_the_block_and_it_serializes_strictly() -> None:
    with_deadlines = summary_of(table())
    without = summary_of(table(None))
    assert with_deadlines["deadlines"] == deadline_figures(table()).as_dict()
    assert without["deadlines"] == dict.fromkeys(DEADLINE_KEYS)
    for summary in (with_deadlines, without):
        json.dumps(summary, allow_nan=False)
    # A declined job is set aside, with its policy's reason.
    assert with_deadlines["jobs_set_aside"] == 3
    reasons = {"cannot meet its deadline": 1, "needs 99 GPUs": 2}
    assert with_deadlines["set_aside_reasons"] == reasons
