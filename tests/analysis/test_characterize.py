"""The characterization statistics on tiny traces whose answers are worked out by hand."""

from __future__ import annotations

import math
from typing import TypeVar

import numpy as np
import pytest

from dlsched.analysis.characterize import (
    CDF_PROBABILITIES,
    Characterization,
    ClusterDemand,
    DurationCdfs,
    FinalStates,
    GpuDemand,
    QueueingDelays,
    Recurrence,
    Submissions,
    Unavailable,
    UserConcentration,
    VcTable,
    characterize,
    distribution,
)
from dlsched.trace.schema import Trace

T = TypeVar("T")
MONDAY = 1_704_067_200.0  # 2024-01-01 00:00:00 UTC, a Monday
CAPACITY = 16


def hand_trace() -> Trace:
    """Five jobs, every field the characterization reads, origin at a Monday midnight UTC.

    id  submit  GPUs  run   user  name   state      vc  start   end
    a        0     1    10  u1    train  COMPLETED  v1       0      10
    b     3600     2   100  u1    train  COMPLETED  v1    3610    3710
    c     7200     8  1000  u2    eval   FAILED     v2    7300    8300
    d    90000     0    50  u2    prep   COMPLETED  v2   90000   90050
    e    90000    16    40  u3    train  CANCELLED  v1   90020   90060
    """
    return Trace.from_columns(
        {
            "job_id": ["a", "b", "c", "d", "e"],
            "submit_time": [0.0, 3600.0, 7200.0, 90000.0, 90000.0],
            "num_gpus": [1, 2, 8, 0, 16],
            "duration": [10.0, 100.0, 1000.0, 50.0, 40.0],
            "user": ["u1", "u1", "u2", "u2", "u3"],
            "job_name": ["train", "train", "eval", "prep", "train"],
            "state": ["COMPLETED", "COMPLETED", "FAILED", "COMPLETED", "CANCELLED"],
            "vc": ["v1", "v1", "v2", "v2", "v1"],
            "start_time": [0.0, 3610.0, 7300.0, 90000.0, 90020.0],
            "end_time": [10.0, 3710.0, 8300.0, 90050.0, 90060.0],
        },
        source="hand",
        origin_unix=MONDAY,
    )


@pytest.fixture(scope="module")
def report() -> Characterization:
    return characterize(hand_trace(), capacity_gpus=CAPACITY, capacity_name="16 GPUs")


def available(section: T | Unavailable) -> T:
    assert not isinstance(section, Unavailable), section
    return section


def quantile_at(values: tuple[float, ...], p: float) -> float:
    return values[CDF_PROBABILITIES.index(p)]


def test_overview_counts(report: Characterization) -> None:
    ov = report.overview
    assert (ov.jobs, ov.gpu_jobs, ov.cpu_jobs, ov.shared_gpu_jobs) == (5, 4, 1, 0)
    assert ov.total_gpu_time_s == 10 + 200 + 8000 + 640
    assert ov.users == 3 and ov.vcs == 2
    assert ov.first_submit_utc == "2024-01-01 00:00:00 UTC"
    assert ov.last_submit_utc == "2024-01-02 01:00:00 UTC"


def test_duration_cdf_points(report: Characterization) -> None:
    durations = available(report.durations)
    assert isinstance(durations, DurationCdfs)
    everyone = durations.curves["all jobs"]  # sorted: 10, 40, 50, 100, 1000
    assert (everyone.count, everyone.mean, everyone.median, everyone.p95) == (5, 240, 50, 1000)
    assert quantile_at(everyone.quantiles, 0.0) == 10
    assert quantile_at(everyone.quantiles, 0.2) == 10  # F(10) = 0.2 reaches p = 0.2
    assert quantile_at(everyone.quantiles, 0.4) == 40
    assert quantile_at(everyone.quantiles, 0.5) == 50  # F(40) = 0.4 < 0.5 <= F(50) = 0.6
    assert quantile_at(everyone.quantiles, 1.0) == 1000
    assert everyone.share_within_1min == pytest.approx(0.6)
    assert everyone.share_within_1h == 1.0
    gpu = durations.curves["GPU jobs"]  # 10, 40, 100, 1000
    assert (gpu.count, gpu.median) == (4, 70)
    assert [k for k in durations.curves] == [
        "all jobs",
        "GPU jobs",
        "1 GPU",
        "2-4 GPU",
        "5-8 GPU",
        ">8 GPU",
    ]
    assert durations.curves[">8 GPU"].quantiles == (40.0,) * len(CDF_PROBABILITIES)
    assert durations.jobs_without_duration == 0


