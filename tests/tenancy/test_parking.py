"""Parking queues is only a saving: on random cohort trees, quotas, limits, preemption and
queueing policies, priorities and fair sharing, a run admits, evicts and finishes every job
exactly as the reference that re-checks every waiting queue of a tree after every change of
its quota (Kueue requeues inadmissible workloads on each cohort change)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import RunResult, simulate
from dlsched.tenancy.admission import Admission, Workload
from dlsched.tenancy.manifests import read_manifests
from dlsched.trace.schema import Trace
from tests.tenancy.kueue_manifests import API, documents, write
from tests.tenancy.strategies import policies


@st.composite
def setups(draw: st.DrawFn) -> tuple[list[dict[str, Any]], Trace, int]:
    teams = draw(st.integers(1, 3))
    n = draw(st.integers(2, 8))
    queues: dict[str, dict[str, Any]] = {}
    for q in range(n):
        spec: dict[str, Any] = {"gpu": draw(st.integers(1, 8))}
        if draw(st.integers(0, 5)):
            spec["cohort"] = f"team{q % teams}"
        spec |= draw(policies())
        if "cohort" in spec and draw(st.integers(0, 3)) == 0:
            spec["borrow"] = draw(st.integers(0, 8))
        if "cohort" in spec and draw(st.integers(0, 3)) == 0:
            spec["lend"] = draw(st.integers(0, spec["gpu"]))
        queues[f"q{q}"] = spec
    cohorts = {f"team{t}": {"parent": "org"} for t in range(teams)} | {"org": {}}
    docs = documents(queues, cohorts, fair_sharing=draw(st.booleans()))
    docs += [
        {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in (("high", 100), ("low", 1))
    ]
    jobs = draw(st.integers(20, 90))
    rows = {
        "submit_time": sorted(draw(st.lists(st.integers(0, 600), min_size=jobs, max_size=jobs))),
        "num_gpus": draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=jobs, max_size=jobs)),
        "duration": draw(st.lists(st.integers(1, 900), min_size=jobs, max_size=jobs)),
        "vc": draw(st.lists(st.sampled_from(sorted(queues)), min_size=jobs, max_size=jobs)),
        "user": draw(st.lists(st.sampled_from(["hi", "lo", "mid"]), min_size=jobs, max_size=jobs)),
    }
    trace = Trace.from_columns({"job_id": [str(i) for i in range(jobs)], **rows}, "parking")
    nodes = math.ceil(sum(q["gpu"] for q in queues.values()) / 8)
    return docs, trace, nodes


def _run(tmp_path: Path, docs: list[dict[str, Any]], trace: Trace, nodes: int) -> RunResult:
    queue_map = tmp_path / "map.toml"
    queue_map.write_text('[priority_class.user]\nhi = "high"\nlo = "low"\n')
    config = SimConfig(
        use_partitions=False,
        queues=str(write(tmp_path / "queues.yaml", docs)),
        queue_map=str(queue_map),
        admission_clock="fixpoint",
    )
    return simulate(trace, resolve_cluster(f"{nodes}x8"), config)


def _outcome(result: RunResult) -> tuple[list[tuple[Any, ...]], Any]:
    keys = ("job_id", "status", "first_start_s", "end_s", "preemptions")
    jobs = [tuple(row[k] for k in keys) for row in result.jobs.to_pylist()]
    return jobs, result.summary["preemptions_by_cause"]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(setup=setups())
def test_parking_admits_as_rechecking_every_queue(
    setup: tuple[list[dict[str, Any]], Trace, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs, trace, nodes = setup
    parked = _outcome(_run(tmp_path, docs, trace, nodes))
    with monkeypatch.context() as m:
        m.setattr(Admission, "recheck_all", True)
        reference = _outcome(_run(tmp_path, docs, trace, nodes))
    assert parked == reference


def test_the_reference_rechecks_and_the_default_parks() -> None:
    # The test above compares two different paths only if parking is on by default.
    assert Admission.recheck_all is False


def _admission(tmp_path: Path, queues: dict[str, dict[str, Any]]) -> Admission:
    return Admission(read_manifests(write(tmp_path / "queues.yaml", documents(queues))))


def _workload(
    adm: Admission, seq: Iterator[int], name: str, queue: str, gpus: int, created: float
) -> Workload:
    priority = 1 if name.startswith("low") else 100
    cq = adm.quota.index[queue]
    return Workload(name, cq, priority, created, next(seq), {"gpu": float(gpus)})


def _running(
    adm: Admission, seq: Iterator[int], jobs: Iterable[tuple[str, str, int]]
) -> dict[str, Workload]:
    """Workloads (name, queue, GPUs) admitted at time 0 as a starting state, by name."""
    running = {}
    for name, queue, gpus in jobs:
        running[name] = _workload(adm, seq, name, queue, gpus, 0.0)
        assert adm.admit_now(running[name], 0.0)
    return running


def _eviction_mid_round(tmp_path: Path) -> list[list[str]]:
    """A round in which a parked queue's head is skipped at its turn (an earlier candidate
    took the free quota) and a later candidate's eviction frees quota: the skipped head must
    wait for the next round, where a head that sorts before it takes that quota."""
    adm = _admission(
        tmp_path,
        {
            "qa": {"gpu": 1, "cohort": "team"},
            "qx": {"gpu": 3, "cohort": "team"},
            "qp": {"gpu": 3, "cohort": "team", "reclaim": "Any"},
            "qb": {"gpu": 1, "cohort": "team"},
        },
    )
    seq = count()
    running = _running(adm, seq, (("b1", "qb", 2), ("r1", "qx", 2), ("b2", "qb", 4)))
    for name, queue, gpus, created in (
        ("x", "qx", 2, 1.0),
        ("x2", "qx", 1, 1.5),
        ("a", "qa", 1, 2.0),
    ):
        adm.submit(_workload(adm, seq, name, queue, gpus, created))
    rounds = [[a.workload.key for a in adm.schedule(10.0)]]
    adm.release(running["r1"])
    adm.submit(_workload(adm, seq, "p", "qp", 3, 3.0))
    admitted = adm.schedule(20.0)
    rounds.append([a.workload.key for a in admitted])
    rounds.append([e.workload.key for a in admitted for e in a.evictions])
    return rounds


def _reclaim_after_a_lower_admission(tmp_path: Path) -> list[list[str]]:
    """A head that may reclaim only lower-priority workloads, parked while there are none, may
    reclaim once another queue admits one (taking the quota that was free); then a release
    smaller than what the head lacks at the root by then admits it by evicting that
    workload."""
    adm = _admission(
        tmp_path,
        {
            "qa": {"gpu": 6, "cohort": "team", "reclaim": "LowerPriority"},
            "qb": {"gpu": 1, "cohort": "team"},
            "qc": {"gpu": 1, "cohort": "team"},
        },
    )
    seq = count()
    running = _running(adm, seq, (("b0", "qb", 2), ("b1", "qb", 4)))
    adm.submit(_workload(adm, seq, "h", "qa", 4, 1.0))
    rounds = [[a.workload.key for a in adm.schedule(10.0)]]
    adm.submit(_workload(adm, seq, "low", "qc", 2, 2.0))
    rounds.append([a.workload.key for a in adm.schedule(20.0)])
    adm.release(running["b0"])
    admitted = adm.schedule(30.0)
    rounds.append([a.workload.key for a in admitted])
    rounds.append([f"{e.workload.key}:{e.cause}" for a in admitted for e in a.evictions])
    return rounds


def _victim_admitted_directly(tmp_path: Path) -> list[list[str]]:
    """A head parked with nothing to preempt in its queue gets a victim through
    :meth:`Admission.admit_now` (a restarted service adopting a running job): a later
    release, too small to admit it alone, admits it by preempting that workload. (It asks
    its queue's whole nominal quota: beyond it, without ``borrowWithinCohort``, Kueue looks
    for no preemption at all.)"""
    adm = _admission(
        tmp_path,
        {
            "q": {"gpu": 4, "cohort": "team", "within": "LowerPriority"},
            "p": {"gpu": 2, "cohort": "team"},
        },
    )
    seq = count()
    first = _workload(adm, seq, "a", "p", 2, 0.0)
    other = _workload(adm, seq, "b", "p", 2, 0.0)
    assert adm.admit_now(first, 0.0) and adm.admit_now(other, 0.0)
    adm.submit(_workload(adm, seq, "h", "q", 4, 1.0))
    rounds = [[a.workload.key for a in adm.schedule(1.0)]]
    assert adm.admit_now(_workload(adm, seq, "low", "q", 1, 2.0), 2.0)
    adm.release(other)
    admitted = adm.schedule(3.0)
    rounds.append([a.workload.key for a in admitted])
    rounds.append([f"{e.workload.key}:{e.cause}" for a in admitted for e in a.evictions])
    return rounds


def _reclaim_after_an_own_release(tmp_path: Path) -> list[list[str]]:
    """A head parked in a bucket because it would pass its queue's nominal quota (so it may
    not reclaim) comes within it when a workload of its own queue ends: that release, too
    small to admit it alone, admits it by reclaiming the borrower's newest workload."""
    adm = _admission(
        tmp_path,
        {"qa": {"gpu": 4, "cohort": "team", "reclaim": "Any"}, "qb": {"gpu": 4, "cohort": "team"}},
    )
    seq = count()
    running = _running(
        adm, seq, (("b1", "qb", 4), ("b2", "qb", 1), ("a1", "qa", 2), ("a2", "qa", 1))
    )
    adm.submit(_workload(adm, seq, "a3", "qa", 2, 1.0))
    rounds = [[a.workload.key for a in adm.schedule(10.0)]]
    adm.release(running["a2"])
    admitted = adm.schedule(20.0)
    rounds.append([a.workload.key for a in admitted])
    rounds.append([f"{e.workload.key}:{e.cause}" for a in admitted for e in a.evictions])
    return rounds


