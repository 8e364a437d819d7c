"""Policies: the registry, options, and the priority keys of each policy."""

from __future__ import annotations

import math

import pytest

from dlsched.cluster.state import Demand
from dlsched.policy.registry import create_policy, policies
from dlsched.policy.tiresias import Tiresias
from dlsched.sim.job import RUNNING, SimJob


def job(
    row: int = 0,
    submit: float = 0.0,
    gpus: int = 1,
    work: float = 100.0,
    duration: float | None = 100.0,
) -> SimJob:
    return SimJob(row, f"j{row}", submit, Demand(gpus), work, duration, 0)


def start(j: SimJob, at: float, stall: float = 0.0, rate: float = 1.0) -> SimJob:
    """Mark ``j`` running from ``at`` (progress from ``at + stall``), as the simulator does."""
    j.status = RUNNING
    j.seg_begin = at
    j.seg_start = at + stall
    j.rate = rate
    return j


def test_registry_lists_the_policies() -> None:
    found = policies()
    assert {"fifo", "sjf", "srtf", "tiresias"} <= set(found)
    for name, cls in found.items():
        assert cls.name == name


def test_create_policy_with_options() -> None:
    fifo = create_policy("fifo")
    assert fifo.name == "fifo" and not fifo.backfill and not fifo.preemptive
    assert fifo.interval is None
    assert create_policy("fifo", {"allow_backfill": "true"}).backfill
    assert create_policy("sjf", {"allow_backfill": "yes"}).backfill
    assert not create_policy("sjf", {"allow_backfill": "off"}).backfill
    t = create_policy("tiresias", {"thresholds": "100, 2000", "round_s": "30"})
    assert isinstance(t, Tiresias)
    assert t.thresholds == (100.0, 2000.0) and t.interval == 30.0 and t.preemptive
    default = create_policy("tiresias")
    assert isinstance(default, Tiresias)
    assert default.thresholds == (18_000.0,) and default.interval == 60.0
    assert create_policy("srtf").preemptive and create_policy("srtf").interval is None


