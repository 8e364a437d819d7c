"""Invariants of the elastic simulator: no GPU over-commit, every job finishes, no job beats
its best allocation, and a run is a function of its seed."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytest
from dlsched.elastic.policies.tiresias import ElasticTiresias
from dlsched.elastic.run import run_elastic
from dlsched.elastic.simulator import ElasticConfig, ElasticJobSpec, ElasticSimulator
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policies.pollux import Pollux
from dlsched.elastic.policy import AllocationError, ElasticPolicy
from dlsched.elastic.registry import create_elastic_policy
from dlsched.elastic.types import Allocation, ClusterView, FinishedInfo, JobInfo
from dlsched.perf.perfbook import PerfBook
from tests.elastic.helpers import MIXED, specs, trace_of, view


@dataclass
class Checked(ElasticPolicy):
    """Stands beside a real policy: passes its answers on and checks each against the nodes."""

    inner: ElasticPolicy
    name = "checked"
    peak_gpus: int = 0

    def bind(self, cluster: ClusterView, perf: PerfBook, seed: int) -> None:
        super().bind(cluster, perf, seed)
        self.inner.bind(cluster, perf, seed)

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        answer = self.inner.decide(now, jobs)
        used = [0] * len(self.cluster.nodes)
        for alloc in answer.values():
            for node, count in alloc.gpus:
                used[node] += count
        assert all(u <= n.gpus for u, n in zip(used, self.cluster.nodes, strict=True))
        self.peak_gpus = max(self.peak_gpus, sum(used))
        return answer

    def finished(self, done: Sequence[FinishedInfo]) -> None:
        self.inner.finished(done)


@functools.cache
def best_time(app: str, batch: int, cluster_text: str, restart_s: float) -> float:
    """A lower bound on a job's run time: each epoch at the fastest progress rate of any GPU
    count, consolidated or spread one per node, at the goodput-best or its fixed batch."""
    perf = PerfBook()
    cluster = view(cluster_text)
    job = ElasticJobSpec("bound", 0.0, app, 1, batch)
    eff = perf.efficiency(job.application)
    gpn = max(n.gpus for n in cluster.nodes)
    total = cluster.total_gpus
    variant = cluster.main_variant
    done, t = 0.0, restart_s
    for e, need in enumerate(eff.required):
        best = 0.0
        for n in range(1, total + 1):
            shapes = {(-(-n // gpn), n)}
            if n <= len(cluster.nodes):
                shapes.add((n, n))
            for nodes, r in shapes:
                best = max(
                    best, perf.best_batch(job.application, variant, e, nodes, r).progress_rate
                )
                fixed = perf.fixed_batch(job.application, r, job.batch_size)
                placement = (
                    (gpn,) * (r // gpn) + ((r % gpn,) if r % gpn else ()) if nodes < r else (1,) * r
                )
                step = perf.iteration_time(
                    job.application, variant, placement, fixed.local_bsz, fixed.accum_steps
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
@given(workloads, st.sampled_from(["tiresias", "pollux", "ones"]))
def test_invariants(rows: list[tuple[str, float, int]], policy: str) -> None:
    jobs = specs(rows)
    cluster = view("2x4")
    perf = PerfBook()
    checked = Checked(create_elastic_policy(policy))
    outcome = ElasticSimulator(jobs, cluster, checked, ElasticConfig(), perf).run()
    assert checked.peak_gpus <= cluster.total_gpus
    for state in outcome.jobs:
        assert state.end is not None, f"{state.spec.name} never finished"
        assert state.progress == pytest.approx(state.eff.total_progress)
        jct = state.end - state.spec.submit_time
        bound = best_time(state.spec.application, state.spec.batch_size, "2x4", 30.0)
        assert jct >= bound * (1 - 1e-9)


@pytest.mark.parametrize("policy", ["ones", "pollux"])
def test_deterministic_under_a_seed(policy: str) -> None:
    jobs = specs([row for row in MIXED if row[0] == "ncf"])
    cluster = resolve_cluster("2x4")
    runs = [run_elastic(trace_of(jobs), cluster, policy, seed=seed).jobs for seed in (3, 3)]
    assert runs[0].equals(runs[1])


def test_completion_inside_a_round() -> None:
    jobs = specs([("ncf", 0.0, 2)])
    cluster = view("1x4")
    perf = PerfBook()
    outcome = ElasticSimulator(jobs, cluster, ElasticTiresias(), ElasticConfig(), perf).run()
    end = outcome.jobs[0].end
    assert end is not None and end % 60 != 0
    alone = perf.isolated_time("ncf", "t4", 2, jobs[0].batch_size, 4)
    # alone on its 2 GPUs from t = 0: the run time plus one restart delay, nothing more
    assert end == pytest.approx(alone + 30.0)


@dataclass
class OverCommit(ElasticPolicy):
    name = "overcommit"

    def decide(self, now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        return {j.name: Allocation(((0, 5),), 32) for j in jobs}


def test_over_commit_is_an_error_naming_the_policy() -> None:
    sim = ElasticSimulator(specs([("ncf", 0.0, 1)]), view("1x4"), OverCommit())
    with pytest.raises(AllocationError, match="'overcommit' over-commits node 'node-000'"):
        sim.run()


def test_pollux_grows_jobs_and_changes_batches() -> None:
    jobs = specs([("cifar10", 0.0, 1)])
    outcome = ElasticSimulator(jobs, view("2x4"), Pollux()).run()
    state = outcome.jobs[0]
    assert state.max_gpus > 1
    assert len(state.throughputs) > 1
