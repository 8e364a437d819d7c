"""Kueue's clock (docs/reference/tenancy.md "Kueue's clock"): the scheduling cycle on its own
(one head per ClusterQueue per cycle, preemptors after their victims, active and inadmissible
queues), in a simulation (cycle period, termination grace, waitForPodsReady), and the
Configuration's waitForPodsReady as the manifests give it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, simulate
from dlsched.tenancy.admission import Admission, Workload
from dlsched.tenancy.cycle import KueueQueues
from dlsched.tenancy.errors import TenancyError
from dlsched.tenancy.manifests import read_manifests
from dlsched.tenancy.stage import AdmissionStage
from dlsched.trace.schema import Trace
from tests.tenancy.kueue_manifests import documents, write
from tests.tenancy.test_parking import setups

CONFIG_API = "config.kueue.x-k8s.io/v1beta1"


def _queues(tmp_path: Path, queues: dict[str, dict[str, Any]], **config: Any) -> Path:
    docs = documents(queues)
    if config:
        docs.append({"apiVersion": CONFIG_API, "kind": "Configuration", **config})
    return write(tmp_path / "queues.yaml", docs)


class _Cycle:
    """One Admission and its Kueue queues, with workloads by name."""

    def __init__(self, tmp_path: Path, queues: dict[str, dict[str, Any]]) -> None:
        self.adm = Admission(read_manifests(_queues(tmp_path, queues)))
        self.queues = KueueQueues(self.adm)
        self.seq = 0
        self.by_name: dict[str, Workload] = {}

    def submit(self, name: str, cq: str, gpus: float, priority: int = 0) -> Workload:
        self.seq += 1
        wl = Workload(
            name, self.adm.quota.index[cq], priority, float(self.seq), self.seq, {"gpu": gpus}
        )
        self.queues.submit(wl, 0.0)
        self.by_name[name] = wl
        return wl

    def cycle(self, now: float = 0.0) -> tuple[list[str], list[tuple[str, list[str]]]]:
        result = self.queues.cycle(now)
        return [w.key for w in result.admitted], [
            (p.key, [e.workload.key for e in ev]) for p, ev in result.preempting
        ]

    def names(self, workloads: list[Workload]) -> list[str]:
        return [w.key for w in workloads]


def test_one_head_per_cluster_queue_per_cycle(tmp_path: Path) -> None:
    c = _Cycle(tmp_path, {"a": {"gpu": 8}, "b": {"gpu": 8}})
    for name in ("a1", "a2", "a3"):
        c.submit(name, "a", 1)
    c.submit("b1", "b", 1)
    assert c.cycle() == (["a1", "b1"], [])
    assert c.cycle() == (["a2"], [])
    assert c.cycle() == (["a3"], [])
    assert c.cycle() == ([], [])


def test_a_preemptor_waits_for_its_victims_to_terminate(tmp_path: Path) -> None:
    c = _Cycle(tmp_path, {"a": {"gpu": 4, "within": "LowerPriority"}})
    c.submit("low", "a", 4)
    assert c.cycle() == (["low"], [])
    c.submit("high", "a", 4, priority=10)
    # The cycle evicts; the victim stays charged and the preemptor stays at its queue's head.
    assert c.cycle() == ([], [("high", ["low"])])
    a = c.adm.quota.index["a"]
    assert c.adm.quota.usage[a] == {0: 4.0}
    assert c.names(c.queues.active(a)) == ["high"]
    # Until the victim's pods are gone, later cycles evict nothing more and admit nothing.
    assert c.cycle() == ([], [])
    c.queues.terminated(c.by_name["low"])
    assert c.cycle() == (["high"], [])


def test_best_effort_fifo_parks_a_head_and_its_equals_until_quota_is_released(
    tmp_path: Path,
) -> None:
    c = _Cycle(tmp_path, {"a": {"gpu": 4}})
    c.submit("running", "a", 3)
    c.cycle()
    big1, big2 = c.submit("big1", "a", 2), c.submit("big2", "a", 2)
    small = c.submit("small", "a", 1)
    a = c.adm.quota.index["a"]
    # big1 does not fit: it and big2 (same shape and priority) become inadmissible, so
    # small is the next head.
    assert c.cycle() == ([], [])
    assert c.names(c.queues.inadmissible(a)) == ["big1", "big2"]
    assert c.names(c.queues.active(a)) == ["small"]
    assert c.cycle() == (["small"], [])
    c.queues.finished(c.by_name["running"])
    assert c.names(c.queues.active(a)) == ["big1", "big2"]
    assert c.cycle() == (["big1"], [])
    assert c.cycle() == ([], [])
    assert big2 in c.queues.inadmissible(a) and small.assignment is not None
    assert big1.assignment is not None


def test_strict_fifo_keeps_its_head_and_blocks_the_rest(tmp_path: Path) -> None:
    c = _Cycle(tmp_path, {"a": {"gpu": 4, "strategy": "StrictFIFO"}})
    c.submit("running", "a", 3)
    c.cycle()
    c.submit("big", "a", 2)
    c.submit("small", "a", 1)
    a = c.adm.quota.index["a"]
    assert c.cycle() == ([], [])
    assert c.names(c.queues.active(a)) == ["big", "small"]
    assert c.queues.inadmissible(a) == []


# ---- in a simulation ---------------------------------------------------------------------
CLUSTER = resolve_cluster("2x4")


def _trace(rows: list[tuple[str, float, int, float, str]]) -> Trace:
    columns = ("job_id", "submit_time", "num_gpus", "duration", "vc")
    return Trace.from_columns({c: [r[i] for r in rows] for i, c in enumerate(columns)}, "clock")


def _run(trace: Trace, queues: Path, cluster: Any = CLUSTER, **config: Any) -> RunResult:
    return simulate(trace, cluster, SimConfig(use_partitions=False, queues=str(queues), **config))


def _jobs(result: RunResult) -> dict[str, dict[str, Any]]:
    return {r["job_id"]: r for r in result.jobs.to_pylist()}


def _reclaim(tmp_path: Path) -> tuple[Trace, Path]:
    # b borrows a's idle quota for an 8-GPU job; a's 4-GPU job reclaims it at t=10.
    queues = {
        "a": {"gpu": 4, "cohort": "pool", "reclaim": "Any"},
        "b": {"gpu": 4, "cohort": "pool"},
    }
    trace = _trace([("b1", 0, 8, 1000, "b"), ("a1", 10, 4, 100, "a")])
    return trace, _queues(tmp_path, queues)


def test_termination_grace_delays_the_preemptor_by_exactly_the_grace(tmp_path: Path) -> None:
    trace, queues = _reclaim(tmp_path)
    at_once = _jobs(_run(trace, queues))
    graced = _jobs(_run(trace, queues, termination_grace_s=30.0))
    fixpoint = _jobs(_run(trace, queues, admission_clock="fixpoint"))
    assert at_once["a1"]["first_start_s"] == fixpoint["a1"]["first_start_s"] == 10
    assert graced["a1"]["first_start_s"] == 40
    assert graced["b1"]["preemptions"] == 1
    # The victim's GPUs were freed at its eviction, its quota only after the grace period.
    assert graced["a1"]["admission_wait_s"] == pytest.approx(30.0)


def test_cycle_period_spaces_the_admissions_of_one_queue(tmp_path: Path) -> None:
    queues = _queues(tmp_path, {"a": {"gpu": 8}})
    trace = _trace([(f"j{i}", 0, 1, 100, "a") for i in range(3)])
    starts = sorted(
        j["first_start_s"] for j in _jobs(_run(trace, queues, cycle_period_s=2.0)).values()
    )
    assert starts == [0, 2, 4]
    at_once = sorted(j["first_start_s"] for j in _jobs(_run(trace, queues)).values())
    assert at_once == [0, 0, 0]


def test_run_options_refuse_clock_settings_that_do_not_apply() -> None:
    from dlsched.run_options import experiment_from

    base = {"trace": "t.csv", "cluster": "2x4"}
    with pytest.raises(ValueError, match="--termination-grace applies to admission"):
        experiment_from({**base, "termination_grace": 5.0})
    with pytest.raises(ValueError, match="--admission-clock: expected cycle or fixpoint"):
        experiment_from({**base, "queues": "q.yaml", "admission_clock": "instant"})
    with pytest.raises(ValueError, match="applies to the cycle clock"):
        experiment_from(
            {**base, "queues": "q.yaml", "admission_clock": "fixpoint", "cycle_period": 1.0}
        )
    with pytest.raises(ValueError, match="expected seconds >= 0"):
        experiment_from({**base, "queues": "q.yaml", "cycle_period": -1.0})


def _over_quota(tmp_path: Path, **wait: Any) -> Path:
    # Quota for 12 GPUs on a cluster of 8: an admitted job can wait for GPUs.
    return _queues(
        tmp_path,
        {"a": {"gpu": 12}},
        waitForPodsReady={"enable": True, "timeout": "60s", **wait},
    )


def test_pods_ready_timeout_evicts_a_job_that_cannot_start_and_requeues_it(
    tmp_path: Path,
) -> None:
    queues = _over_quota(tmp_path, blockAdmission=False)
    trace = _trace([("big", 0, 8, 500, "a"), ("late", 1, 4, 100, "a")])
    result = _run(trace, queues)
    jobs = _jobs(result)
    assert jobs["big"]["first_start_s"] == 0
    # late is admitted at 1 (quota 12) but finds no GPUs: evicted at 61 and requeued after
    # backoffBaseSeconds (60) at 121, evicted at 181 and requeued after 120 s at 301, evicted
    # at 361 and requeued after 240 s at 601; big ended at 500, so late starts at once.
    assert jobs["late"]["first_start_s"] == 601
    assert result.summary["tenants"]["a"]["evictions_by_reason"]["PodsReadyTimeout"] == 3


def test_pods_ready_backoff_limit_deactivates(tmp_path: Path) -> None:
    queues = _over_quota(tmp_path, blockAdmission=False, requeuingStrategy={"backoffLimitCount": 1})
    trace = _trace([("big", 0, 8, 500, "a"), ("late", 1, 4, 100, "a")])
    result = _run(trace, queues)
    late = _jobs(result)["late"]
    assert late["status"] != "finished"
    assert "deactivated by waitForPodsReady" in str(late["reason"])
    assert "backoffLimitCount 1" in str(late["reason"])


def test_pods_ready_block_admission_waits_for_the_admitted_to_start(tmp_path: Path) -> None:
    # second (8 GPUs) is admitted at 1 but cannot start beside first (4 of the 8 GPUs); small
    # (1 GPU, shortest, so SJF runs it first) could start on the free GPUs at 2.
    trace = _trace(
        [("first", 0, 4, 500, "a"), ("second", 1, 8, 100, "a"), ("small", 2, 1, 10, "a")]
    )
    queues = {"a": {"gpu": 16}}
    free = _queues(tmp_path, queues, waitForPodsReady={"enable": True, "blockAdmission": False})
    assert _jobs(_run(trace, free, policy="sjf"))["small"]["first_start_s"] == 2
    # v1beta1 enabled: blockAdmission defaults to true. Nothing is admitted while second is
    # not ready: small waits until second is evicted at its timeout (5m after 1).
    blocked = _queues(tmp_path, queues, waitForPodsReady={"enable": True})
    assert _jobs(_run(trace, blocked, policy="sjf"))["small"]["first_start_s"] == 301


def test_pods_ready_needs_the_cycle_clock(tmp_path: Path) -> None:
    queues = _over_quota(tmp_path)
    trace = _trace([("j", 0, 1, 10, "a")])
    with pytest.raises(TenancyError, match="waitForPodsReady needs Kueue's cycle clock"):
        _run(trace, queues, admission_clock="fixpoint")


@pytest.mark.parametrize(
    ("wait", "version", "expect"),
    [
        ({"enable": True}, "v1beta1", (300.0, True, None, 60.0, 3600.0, True)),
        ({}, "v1beta2", (1800.0, False, None, 60.0, 3600.0, True)),
        (
            {
                "timeout": "1h30m",
                "blockAdmission": False,
                "requeuingStrategy": {
                    "timestamp": "Creation",
                    "backoffLimitCount": 3,
                    "backoffBaseSeconds": 10,
                    "backoffMaxSeconds": 100,
                },
            },
            "v1beta2",
            (5400.0, False, 3, 10.0, 100.0, False),
        ),
    ],
)
def test_wait_for_pods_ready_is_read_with_kueues_defaults(
    tmp_path: Path, wait: dict[str, Any], version: str, expect: tuple[Any, ...]
) -> None:
    docs = documents({"a": {"gpu": 4}})
    docs.append(
        {
            "apiVersion": f"config.kueue.x-k8s.io/{version}",
            "kind": "Configuration",
            "waitForPodsReady": wait,
        }
    )
    ready = read_manifests(write(tmp_path / "q.yaml", docs)).clock.pods_ready
    assert ready is not None
    got = (
        ready.timeout,
        ready.block_admission,
        ready.backoff_limit,
        ready.backoff_base,
        ready.backoff_max,
        ready.requeue_by_eviction,
    )
    assert got == expect
    assert ready.backoff(1) == ready.backoff_base
    assert ready.backoff(30) == ready.backoff_max


@pytest.mark.parametrize(
    ("wait", "message"),
    [
        ({"enable": True, "timeout": "soon"}, "waitForPodsReady.timeout: expected a duration"),
        ({"enable": True, "recoveryTimeout": "1m"}, "recoveryTimeout: timing a job again"),
        ({"enable": True, "requeuingStrategy": {"backoffLimitCount": -1}}, "backoffLimitCount"),
        ({"enable": True, "blockAdmision": True}, "blockAdmision"),
    ],
)
def test_wait_for_pods_ready_errors_name_the_field(
    tmp_path: Path, wait: dict[str, Any], message: str
) -> None:
    docs = documents({"a": {"gpu": 4}})
    docs.append({"apiVersion": CONFIG_API, "kind": "Configuration", "waitForPodsReady": wait})
    with pytest.raises(TenancyError, match=message):
        read_manifests(write(tmp_path / "q.yaml", docs))


def test_the_live_service_refuses_wait_for_pods_ready(tmp_path: Path) -> None:
    from dlsched.cluster.parse import resolve_cluster as cluster
    from dlsched.service.control.live_admission import LiveAdmission

    with pytest.raises(ValueError, match="waitForPodsReady is modelled in simulations only"):
        LiveAdmission(_over_quota(tmp_path), cluster("1x8"))


# ---- invariants ----------------------------------------------------------------------------
def _checked_run(tmp_path: Path, docs: list[dict[str, Any]], trace: Trace, nodes: int) -> RunResult:
    """A cycle-clock run that checks, after every admission step, that the quota charged to
    admitted workloads that are not being terminated fits every cohort tree's capacity, and
    that no node is charged below zero (a workload released twice)."""
    original = AdmissionStage.run

    def run(stage: AdmissionStage, now: float) -> Any:
        out = original(stage, now)
        quota = stage.admission.quota
        assert stage.queues is not None
        terminating = stage.queues.terminating
        for root in {quota.root[cq] for cq in range(len(stage.names))}:
            for fr, capacity in quota.subtree[root].items():
                used = quota.usage[root].get(fr, 0.0) - sum(
                    (w.assignment or {}).get(fr, 0.0)
                    for w in terminating
                    if quota.root[w.cq] == root
                )
                assert used <= capacity + 1e-6, (now, fr, used, capacity)
        # Charges and releases balance: no node of the tree is ever charged below nothing.
        for node, usage in enumerate(quota.usage):
            assert all(v >= -1e-6 for v in usage.values()), (now, node, dict(usage))
        return out

    queue_map = tmp_path / "map.toml"
    queue_map.write_text('[priority_class.user]\nhi = "high"\nlo = "low"\n')
    config = SimConfig(
        use_partitions=False,
        queues=str(write(tmp_path / "queues.yaml", docs)),
        queue_map=str(queue_map),
        termination_grace_s=5.0,
    )
    AdmissionStage.run = run  # type: ignore[method-assign]
    try:
        return simulate(trace, resolve_cluster(f"{nodes}x8"), config)
    finally:
        AdmissionStage.run = original  # type: ignore[method-assign]


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(setups())
def test_cycle_runs_finish_every_job_never_overcommit_and_repeat(
    tmp_path: Path, setup: tuple[list[dict[str, Any]], Trace, int]
) -> None:
    docs, trace, nodes = setup
    first = _checked_run(tmp_path, docs, trace, nodes)
    again = _checked_run(tmp_path, docs, trace, nodes)
    rows = first.jobs.to_pylist()
    assert rows == again.jobs.to_pylist()
    # Every job fits its queue's tree (setups size the cluster to the quotas), so every one
    # either finishes or was set aside at arrival for a reason.
    for row in rows:
        assert row["status"] == "finished" or row["reason"], row