def test_unknown_policy_lists_the_available_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown policy 'lifo'; available: .*fifo.*sjf"):
        create_policy("lifo")


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        (
            "fifo",
            {"backfill": "true"},
            r"unknown option\(s\) backfill of 'fifo'; its options: allow_backfill",
        ),
        ("srtf", {"allow_backfill": "true"}, r"unknown option\(s\)"),
        ("fifo", {"allow_backfill": "maybe"}, "expected true/false, got 'maybe'"),
        ("tiresias", {"round_s": "soon"}, "option round_s: expected a number, got 'soon'"),
        ("tiresias", {"thresholds": "500,100"}, "thresholds must be positive and increasing"),
        ("tiresias", {"thresholds": "0"}, "thresholds must be positive and increasing"),
        ("tiresias", {"round_s": "0"}, "round_s must be positive"),
        ("tiresias", {"order": "fifo"}, "order must be one of running, submit: got 'fifo'"),
    ],
)
def test_bad_options_are_errors(name: str, options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        create_policy(name, options)


def test_fifo_key_is_submit_then_sequence() -> None:
    fifo = create_policy("fifo")
    a, b, c = job(0, 5.0), job(1, 5.0), job(2, 1.0)
    assert fifo.key(a, 0.0) == (5.0, 0)
    assert sorted([a, b, c], key=lambda j: fifo.key(j, 10.0)) == [c, a, b]


def test_sjf_key_is_oracle_duration_unknown_last() -> None:
    sjf = create_policy("sjf")
    short, long_, unknown, tie = (
        job(0, 9.0, duration=10.0),
        job(1, 0.0, duration=50.0),
        job(2, 0.0, duration=None),
        job(3, 1.0, duration=10.0),
    )
    assert sjf.key(short, 0.0) == (10.0, 9.0, 0)
    assert sjf.key(unknown, 0.0)[0] == math.inf
    ranked = sorted([long_, unknown, short, tie], key=lambda j: sjf.key(j, 0.0))
    assert ranked == [tie, short, long_, unknown]


def test_srtf_key_uses_remaining_time() -> None:
    srtf = create_policy("srtf")
    running = start(job(0, 0.0, work=100.0), at=10.0)
    waiting = job(1, 5.0, work=60.0)
    assert srtf.key(running, 10.0) == (100.0, 0.0, 0)
    assert srtf.key(running, 50.0) == (60.0, 0.0, 0)  # 40 s done
    assert srtf.key(waiting, 50.0) == (60.0, 5.0, 1)  # waiting: no progress
    # At 60 the running job has 50 s left and overtakes the waiting one.
    assert srtf.key(running, 60.0) < srtf.key(waiting, 60.0)
    assert srtf.key(running, 40.0) > srtf.key(waiting, 40.0)


def test_srtf_remaining_time_counts_the_restore_stall() -> None:
    srtf = create_policy("srtf")
    resumed = job(0, 0.0, work=100.0)
    resumed.done = 30.0
    start(resumed, at=200.0, stall=30.0)
    assert srtf.key(resumed, 200.0)[0] == 30.0 + 70.0  # stall left + work left
    assert srtf.key(resumed, 215.0)[0] == 15.0 + 70.0
    assert srtf.key(resumed, 240.0)[0] == 60.0


def test_tiresias_queue_keys_at_thresholds() -> None:
    t = create_policy("tiresias", {"thresholds": "100,1000"})
    j = start(job(0, 3.0, gpus=2), at=0.0)  # attained service: 2 GPU-s per second
    assert t.key(j, 0.0) == (0.0, 0.0, 3.0, 0)  # queue 0, running, submit time, seq
    assert t.key(j, 49.9)[0] == 0.0  # 99.8 GPU-s
    assert t.key(j, 50.0)[0] == 1.0  # exactly 100 GPU-s: the next queue
    assert t.key(j, 499.0)[0] == 1.0
    assert t.key(j, 500.0)[0] == 2.0  # 1000 GPU-s: the last queue
    # A waiting job keeps the service it attained before it was stopped.
    w = job(1, 0.0, gpus=4)
    w.attained_base = 400.0
    assert t.key(w, 1e9) == (1.0, 1.0, 0.0, 1)
    # A later job in a lower queue still goes first.
    late = job(2, 50.0, gpus=1)
    assert t.key(late, 500.0) < t.key(w, 500.0)


def test_tiresias_orders_running_jobs_first_inside_a_queue_unless_asked_for_submit_order() -> None:
    older_waiting = job(0, 0.0)
    younger_running = start(job(1, 10.0), at=20.0)
    default = create_policy("tiresias")
    assert isinstance(default, Tiresias) and default.order == "running"
    assert default.key(younger_running, 30.0) < default.key(older_waiting, 30.0)
    submit = create_policy("tiresias", {"order": "submit"})
    assert submit.key(older_waiting, 30.0) < submit.key(younger_running, 30.0)
    assert submit.key(younger_running, 30.0) == (0.0, 10.0, 1)
    # Across queues the order rule does not matter: the lower queue goes first either way.
    demoted = start(job(2, 0.0), at=0.0)
    for t in (default, submit):
        assert t.key(older_waiting, 20_000.0) < t.key(demoted, 20_000.0)


def test_tiresias_next_change_is_when_the_next_threshold_is_reached() -> None:
    t = create_policy("tiresias", {"thresholds": "100,1000"})
    j = start(job(0, 0.0, gpus=2), at=0.0)
    assert t.next_change(j, 0.0) == 50.0
    assert t.next_change(j, 20.0) == 50.0  # 40 GPU-s attained, 60 more at 2 GPUs
    assert t.next_change(j, 50.0) == 500.0  # now in queue 1: next threshold 1000
    assert t.next_change(j, 500.0) is None  # last queue: never changes again
    # Resumed job: attained service carries over.
    r = job(1, 0.0, gpus=4)
    r.attained_base = 80.0
    start(r, at=1000.0)
    assert t.next_change(r, 1000.0) == 1005.0
    cpu_only = start(job(2, 0.0, gpus=0), at=0.0)
    assert t.next_change(cpu_only, 0.0) is None


def test_only_tiresias_asks_to_be_woken() -> None:
    j = start(job(), at=0.0)
    for name in ("fifo", "sjf", "srtf"):
        assert create_policy(name).next_change(j, 0.0) is None
