"""Every registered (non-elastic) policy through one contract, driven live on the fake back end.

The live driver runs the same Scheduler, policy and placer objects as the simulator. Checked for
every policy: every job completes exactly once, no GPU is ever held by two runs at once, nothing
runs while the store says otherwise, cancellation and launch failures end jobs properly, and a
restart on the same store relaunches what was running. For event-driven policies the live
schedule (start and end of every job) equals the simulator's on the same workload.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from dlsched.backends.fake import FakeBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy, policies
from dlsched.service.control.controller import Controller
from dlsched.service.store.database import Store
from dlsched.service.store.records import CANCELLED, COMPLETED, FAILED, PENDING, RUNNING
from dlsched.sim.config import CheckpointConfig, RestartCost, SimConfig
from dlsched.sim.simulator import simulate
from dlsched.trace.schema import JobSpec, Trace
from tests.service.helpers import Clock, Harness, check_no_double_booking, make_harness

# Co-locating policies are refused live (test_colocating_policies_are_refused_live).
POLICIES = sorted(name for name, cls in policies().items() if not cls.colocates)
EVENT_DRIVEN_EQUIVALENT = ("fifo", "sjf", "srtf")


def workload(seed: int, n: int = 30) -> list[tuple[float, str, int, float]]:
    rng = random.Random(seed)
    t = 1000.0
    out = []
    for i in range(n):
        t += rng.choice([0.0, 0.0, 5.0, 40.0, 300.0])
        out.append((t, f"job{i:02d}", rng.choice([1, 1, 2, 3, 4, 6, 8]), rng.uniform(30, 3000)))
    return out


@pytest.mark.parametrize("policy", POLICIES)
def test_every_job_completes_once_without_double_booking(tmp_path: Path, policy: str) -> None:
    h = make_harness(tmp_path, policy)
    seqs = h.run(workload(seed=7))
    rows = h.store.jobs()
    assert len(rows) == len(seqs) == 30
    assert all(r.state == COMPLETED for r in rows), [(r.id, r.state) for r in rows]
    for r in rows:
        kinds = [k for _, k, _ in h.store.events(r.seq)]
        assert kinds.count("completed") == 1
        assert kinds.count("started") == r.restarts + 1 == r.attempt
        assert r.end_time is not None and r.start_time is not None
        assert r.submit_time <= r.start_time < r.end_time
    check_no_double_booking(h.backend)
    assert h.backend.launches == sum(r.attempt for r in rows)
    if not create_policy(policy).preemptive:
        assert all(r.restarts == 0 for r in rows)


def test_fifo_starts_in_submit_order(tmp_path: Path) -> None:
    h = make_harness(tmp_path, "fifo")
    h.run(workload(seed=3))
    rows = h.store.jobs()
    starts = [r.start_time for r in sorted(rows, key=lambda r: r.seq)]
    assert starts == sorted(starts)  # type: ignore[type-var]


def test_preemptive_policy_preempts_and_resumes(tmp_path: Path) -> None:
    h = make_harness(tmp_path, "srtf")
    seqs = h.run([(1000.0, "long", 8, 1000.0), (1100.0, "short", 4, 50.0)])
    long, short = h.store.get(seqs["long"]), h.store.get(seqs["short"])
    assert long is not None and short is not None
    assert long.restarts == 1 and short.restarts == 0
    assert short.start_time == 1100.0 and short.end_time == 1150.0
    # The long job resumes where it stopped (the fake checkpoints all progress).
    assert long.end_time == pytest.approx(1000.0 + 1000.0 + 50.0)
    kinds = [k for _, k, _ in h.store.events(long.seq)]
    assert kinds == ["submitted", "started", "preempting", "requeued", "started", "completed"]


@pytest.mark.parametrize("policy", EVENT_DRIVEN_EQUIVALENT)
def test_live_schedule_equals_the_simulators(tmp_path: Path, policy: str) -> None:
    arrivals = workload(seed=11, n=25)
    h = make_harness(tmp_path, policy)
    seqs = h.run(arrivals)
    live = {name: h.store.get(seq) for name, seq in seqs.items()}
    trace = Trace.from_jobs(
        [JobSpec(name, t, gpus, duration) for t, name, gpus, duration in arrivals]
    )
    free = CheckpointConfig(costs=RestartCost(one_gpu_s=0.0, node_s=0.0, multi_node_s=0.0))
    result = simulate(
        trace,
        resolve_cluster("2x4"),
        SimConfig(policy=policy, use_partitions=False, checkpoint=free),
    )
    sim = result.jobs.to_pylist()
    assert len(sim) == len(live)
    for rec in sim:
        row = live[rec["job_id"]]
        assert row is not None
        assert row.start_time == pytest.approx(rec["first_start_s"]), rec["job_id"]
        assert row.end_time == pytest.approx(rec["end_s"]), rec["job_id"]


@pytest.mark.parametrize("policy", POLICIES)
def test_cancel_and_launch_failure(tmp_path: Path, policy: str) -> None:
    h = make_harness(tmp_path, policy, fail_jobs=["j2"])
    a = h.submit("a", 8, 500.0)
    h.controller.step()
    assert h.store.get(a).state == RUNNING  # type: ignore[union-attr]
    b = h.submit("b", 1, 10.0)
    c = h.submit("c", 1, 10.0)
    h.store.request_cancel(a, h.clock())
    h.store.request_cancel(c, h.clock())
    h.run_until_idle()
    assert h.store.get(a).state == CANCELLED  # type: ignore[union-attr]
    assert h.store.get(c).state == CANCELLED  # type: ignore[union-attr]
    failed = h.store.get(b)
    assert failed is not None and failed.state == FAILED
    assert failed.reason == "injected launch failure"


def test_restart_on_the_same_store_relaunches_running_jobs(tmp_path: Path) -> None:
    h = make_harness(tmp_path, "fifo")
    seqs = {name: h.submit(name, 4, 100.0) for name in ("a", "b", "c")}
    h.controller.step()
    assert [h.store.get(s).state for s in seqs.values()] == [RUNNING, RUNNING, PENDING]  # type: ignore[union-attr]
    h.store.close()
    # A new service process: same store, a fresh (empty) fake back end.
    clock = Clock(h.clock.now + 10)
    store = Store(tmp_path / "state.db")
    backend = FakeBackend(clock)
    ctl = Controller(store, backend, resolve_cluster("2x4"), create_policy("fifo"), clock=clock)
    h2 = Harness(clock, store, backend, ctl)
    ctl.recover()
    h2.run_until_idle()
    rows = store.jobs()
    assert all(r.state == COMPLETED for r in rows)
    assert [r.attempt for r in rows] == [1, 1, 1], "same attempt: relaunched, not restarted"
    assert backend.launches == 3


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
def test_jobs_of_a_lost_node_are_rescheduled_elsewhere(tmp_path: Path, policy: str) -> None:
    """Fault injection: a node is lost while jobs run on it. Its jobs are queued again (not
    failed), nothing is launched on it while it is down, and every job completes once."""
    h = make_harness(tmp_path, policy, cluster="3x4")
    arrivals = [(1000.0 + 10 * i, f"job{i:02d}", 1 + i % 4, 600.0 + 50 * i) for i in range(12)]
    node = "node-001"
    lost_at = 1200.0
    pending = sorted(arrivals)
    while pending and pending[0][0] < lost_at:
        t, name, gpus, duration = pending.pop(0)
        h.clock.now = t
        h.submit(name, gpus, duration)
        h.controller.step()
    h.clock.now = lost_at
    assert any(node in r.request.gpu_ids for r in h.backend.runs.values()), "the node was in use"
    h.backend.fail_node(node)
    h.run(pending)
    rows = h.store.jobs()
    assert all(r.state == COMPLETED for r in rows), [(r.id, r.state, r.reason) for r in rows]
    assert sum(r.restarts for r in rows) >= 1
    later = [r for r in h.backend.history if r.begin > lost_at]
    assert later and all(node not in r.request.gpu_ids for r in later)
    check_no_double_booking(h.backend)


def test_colocating_policies_are_refused_live(tmp_path: Path) -> None:
    colocating = [n for n, cls in policies().items() if cls.colocates]
    assert "lucid" in colocating
    for name in colocating:
        with pytest.raises(ValueError, match="co-locates jobs on shared GPUs"):
            make_harness(tmp_path, name)
