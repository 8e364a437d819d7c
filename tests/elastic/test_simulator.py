"""Invariants of elastic jobs on the one simulator: no GPU over-commit, every job finishes, no
job beats its best allocation, and a run is a function of its seed; an over-committing policy
is an error naming it; Pollux really resizes jobs and changes their batches."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policies.pollux import Pollux
from dlsched.elastic.policy import AllocationError, ElasticPolicy
from dlsched.elastic.types import Allocation, JobInfo, cluster_view
from dlsched.perf.perfbook import PerfBook
from dlsched.sim.config import RESTART_PRESETS
from tests.elastic.helpers import MIXED, Row, batch_of, register, run
from tests.sim.conftest import assert_no_overcommit

FIRST_START_S = RESTART_PRESETS["pollux"].first_start_s
"""What an elastic job waits on its GPUs at its first start (the elastic kind's preset)."""


@functools.cache
def best_time(app: str, batch: int, cluster_text: str) -> float:
    """A lower bound on a job's run time: its first-start stall, then each epoch at the fastest
    progress rate of any GPU count, consolidated or spread one per node, at the goodput-best
    or its fixed batch."""
    perf = PerfBook()
    cluster = cluster_view(resolve_cluster(cluster_text))
    eff = perf.efficiency(app)
    gpn = max(n.gpus for n in cluster.nodes)
    total = cluster.total_gpus
    variant = cluster.main_variant
    done, t = 0.0, FIRST_START_S
    for e, need in enumerate(eff.required):
        best = 0.0
        for n in range(1, total + 1):
            shapes = {(-(-n // gpn), n)}
            if n <= len(cluster.nodes):
                shapes.add((n, n))
            for nodes, r in shapes:
                best = max(best, perf.best_batch(app, variant, e, nodes, r).progress_rate)
                fixed = perf.fixed_batch(app, r, batch)
                placement = (
                    (gpn,) * (r // gpn) + ((r % gpn,) if r % gpn else ()) if nodes < r else (1,) * r
                )
                step = perf.iteration_time(
                    app, variant, placement, fixed.local_bsz, fixed.accum_steps
                )
                best = max(best, eff.gain(e, fixed.global_bsz(r)) / step)
        t += (need - done) / best
        done = need
    return t


workloads = st.lists(
    st.tuples(
        st.sampled_from(["ncf"]),
        st.floats(min_value=0, max_value=1_500).map(round),
        st.sampled_from([1, 2, 4, 8]),
    ),
    min_size=1,
    max_size=5,
)


@pytest.mark.slow
@settings(max_examples=6, deadline=None)
@given(workloads, st.sampled_from(["fifo", "tiresias", "pollux", "ones"]))
def test_invariants(rows: list[Row], policy: str) -> None:
    rows = sorted(rows, key=lambda r: r[1])
    result = run(rows, "2x4", policy, record_segments=True)
    assert result.segments is not None
    assert_no_overcommit(result.segments)
    assert all(s.node in (0, 1) and 0 <= s.gpu < 4 for s in result.segments)
    jobs = result.jobs.to_pydict()
    assert jobs["status"] == ["finished"] * len(rows)
    for (app, submit, gpus), end, jct in zip(rows, jobs["end_s"], jobs["jct_s"], strict=True):
        assert end is not None and jct == pytest.approx(end - submit)
        assert jct >= best_time(app, batch_of(app, gpus), "2x4") * (1 - 1e-9)


@pytest.mark.parametrize("policy", ["ones", "pollux"])
def test_deterministic_under_a_seed(policy: str) -> None:
    rows = [row for row in MIXED if row[0] == "ncf"]
    tables = [run(rows, "2x4", policy, seed=seed).jobs for seed in (3, 3)]
    assert tables[0].equals(tables[1])


def test_completion_between_rounds() -> None:
    # Tiresias decides at events; the job ends when its last epoch does, not at a round.
    result = run([("ncf", 0.0, 2)], "1x4", "tiresias")
    end = result.jobs.column("end_s")[0].as_py()
    assert end % 60 != 0
    alone = PerfBook().isolated_time("ncf", "t4", 2, batch_of("ncf", 2), 4)
    # alone on its 2 GPUs from t = 0: the run time plus the first start's stall, nothing more
    assert end == pytest.approx(alone + FIRST_START_S)


@dataclass
class OverCommit(ElasticPolicy):
    name = "overcommit"

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        return {j.name: Allocation(((0, 5),), 32) for j in jobs}


def test_over_commit_is_an_error_naming_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch, OverCommit)
    with pytest.raises(AllocationError, match="'overcommit' over-commits node 'node-000'"):
        run([("ncf", 0.0, 1)], "1x4", "overcommit")


@dataclass
class SeenPollux(Pollux):
    """Pollux, keeping every job view it was shown."""

    seen: list[JobInfo] = field(default_factory=list)

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        self.seen.extend(jobs)
        return super().decide(now, jobs)


def test_pollux_grows_jobs_and_changes_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    made = register(monkeypatch, SeenPollux)
    result = run([("cifar10", 0.0, 1)], "2x4", "pollux", record_segments=True)
    assert result.jobs.column("status").to_pylist() == ["finished"]
    policy = made()[-1]
    assert isinstance(policy, SeenPollux)
    held = {j.gpus for j in policy.seen}
    batches = {j.allocation.global_bsz() for j in policy.seen if j.allocation is not None}
    assert max(held) > 1 and len(batches) > 1
    # The job's throughput was measured at more than one GPU count.
    assert len(policy.seen[-1].throughputs) > 1
    assert policy.seen[-1].max_gpus_seen == max(held)
    assert result.segments is not None
    assert len({(s.node, s.gpu) for s in result.segments}) >= max(held)