def _heads_of_one_queue_in_buckets(tmp_path: Path) -> list[list[str]]:
    """A queue whose heads (4, 4 and 1 GPUs, oldest first) wait in buckets: a release of
    one GPU admits the newest, small one; releases too small for a 4-GPU head admit none;
    then the 4-GPU heads are admitted in order, one per release that frees enough."""
    adm = _admission(
        tmp_path, {"qa": {"gpu": 4, "cohort": "team"}, "qb": {"gpu": 4, "cohort": "team"}}
    )
    seq = count()
    running = _running(adm, seq, (("b1", "qb", 4), ("b2", "qb", 3), ("b3", "qb", 1)))
    heads = {}
    for name, gpus, created in (("h1", 4, 1.0), ("h2", 4, 2.0), ("h3", 1, 3.0)):
        heads[name] = _workload(adm, seq, name, "qa", gpus, created)
        adm.submit(heads[name])
    rounds = [[a.workload.key for a in adm.schedule(10.0)]]
    for at, released in ((20.0, running["b3"]), (30.0, running["b2"]), (40.0, running["b1"])):
        adm.release(released)
        rounds.append([a.workload.key for a in adm.schedule(at)])
    adm.release(heads["h3"])
    rounds.append([a.workload.key for a in adm.schedule(50.0)])
    return rounds


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        (_eviction_mid_round, [[], ["x", "p", "x2"], ["b2"]]),
        (_reclaim_after_a_lower_admission, [[], ["low"], ["h"], ["low:reclaim"]]),
        (_victim_admitted_directly, [[], ["h"], ["low:priority"]]),
        (_reclaim_after_an_own_release, [[], ["a3"], ["b2:reclaim"]]),
        (_heads_of_one_queue_in_buckets, [[], ["h3"], [], ["h1"], ["h2"]]),
    ],
)
def test_parked_scenarios_admit_as_the_reference(
    scenario: Any, expected: list[list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parked = scenario(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(Admission, "recheck_all", True)
        reference = scenario(tmp_path)
    assert parked == reference == expected