def test_gpu_demand_by_jobs_and_gpu_time(report: Characterization) -> None:
    demand = available(report.gpu_demand)
    assert isinstance(demand, GpuDemand)
    total = 8850.0
    assert demand.gpu_time_s == total
    by_bucket = {b.bucket: (b.jobs, b.share_jobs, b.gpu_time_s) for b in demand.buckets}
    assert by_bucket == {
        "1": (1, 0.25, 10.0),
        "2-4": (1, 0.25, 200.0),
        "5-8": (1, 0.25, 8000.0),
        ">8": (1, 0.25, 640.0),
    }
    assert demand.buckets[2].share_gpu_time == pytest.approx(8000 / total)
    assert [lv.gpus for lv in demand.levels] == [1.0, 2.0, 8.0, 16.0]


def test_final_states(report: Characterization) -> None:
    states = available(report.states)
    assert isinstance(states, FinalStates)
    rows = {r.state: r for r in states.rows}
    assert [r.state for r in states.rows] == ["COMPLETED", "CANCELLED", "FAILED"]
    assert rows["COMPLETED"].share_jobs == pytest.approx(0.6)
    assert rows["COMPLETED"].gpu_jobs == 2 and rows["COMPLETED"].share_gpu_jobs == 0.5
    assert rows["COMPLETED"].share_gpu_time == pytest.approx(210 / 8850)
    assert rows["FAILED"].share_gpu_time == pytest.approx(8000 / 8850)


def test_submissions_by_utc_hour_and_weekday(report: Characterization) -> None:
    subs = available(report.submissions)
    assert isinstance(subs, Submissions)
    assert subs.by_hour[:3] == (1, 3, 1) and sum(subs.by_hour) == 5
    assert subs.gpu_by_hour[:3] == (1, 2, 1)
    assert subs.by_weekday == (3, 2, 0, 0, 0, 0, 0)  # Monday, then Tuesday
    assert subs.gpu_by_weekday == (3, 1, 0, 0, 0, 0, 0)
    assert subs.days_covered == pytest.approx(90000 / 86400)


def test_queueing_delays(report: Characterization) -> None:
    queueing = available(report.queueing)
    assert isinstance(queueing, QueueingDelays)
    everyone = queueing.curves["all jobs"]  # 0, 0, 10, 20, 100
    assert (everyone.median, everyone.mean) == (10, 26)
    assert queueing.curves["5-8 GPU"].median == 100
    assert queueing.jobs_without_start == 0


def test_cluster_demand_from_start_and_end(report: Characterization) -> None:
    demand = available(report.cluster_demand)
    assert isinstance(demand, ClusterDemand)
    assert demand.basis == "start/end"
    assert demand.peak_gpus == 16
    assert demand.span_s == 90060
    assert demand.time_avg_gpus == pytest.approx(8850 / 90060)
    # 90,060 s over at most 1,000 bins: 60 s is too fine, 300 s fits.
    assert (demand.bin_s, demand.first_bin_s) == (300.0, 0.0)
    # The series is stored rounded to 1e-6 GPUs.
    assert demand.mean_gpus[0] == pytest.approx(10 / 300, abs=1e-6)
    # Job c holds 8 GPUs over 7,300..8,300: bins from 7,200 are 2/3, full, full, 2/3 busy.
    first = 7200 // 300
    assert demand.mean_gpus[first : first + 4] == pytest.approx([16 / 3, 8, 8, 16 / 3], abs=1e-6)
    assert demand.max_gpus[first : first + 4] == (8.0, 8.0, 8.0, 8.0)
    assert demand.max_gpus[first + 4] == 0
    assert demand.avg_utilization == pytest.approx(8850 / (90060 * CAPACITY))
    assert demand.share_time_over_capacity == 0
    assert (demand.jobs_counted, demand.jobs_not_counted) == (4, 0)


def test_cluster_demand_without_start_times_places_jobs_at_submission() -> None:
    trace = Trace.from_columns(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 50.0],
            "num_gpus": [4, 4],
            "duration": [100.0, 100.0],
        }
    )
    demand = available(characterize(trace, capacity_gpus=6).cluster_demand)
    assert isinstance(demand, ClusterDemand)
    assert demand.basis == "submit+duration"
    assert demand.peak_gpus == 8 and demand.span_s == 150
    assert demand.share_time_over_capacity == pytest.approx(50 / 150)
    # a holds 4 GPUs over 0..100 and b 4 over 50..150; 60-s bins from 0.
    assert demand.mean_gpus == pytest.approx([280 / 60, 400 / 60, 120 / 60], abs=1e-6)
    assert demand.max_gpus == (8.0, 8.0, 4.0)


