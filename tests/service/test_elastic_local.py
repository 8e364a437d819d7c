"""An elastic policy (Pollux) live on the local back end with the real training workload: a job is
resized (SIGTERM → checkpoint → exit 75 → relaunched with the new GPU count and batch), resumes
from its checkpoint, and the throughputs it measures reach the policy."""

from __future__ import annotations

import itertools
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from dlsched.backends.local import LocalBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.elastic.policy import ElasticPolicy
from dlsched.elastic.registry import create_elastic_policy
from dlsched.elastic.types import Allocation, JobInfo
from dlsched.service.control.controller import Controller
from dlsched.service.control.elastic_book import ElasticBook, ElasticSpec
from dlsched.service.store.database import Store
from dlsched.service.store.records import COMPLETED, FINAL, NewJob
from dlsched.workloads.gpu_log import read_gpu_log

pytest.importorskip("torch")

CHECKPOINT_EVERY = 10
_RESUMED = re.compile(r"resumed from checkpoint at step (\d+) \((\d+)/(\d+) samples\)")


def train_command(epoch_samples: int) -> tuple[str, ...]:
    return (
        sys.executable,
        "-m",
        "dlsched.workloads.train",
        "--epochs",
        "1",
        "--epoch-samples",
        str(epoch_samples),
        "--checkpoint-every",
        str(CHECKPOINT_EVERY),
    )


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[Store, LocalBackend, Controller]]:
    store = Store(tmp_path / "state.db")
    backend = LocalBackend(tmp_path / "jobs", store.instance)
    ctl = Controller(
        store,
        backend,
        resolve_cluster("1x4"),
        # A 1-s restart delay in Pollux's re-allocation factor: the jobs grow within seconds.
        create_elastic_policy("pollux", {"restart_delay_s": "1"}),
        grace_s=20.0,
        interval_s=3.0,
    )
    yield store, backend, ctl
    backend.kill_all()
    store.close()


@pytest.mark.slow
@pytest.mark.long
def test_pollux_resizes_a_training_job_that_resumes_from_its_checkpoint(
    live: tuple[Store, LocalBackend, Controller],
) -> None:
    store, backend, ctl = live
    book = ElasticBook(store)
    policy = ctl.policy
    assert isinstance(policy, ElasticPolicy)
    shown: list[JobInfo] = []
    decide = policy.decide

    def spy(now: float, jobs: Sequence[JobInfo]) -> Mapping[str, Allocation]:
        shown.extend(jobs)
        return decide(now, jobs)

    policy.decide = spy  # type: ignore[method-assign]
    seqs = []
    for name, samples in (("a", 4000), ("b", 2000)):
        spec = ElasticSpec("cifar10", 4, 16)
        row = store.submit(NewJob(name, "u", 1, train_command(samples), 16), time.time())
        ctl.submitted(row.seq, spec)
        seqs.append(row.seq)
    reports: dict[int, list[dict[str, Any]]] = {s: [] for s in seqs}
    end = time.monotonic() + 150.0
    while not all(r.state in FINAL for r in store.jobs()):
        assert time.monotonic() < end, [(r.id, r.state, r.restarts) for r in store.jobs()]
        ctl.step()
        for seq in seqs:
            status = ctl.reported_status(seq)
            if status and (not reports[seq] or reports[seq][-1] != status):
                reports[seq].append(dict(status))
        time.sleep(0.3)

    rows = {r.seq: r for r in store.jobs()}
    assert all(rows[s].state == COMPLETED for s in seqs)
    logs = {s: read_gpu_log(backend.workdir(f"j{s}") / "gpu_log.txt") for s in seqs}
    resized = [s for s in seqs if len({len(r.gpus) for r in logs[s]}) > 1]
    assert resized, "no job ran at two sizes"
    for seq in resized:
        work = backend.workdir(f"j{seq}")
        runs = logs[seq]
        # A run stopped before its process started logs nothing (it restarts from scratch);
        # each logged run belongs to the last attempt started before it.
        started = [(t, d["attempt"]) for t, k, d in store.events(seq) if k == "started"]
        assert len(runs) <= len(started) == rows[seq].restarts + 1
        attempts = [max(a for t, a in started if t <= run.start) for run in runs]
        sizes = [book.attempt(seq, a, ctl.service_id) for a in attempts]
        assert all(size is not None for size in sizes)
        assert [len(r.gpus) for r in runs] == [s.gpus for s in sizes if s is not None]
        assert len({(s.gpus, s.batch_size) for s in sizes if s is not None}) > 1, sizes
        assert len({s.batch_size for s in sizes if s is not None}) > 1, sizes
        # Every run reported the GPU count and per-GPU batch recorded for its attempt.
        for run, size in zip(runs, sizes, strict=True):
            assert size is not None
            mine = [r for r in reports[seq] if run.start <= r["time"] <= (run.stop or 0.0)]
            assert {(r["num_gpus"], r["batch_size"]) for r in mine} <= {
                (size.gpus, size.batch_size)
            }
        # Every run after the first resumed from the checkpoint its predecessor wrote on
        # SIGTERM: progress never went back by more than one checkpoint interval.
        resumed = [int(m.group(2)) for m in _RESUMED.finditer((work / "log.txt").read_text())]
        assert len(resumed) == len(runs) - 1
        for prev, samples in zip(runs, resumed, strict=False):
            during = [r for r in reports[seq] if prev.start <= r["time"] <= (prev.stop or 0.0)]
            if during:
                reached = max(r["samples"] for r in during)
                step = CHECKPOINT_EVERY * during[-1]["global_batch_size"]
                assert samples >= reached - step, (samples, reached)
    # The throughputs the jobs measured reached the policy, keyed by the size they ran at.
    measured = {(i.index, n): v for i in shown for n, v in i.throughputs.items() if v}
    assert measured
    for (seq, n), values in measured.items():
        reported = {r["samples_per_s"] for r in reports[seq] if r["num_gpus"] == n}
        assert set(values) <= reported and all(v > 0 for v in values)
    # No GPU was held by two running jobs at once, from the jobs' own logs.
    spans = []
    for seq in seqs:
        for run in read_gpu_log(backend.workdir(f"j{seq}") / "gpu_log.txt"):
            assert run.stop is not None
            spans += [(gpu, run.start, run.stop) for gpu in run.gpus]
    spans.sort()
    for (g1, _, e1), (g2, b2, _) in itertools.pairwise(spans):
        assert g1 != g2 or e1 <= b2, f"GPU {g1} held twice"
