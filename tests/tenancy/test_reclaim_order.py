"""Classic preemption's candidates from other queues stream in Kueue's order: lowest priority,
then most recently admitted, then most recently created, only from queues borrowing what the
preemptor asks, as ``reclaimWithinCohort`` allows; also once admission times went back."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.tenancy.admission import Admission, Workload
from dlsched.tenancy.manifests import read_manifests
from tests.tenancy.kueue_manifests import documents, write

QUEUES = 4


def _admission(tmp: Path, reclaim: str) -> Admission:
    queues = {f"q{i}": {"gpu": 2, "cohort": "team", "reclaim": reclaim} for i in range(QUEUES)}
    return Admission(read_manifests(write(tmp / "queues.yaml", documents(queues))))


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    admissions=st.lists(
        st.tuples(
            st.integers(0, QUEUES - 1),  # queue
            st.integers(0, 2),  # priority
            st.sampled_from([0, 0, 1, 3]),  # time step (0: the instant of the one before)
            st.integers(0, 1000),  # creation order
        ),
        min_size=1,
        max_size=QUEUES * 2,
    ),
    reclaim=st.sampled_from(["Any", "LowerPriority"]),
    back=st.booleans(),
    priority=st.integers(0, 3),
)
def test_candidates_in_kueue_order(
    tmp_path: Path,
    admissions: list[tuple[int, int, int, int]],
    reclaim: str,
    back: bool,
    priority: int,
) -> None:
    adm = _admission(tmp_path, reclaim)
    now = 10.0
    for i, (cq, prio, step, created) in enumerate(admissions):
        now += step
        if back and i == len(admissions) // 2:
            now -= 5.0
        wl = Workload(i, cq, prio, float(created), created * 100 + i, {"gpu": 1.0})
        assert adm.admit_now(wl, now)
    probe = Workload("p", 0, priority, now, 10**6, {"gpu": 1.0})
    request = adm._assign(probe).request
    (fr,) = request
    expected = sorted(
        (
            w
            for y in range(1, QUEUES)
            if adm.quota.borrowing(y, fr)
            for w in adm.admitted[y]
            if reclaim == "Any" or w.priority < priority
        ),
        key=lambda w: (w.priority, -w.admitted_at, -w.seq),
    )
    assert [w.key for w in adm.reclaimable(probe, request)] == [w.key for w in expected]