def test_user_concentration_top_shares() -> None:
    # User k (1..20) runs one 1-GPU job of k seconds: 210 GPU-seconds in all.
    n = 20
    trace = Trace.from_columns(
        {
            "job_id": [f"j{k}" for k in range(1, n + 1)],
            "submit_time": [float(k) for k in range(1, n + 1)],
            "num_gpus": [1] * n,
            "duration": [float(k) for k in range(1, n + 1)],
            "user": [f"u{k}" for k in range(1, n + 1)],
        }
    )
    users = available(characterize(trace).users)
    assert isinstance(users, UserConcentration)
    assert users.users == n and users.gpu_time_s == 210
    top = {t.percent: t for t in users.top}
    assert top[1].users == 1 and top[1].share_gpu_time == pytest.approx(20 / 210)
    assert top[5].users == 1 and top[5].share_gpu_jobs == pytest.approx(1 / 20)
    assert top[10].users == 2 and top[10].share_gpu_time == pytest.approx(39 / 210)
    assert users.curve_users[0] == 0 and users.curve_users[-1] == 1
    assert users.curve_gpu_time[-1] == pytest.approx(1.0)
    assert np.all(np.diff(users.curve_gpu_time) >= 0)


def test_user_concentration_on_hand_trace(report: Characterization) -> None:
    users = available(report.users)
    assert isinstance(users, UserConcentration)
    # GPU users: u2 holds 8,000 (job c), u3 640, u1 210; the top 1% is one user.
    assert users.users == 3
    assert users.top[0].share_gpu_time == pytest.approx(8000 / 8850)
    assert users.top[0].share_gpu_jobs == pytest.approx(1 / 4)


def test_recurrence(report: Characterization) -> None:
    rec = available(report.recurrence)
    assert isinstance(rec, Recurrence)
    # Only b recurs: u1 ran "train" before; u3's "train" is another user's name.
    assert (rec.jobs_considered, rec.recurrent_jobs, rec.distinct_pairs) == (5, 1, 4)
    assert rec.share_recurrent == pytest.approx(0.2)
    assert rec.share_gpu_time_recurrent == pytest.approx(200 / 8850)


def test_recurrence_ignores_blank_names() -> None:
    trace = Trace.from_columns(
        {
            "job_id": ["a", "b", "c"],
            "submit_time": [0.0, 1.0, 2.0],
            "num_gpus": [1, 1, 1],
            "user": ["u", "u", "u"],
            "job_name": ["", "", "x"],
        }
    )
    rec = available(characterize(trace).recurrence)
    assert isinstance(rec, Recurrence)
    assert (rec.jobs_considered, rec.recurrent_jobs) == (1, 0)


def test_vc_table(report: Characterization) -> None:
    vcs = available(report.vcs)
    assert isinstance(vcs, VcTable)
    v2, v1 = vcs.rows
    assert (v2.vc, v2.jobs, v2.gpu_jobs, v2.gpu_time_s) == ("v2", 2, 1, 8000.0)
    assert (v2.mean_duration_s, v2.mean_queue_s) == (1000, 100)
    assert (v1.vc, v1.jobs, v1.gpu_jobs, v1.gpu_time_s) == ("v1", 3, 3, 850.0)
    assert (v1.mean_duration_s, v1.median_duration_s, v1.mean_queue_s) == (50, 40, 10)
    assert v1.share_gpu_time == pytest.approx(850 / 8850)
    assert [v1.share_jobs, v2.share_jobs] == pytest.approx([0.6, 0.4])


def test_shared_gpus_form_their_own_bucket() -> None:
    trace = Trace.from_columns(
        {
            "job_id": ["a", "b", "c"],
            "submit_time": [0.0, 0.0, 0.0],
            "num_gpus": [1, 1, 2],
            "gpu_milli": [500, 1000, 1000],
            "duration": [100.0, 100.0, 100.0],
        }
    )
    demand = available(characterize(trace).gpu_demand)
    assert isinstance(demand, GpuDemand)
    assert [(b.bucket, b.jobs, b.gpu_time_s) for b in demand.buckets[:3]] == [
        ("<1", 1, 50.0),
        ("1", 1, 100.0),
        ("2-4", 1, 200.0),
    ]


def test_missing_fields_make_sections_unavailable() -> None:
    trace = Trace.from_columns(
        {"job_id": ["a", "b"], "submit_time": [0.0, 5.0], "num_gpus": [1, 2]}
    )
    report = characterize(trace)
    assert isinstance(report.gpu_demand, GpuDemand)
    for name in (
        "durations",
        "states",
        "submissions",
        "queueing",
        "cluster_demand",
        "users",
        "recurrence",
        "vcs",
    ):
        section = getattr(report, name)
        assert isinstance(section, Unavailable), name
        assert section.reason


def test_empty_trace() -> None:
    report = characterize(Trace.from_columns({"job_id": [], "submit_time": [], "num_gpus": []}))
    assert report.overview.jobs == 0
    assert isinstance(report.durations, Unavailable)
    assert isinstance(report.gpu_demand, Unavailable)


def test_distribution_rejects_empty_sample() -> None:
    with pytest.raises(ValueError):
        distribution(np.array([], dtype=np.float64))


def test_distribution_quantiles_are_sample_values() -> None:
    values = np.array([3.0, 1.0, 2.0, 1000.0])
    dist = distribution(values)
    assert set(dist.quantiles) <= set(values.tolist())
    assert math.isclose(dist.median, 2.5)
