"""The history estimator: preferences, fallbacks, threshold, rolling update, and agreement
with a full-scan reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.perf.duration.history import NO_HISTORY_S, HistoryEstimator
from dlsched.perf.duration.registry import create_estimator
from tests.perf.helpers import Job, reference_history, trace_of


def bound(jobs: list[Job], **options: object) -> HistoryEstimator:
    est = HistoryEstimator(**options)  # type: ignore[arg-type]
    est.bind(trace_of(jobs))
    return est


def observe_all(est: HistoryEstimator, jobs: list[Job], rows: range) -> None:
    for row in rows:
        est.observe(row, jobs[row].duration, 0.0)


def test_registered_by_name() -> None:
    assert isinstance(create_estimator("history", seed=3), HistoryEstimator)


def test_prefers_same_user_and_same_gpus() -> None:
    jobs = [
        Job("alice", "train_resnet_lr0.1", 4, 100.0),
        Job("alice", "train_resnet_lr0.1", 8, 900.0),
        Job("bob", "train_resnet_lr0.1", 4, 5000.0),
        Job("alice", "eval_bert", 4, 7.0),
        Job("alice", "train_resnet_lr0.1", 4, 0.0),  # the query
    ]
    est = bound(jobs)
    observe_all(est, jobs, range(4))
    assert est.estimate(4, 50.0) == pytest.approx(100.0)
    assert est.last_source == "user-name-gpu"
    assert est.last_matched


def test_fallbacks_in_order() -> None:
    jobs = [
        Job("alice", "train_resnet_lr0.1", 8, 300.0),
        Job("bob", "train_resnet_lr0.1", 1, 5000.0),
        Job("alice", "zzzz", 1, 60.0),
        Job("alice", "train_resnet_lr0.01", 4, 0.0),  # similar name, alice, other GPUs
        Job(
            "carol", "train_resnet_lr0.1", 1, 0.0
        ),  # name known, carol never ran it: all users' jobs
        Job("alice", "qqqq", 1, 0.0),  # no similar name: alice's mean
        Job("dave", "qqqq", 1, 0.0),  # unknown user, no similar name: global mean
        Job(None, None, 1, 0.0),  # nothing known about the job
    ]
    est = bound(jobs)
    assert est.estimate(3, 0.0) == NO_HISTORY_S
    assert (est.last_source, est.last_matched) == ("prior", False)
    observe_all(est, jobs, range(3))
    expected = [
        (3, 300.0, "user-name"),
        (4, (300.0 + 5000.0) / 2, "name"),
        (5, (300.0 + 60.0) / 2, "user"),
        (6, (300.0 + 5000.0 + 60.0) / 3, "global"),
        (7, (300.0 + 5000.0 + 60.0) / 3, "global"),
    ]
    for row, value, source in expected:
        assert est.estimate(row, 30.0) == pytest.approx(value), source
        assert est.last_source == source
        assert est.last_matched == (source != "global")


def test_two_similar_names_are_averaged() -> None:
    jobs = [
        Job("alice", "train_resnet_lr0.1", 1, 100.0),
        Job("alice", "train_resnet_lr0.2", 1, 300.0),
        Job("alice", "train_resnet_lr0.2", 1, 500.0),
        Job("alice", "train_resnet_lr0.3", 1, 0.0),
    ]
    est = bound(jobs)
    observe_all(est, jobs, range(3))
    assert est.names.similar("train_resnet_lr0.3") == ("train_resnet_lr0.2", "train_resnet_lr0.1")
    assert est.estimate(3, 0.0) == pytest.approx(300.0)  # mean of the 3 jobs, not of 2 means


def test_similarity_threshold() -> None:
    # ratio("abcxy", "abcde") = 0.6 counts as similar; ratio("abxyz", "abcde") = 0.4 does not.
    jobs = [Job("u", "abcxy", 1, 100.0), Job("u", "other", 1, 900.0), Job("u", "abcde", 1, 0.0)]
    est = bound(jobs)
    observe_all(est, jobs, range(2))
    assert est.estimate(2, 0.0) == pytest.approx(100.0)
    jobs[0] = Job("u", "abxyz", 1, 100.0)
    est = bound(jobs)
    observe_all(est, jobs, range(2))
    assert est.estimate(2, 0.0) == pytest.approx(500.0)
    assert est.last_source == "user"


def test_rolling_update() -> None:
    jobs = [
        Job("u", "job_a", 1, 100.0),
        Job("u", "job_a", 1, 300.0),
        Job("u", "job_a", 1, 0.0),
    ]
    est = bound(jobs)
    est.observe(0, 100.0, 5.0)
    assert est.estimate(2, 6.0) == pytest.approx(100.0)
    est.observe(1, 300.0, 7.0)
    assert est.estimate(2, 8.0) == pytest.approx(200.0)


def test_estimates_stay_positive() -> None:
    jobs = [Job("u", "a", 1, 0.0), Job("u", "a", 1, 0.0)]
    est = bound(jobs)
    est.observe(0, 0.0, 0.0)
    assert est.estimate(1, 0.0) == 1.0


def test_bind_forgets_history() -> None:
    jobs = [Job("u", "a", 1, 50.0), Job("u", "a", 1, 0.0)]
    est = bound(jobs)
    est.observe(0, 50.0, 0.0)
    est.bind(trace_of(jobs))
    assert est.estimate(1, 0.0) == NO_HISTORY_S


job_st = st.builds(
    Job,
    st.sampled_from(["u1", "u2", "u3", None]),
    st.one_of(
        st.none(),
        st.builds(
            lambda s, v: s + v,
            st.sampled_from(["train_resnet_lr", "train_vit_lr", "eval_", "x"]),
            st.sampled_from(["", "0.1", "0.01", "0.001", "1", "7"]),
        ),
        st.text(alphabet="abc_1", max_size=6),
    ),
    st.sampled_from([1, 2, 4]),
    st.floats(1.0, 1e5),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(job_st, min_size=1, max_size=40))
def test_indexed_lookup_matches_full_scan(jobs: list[Job]) -> None:
    # With unigrams and no limits the similar-name search is exactly get_close_matches over
    # every known name, so every estimate must equal the full-scan reference.
    est = bound(jobs, q=1, posting_limit=None, candidate_limit=None)
    for row, job in enumerate(jobs):
        value, source = reference_history(jobs[:row], job, NO_HISTORY_S)
        assert est.estimate(row, 0.0) == pytest.approx(max(value, 1.0), rel=1e-9)
        assert est.last_source == source
        est.observe(row, job.duration, 0.0)
