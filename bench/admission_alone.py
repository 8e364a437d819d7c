"""The admission stage alone: how much of a run with queues is the stage's own work, and how
much slower that work runs inside the simulator than by itself.

    python bench/admission_alone.py [--jobs 300000] [--queues 1000] [--load 0.8] [--repeat 3]

One simulation with queues (the setup of ``tenants_scale.py``) records every call the
simulator makes to its admission stage (arrivals, admission rounds, finishes, requeues) and
times them; the calls are then replayed ``--repeat`` times into a fresh stage built from the
same manifests, which must make the same decisions (checked), timing the stage by itself. A
plain FIFO run of the same jobs is printed for scale.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from dlsched.cluster.parse import resolve_cluster
from dlsched.sim.config import SimConfig
from dlsched.sim.simulator import Simulator, simulate
from dlsched.tenancy.manifests import read_manifests
from dlsched.tenancy.queue_map import QueueMap
from dlsched.tenancy.stage import AdmissionStage, Decision
from tenants_scale import manifests, trace

Call = tuple[Any, ...]


def _decisions(out: list[Decision]) -> list[tuple[int, tuple[tuple[int, str], ...]]]:
    """A round's decisions by trace row (jobs in a run are objects, in a replay their rows),
    sorted: their order is not part of them (the simulator hands admitted jobs to policies
    that order them by their own keys)."""
    rows = [(getattr(d.job, "row", d.job), d.evicted) for d in out]
    return sorted((r, tuple((getattr(v, "row", v), c) for v, c in ev)) for r, ev in rows)


def record(stage: AdmissionStage, calls: list[Call], spent: list[float]) -> None:
    """Wrap ``stage``'s entry points (on the instance) so that each call is logged to
    ``calls`` and its time added to ``spent[0]``."""
    arrive, run, finish, requeue = stage.arrive, stage.run, stage.finish, stage.requeue
    clock = time.perf_counter

    def timed(call: Callable[[], Any]) -> Any:
        started = clock()
        out = call()
        spent[0] += clock() - started
        return out

    def on_arrive(job: Any, row: int, demand: Any, now: float) -> str | None:
        calls.append(("arrive", job.row, row, demand, now))
        return timed(lambda: arrive(job, row, demand, now))  # type: ignore[no-any-return]

    def on_run(now: float) -> list[Decision]:
        out: list[Decision] = timed(lambda: run(now))
        calls.append(("run", now, _decisions(out)))
        return out

    def on_finish(job: Any, now: float) -> None:
        calls.append(("finish", job.row, now))
        timed(lambda: finish(job, now))

    def on_requeue(job: Any) -> None:
        calls.append(("requeue", job.row))
        timed(lambda: requeue(job))

    stage.arrive = on_arrive  # type: ignore[method-assign]
    stage.run = on_run  # type: ignore[method-assign]
    stage.finish = on_finish  # type: ignore[method-assign]
    stage.requeue = on_requeue  # type: ignore[method-assign]


def replay(stage: AdmissionStage, calls: list[Call]) -> float:
    """Make ``calls`` on ``stage`` (jobs are their rows); the seconds spent in the stage.
    Raises if a round decides otherwise than recorded."""
    clock = time.perf_counter
    spent = 0.0
    for call in calls:
        kind = call[0]
        started = clock()
        if kind == "run":
            out = stage.run(call[1])
            spent += clock() - started
            if _decisions(out) != call[2]:
                raise SystemExit(f"the replay decided otherwise than the run at t={call[1]}")
            continue
        if kind == "arrive":
            stage.arrive(call[1], call[2], call[3], call[4])
        elif kind == "finish":
            stage.finish(call[1], call[2])
        else:
            stage.requeue(call[1])
        spent += clock() - started
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=300_000)
    ap.add_argument("--queues", type=int, default=1000)
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument("--repeat", type=int, default=3, help="replays of the recorded calls")
    args = ap.parse_args()
    cluster = resolve_cluster(f"{args.queues}x8")
    t = trace(args.jobs, args.queues, args.queues * 8, args.load)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "queues.yaml"
        path.write_text(yaml.safe_dump_all(manifests(args.queues, 8)))
        started = time.perf_counter()
        simulate(t, cluster, SimConfig(use_partitions=False))
        fifo = time.perf_counter() - started

        started = time.perf_counter()
        sim = Simulator(t, cluster, SimConfig(use_partitions=False, queues=str(path)))
        assert sim.admission is not None
        calls: list[Call] = []
        in_run = [0.0]
        record(sim.admission, calls, in_run)
        sim.run()
        queued = time.perf_counter() - started

        tenancy = read_manifests(path)
        vcs = t.table.column("vc").to_pylist()
        alone = []
        for _ in range(args.repeat):
            stage = AdmissionStage(tenancy, QueueMap(), [], vcs, [None] * len(vcs))
            alone.append(replay(stage, calls))
    per_job = 1e6 / args.jobs
    print(f"plain FIFO run            {fifo:7.2f} s")
    print(f"run with queues           {queued:7.2f} s  ({queued / fifo:.2f}x FIFO)")
    print(
        f"  its stage calls         {in_run[0]:7.2f} s  ({in_run[0] * per_job:.1f} us per job, "
        f"{len(calls):,} calls)"
    )
    best = min(alone)
    print(
        f"the same calls replayed   {best:7.2f} s  ({best * per_job:.1f} us per job; best of "
        f"{len(alone)}: {', '.join(f'{a:.2f}' for a in alone)}; same decisions)"
    )
    print(f"stage in the run / alone  {in_run[0] / best:7.2f}x")


if __name__ == "__main__":
    main()
