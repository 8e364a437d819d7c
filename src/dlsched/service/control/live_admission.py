"""Kueue admission in front of the live controller's scheduler (``dlsched serve --queues``).

The same :class:`~dlsched.tenancy.stage.AdmissionStage` the simulator runs: a waiting job becomes
a workload in the ClusterQueue its LocalQueue (the submission's ``queue``) feeds, and reaches the
policy only once admitted. Its quota, the GPUs it asked for, stays charged from admission until
it ends, across preemptions by the policy; an admission that evicts it takes the quota back, and
the job (stopped through a checkpoint if it runs) waits for admission again. Jobs are known by
their store row number.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from dlsched.cluster.spec import ClusterSpec
from dlsched.cluster.state import Demand
from dlsched.tenancy.kueue_metrics import exposition

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(
    method: Callable[Concatenate[LiveAdmission, _P], _R],
) -> Callable[Concatenate[LiveAdmission, _P], _R]:
    """The method under the admission's lock: the control loop changes the admission state,
    a dry run from the API reads it (and moves quota while it looks for preemptions)."""

    def locked(self: LiveAdmission, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)

    functools.update_wrapper(locked, method)
    return locked


log = logging.getLogger(__name__)


class LiveAdmission:
    """Which of the live service's jobs are admitted (module docstring). Only the control
    loop's thread changes it; the API reads :meth:`usage` (a snapshot taken at each
    :meth:`run`) and :meth:`admits`."""

    def __init__(self, queues: str | Path | list[str | Path], cluster: ClusterSpec) -> None:
        from dlsched.tenancy.manifests import read_manifests
        from dlsched.tenancy.queue_map import QueueMap
        from dlsched.tenancy.stage import AdmissionStage

        gpu_types = sorted({n.gpu_type for n in cluster.nodes if n.gpu_type})
        tenancy = read_manifests(queues)
        if tenancy.clock.pods_ready is not None:
            raise ValueError(
                f"{tenancy.source}: waitForPodsReady is modelled in simulations only; the live "
                "service admits by quota and leaves waiting for pods to its back end"
            )
        self.stage = AdmissionStage(tenancy, QueueMap(), gpu_types, [], [])
        self._waiting: set[int] = set()
        self._admitted: set[int] = set()
        self._lock = threading.RLock()
        self._evicted: set[int] = set()
        """Admitted jobs an admission evicted, until they wait for admission again."""
        self._usage = self._measure()
        self._kueue = exposition(self.stage)

    def check_queues(self, queues: dict[str, frozenset[str]], source: str) -> None:
        """ValueError, naming ``source`` and the tenant, unless every queue each tenant of
        ``queues`` (tenant → queue names) may submit to is a LocalQueue of the manifests."""
        for tenant, names in queues.items():
            for name in sorted(names):
                if isinstance(self.stage.cluster_queue(name), str):
                    raise ValueError(
                        f"{source}: tenants.{tenant}.queues: {name!r} is no LocalQueue of "
                        f"--queues ({self.stage.tenancy.source})"
                    )

    @_locked
    def arrive(self, seq: int, queue: str | None, demand: Demand, now: float) -> str | None:
        """Job ``seq`` waits (again) to run; why it never can be admitted, or None. A job the
        policy preempted keeps its admission; an evicted one waits for admission again."""
        if seq in self._admitted or seq in self._waiting:
            return None
        if seq in self._evicted:
            self.requeue(seq, now)
            return None
        if queue is None:
            return "names no queue; this service admits jobs through the queues of --queues"
        reason = self.stage.arrive_in(seq, queue, demand, now)
        if reason is None:
            self._waiting.add(seq)
        return f"queue {queue}: {reason}" if reason is not None else None

    @_locked
    def requeue(self, seq: int, now: float) -> None:
        """Evicted job ``seq``, no longer running, waits for admission again (its quota is
        free from ``now``)."""
        self._evicted.discard(seq)
        self.stage.requeue(seq, now)
        self._waiting.add(seq)

    @_locked
    def adopt(self, seq: int, queue: str | None, demand: Demand, now: float) -> None:
        """Job ``seq`` was found running (a restarted service): charge its quota at once. If
        its queue has no room for it (the manifests changed), it runs on uncharged."""
        if seq in self._admitted:
            return
        if queue is not None and self.stage.adopt(seq, queue, demand, now):
            self._admitted.add(seq)
        else:
            log.warning("job j%d runs outside the quotas of its queue %s", seq, queue)

    @_locked
    def leave(self, seq: int, now: float) -> None:
        """Job ``seq`` ended (or was cancelled): its quota, or its place in the queue, is freed."""
        if seq in self._admitted:
            self._admitted.discard(seq)
            self.stage.finish(seq, now)
        else:
            self._waiting.discard(seq)
            self._evicted.discard(seq)
            self.stage.withdraw(seq)

    def admits(self, seq: int) -> bool:
        """Whether job ``seq`` is admitted (its policy may run it)."""
        return seq in self._admitted

    @_locked
    def run(self, now: float) -> tuple[list[int], list[int]]:
        """Admit what the quotas allow at ``now``: the jobs admitted, and the jobs evicted for
        them (the caller stops those that run and :meth:`requeue`\\ s the others)."""
        admitted: list[int] = []
        evicted: list[int] = []
        decisions = self.stage.run(now)
        for seq in decisions.admitted:
            self._waiting.discard(seq)
            self._admitted.add(seq)
            admitted.append(seq)
        for victim, _cause in decisions.evicted:
            self._admitted.discard(victim)
            self._evicted.add(victim)
            evicted.append(victim)
        self._usage = self._measure()
        self._kueue = exposition(self.stage)
        return admitted, evicted

    @_locked
    def dry_run(self, queue: str, demand: Demand) -> dict[str, Any]:
        """Would a job of ``demand`` submitted to LocalQueue ``queue`` be admitted now, were
        it its queue's head; if not, why; which admitted jobs it would evict (Kueue's
        reasons), and how many waiting jobs of its ClusterQueue come first. Changes nothing."""
        from dlsched.service.store.records import job_id_of

        wl = self.stage.probe(queue, demand)
        if isinstance(wl, str):
            return {"admitted": False, "reason": f"queue {queue}: {wl}"}
        found = self.stage.dry_run(wl)
        return {
            "cluster_queue": self.stage.names[wl.cq],
            "admitted": found.admitted,
            "flavors": list(found.flavors),
            "borrows": found.borrows,
            "preempts": [
                {"job_id": job_id_of(e.workload.key), "reason": e.reason} for e in found.evictions
            ],
            "reason": found.reason,
            "waiting_ahead": found.ahead,
        }

    def kueue_metrics(self) -> str:
        """Kueue's metrics as of the last :meth:`run`, in Prometheus's text format
        (:mod:`dlsched.tenancy.kueue_metrics`)."""
        return self._kueue

    def usage(self) -> list[dict[str, Any]]:
        """Per ClusterQueue, as of the last :meth:`run`: its name, cohort, nominal GPU quota
        (``nominal_gpus``), GPUs its admitted jobs are charged (``used_gpus``), how many of
        those it borrows beyond its nominal quota (``borrowed_gpus``), and its jobs waiting
        for admission (``waiting``)."""
        return self._usage

    def _measure(self) -> list[dict[str, Any]]:
        stage = self.stage
        out = []
        for cq, name in enumerate(stage.names):
            nominal, used, borrowed = stage.gpu_usage(cq)
            out.append(
                {
                    "name": name,
                    "cohort": stage.tenancy.cluster_queues[name].cohort,
                    "nominal_gpus": nominal,
                    "used_gpus": used,
                    "borrowed_gpus": borrowed,
                    "waiting": sum(stage.pending(cq)),
                }
            )
        return out
