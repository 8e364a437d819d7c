"""Node power states in the simulator: on, off and booting, with failures kept apart.

A node takes jobs only while it is on and not failed (:meth:`ClusterState.set_node_up` mirrors
that). Only an idle node can be powered off. A woken node boots for ``wake_latency_s`` and draws
idle power meanwhile; a powered-off node draws nothing. Every change of the powered GPU count
is recorded as a change point so the run's idle energy is integrated exactly
(:func:`dlsched.metrics.summary.summarize`).

**Wake on demand.** After each scheduling cycle of a partition with queued jobs, the queued
GPUs not covered by free GPUs on wholly idle powered nodes and by booting nodes are woken,
lowest node index first. A partition with queued jobs and nothing running or booting wakes all
its powered-off nodes, so a job whose shape the free count misjudges never waits forever.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

from dlsched.cluster.state import ClusterState
from dlsched.metrics.summary import integrate_steps
from dlsched.power.manager import PowerManager, PowerSnapshot

ON, OFF, BOOTING = 0, 1, 2
ScheduleFn = Callable[[float, Callable[[int], None], int], None]


@dataclass(frozen=True)
class PowerChange:
    """From ``time_s`` on, ``powered_gpus`` GPU slots draw power and ``off_nodes`` are off."""

    time_s: float
    powered_gpus: int
    off_nodes: int


class NodePower:
    """Power states of every node of ``state``; see the module docstring. ``schedule(at, fn,
    node)`` puts a boot completion on the simulator's clock, ``now()`` reads it; ``ready(node)``
    is called when a node becomes able to take jobs again. ``transitions`` records every
    ``(time, node, new power state)``."""

    def __init__(
        self,
        state: ClusterState,
        wake_latency_s: float,
        schedule: ScheduleFn,
        ready: Callable[[int], None],
        now: Callable[[], float],
        manager: PowerManager | None = None,
    ) -> None:
        self.state = state
        self.wake_latency_s = wake_latency_s
        self.manager = manager
        self._schedule = schedule
        self._ready = ready
        self._now = now
        n = len(state.node_names)
        self.power = [ON] * n
        self.failed = [False] * n
        self.idle_since = [-math.inf] * n
        self.busy_nodes = 0
        self._powered_gpus = sum(state.node_gpus)
        self._off = 0
        self.changes: list[PowerChange] = [PowerChange(-math.inf, self._powered_gpus, 0)]
        self.transitions: list[tuple[float, int, int]] = []
        self.wakeups = 0
        self.shutdowns = 0
        self.demand_wakes = 0
        self._booting_gpus = [0] * state.num_pools

    @property
    def tracks_idle(self) -> bool:
        """Whether the simulator must report node occupancy (only with a manager)."""
        return self.manager is not None

    # ---- occupancy (reported by the simulator) -------------------------------------------
    def node_used(self, node: int) -> None:
        """A job was placed on ``node``."""
        if self.idle_since[node] != math.inf:
            self.idle_since[node] = math.inf
            self.busy_nodes += 1

    def node_freed(self, node: int, now: float) -> None:
        """A job left ``node``; it may now be idle."""
        if self.idle_since[node] == math.inf and self.state.node_idle(node):
            self.idle_since[node] = now
            self.busy_nodes -= 1

    # ---- failures ------------------------------------------------------------------------
    def set_failed(self, node: int, failed: bool) -> None:
        """Mark a node failed or repaired; it takes jobs only when on and not failed."""
        self.failed[node] = failed
        self.state.set_node_up(node, not failed and self.power[node] == ON)

    # ---- power changes -------------------------------------------------------------------
    def _record(self, now: float) -> None:
        change = PowerChange(now, self._powered_gpus, self._off)
        if self.changes[-1].time_s == now:
            self.changes[-1] = change
        else:
            self.changes.append(change)

    def power_off(self, node: int, now: float) -> None:
        """Switch off an idle, powered, non-failed node."""
        if self.power[node] != ON or self.failed[node] or not self.state.node_idle(node):
            raise ValueError(f"node {self.state.node_names[node]} cannot be powered off now")
        self.state.set_node_up(node, False)
        self.power[node] = OFF
        self.transitions.append((now, node, OFF))
        self._powered_gpus -= self.state.node_gpus[node]
        self._off += 1
        self.shutdowns += 1
        self._record(now)

    def wake(self, node: int, now: float) -> None:
        """Start booting a powered-off node."""
        if self.power[node] != OFF:
            raise ValueError(f"node {self.state.node_names[node]} is not powered off")
        self.power[node] = BOOTING
        self.transitions.append((now, node, BOOTING))
        self._powered_gpus += self.state.node_gpus[node]
        self._off -= 1
        self.wakeups += 1
        self._booting_gpus[self.state.node_pool[node]] += self.state.node_gpus[node]
        self._record(now)
        self._schedule(now + self.wake_latency_s, self._booted, node)

    def _booted(self, node: int) -> None:
        self.power[node] = ON
        self.transitions.append((self._now(), node, ON))
        self._booting_gpus[self.state.node_pool[node]] -= self.state.node_gpus[node]
        self.state.set_node_up(node, not self.failed[node])
        self._ready(node)

    # ---- decisions -----------------------------------------------------------------------
    def on_demand(self, pool: int, pending_gpus: int, running_jobs: int, now: float) -> None:
        """Wake what the queued jobs of ``pool`` need (module docstring)."""
        nodes = self.state.pool_nodes[pool]
        off = [n for n in nodes if self.power[n] == OFF and not self.failed[n]]
        if not off:
            return
        booting = self._booting_gpus[pool]
        if running_jobs == 0 and booting == 0:
            woken = off
        else:
            free = sum(
                self.state.node_gpus[n]
                for n in nodes
                if self.power[n] == ON and not self.failed[n] and self.state.node_idle(n)
            )
            deficit = pending_gpus - free - booting
            woken = []
            for n in off:
                if deficit <= 0:
                    break
                woken.append(n)
                deficit -= self.state.node_gpus[n]
        for n in woken:
            self.wake(n, now)
        if woken:
            self.demand_wakes += 1
            if self.manager is not None:
                self.manager.on_wake(now, len(woken))

    def decide(self, step: int, now: float, queued: list[int]) -> None:
        """Ask the manager which idle nodes to power off; ``queued[p]`` is the number of jobs
        queued in partition ``p`` (their partitions keep every node)."""
        assert self.manager is not None
        eligible, since = self._eligible(queued)
        snapshot = PowerSnapshot(
            now=now,
            step=step,
            busy_nodes=self.busy_nodes,
            powered_nodes=sum(
                1 for n, p in enumerate(self.power) if p != OFF and not self.failed[n]
            ),
            total_nodes=sum(1 for f in self.failed if not f),
            eligible=eligible,
            idle_since=since,
        )
        chosen = self.manager.decide(snapshot)
        allowed = set(eligible)
        for node in chosen:
            if node not in allowed:
                raise ValueError(
                    f"power manager {self.manager.name!r} chose node {node}, which was not "
                    "offered as eligible"
                )
            allowed.discard(node)
            self.power_off(node, now)

    def _eligible(self, queued: list[int]) -> tuple[list[int], list[float]]:
        state = self.state
        per_pool: list[list[int]] = [[] for _ in range(state.num_pools)]
        for n, p in enumerate(self.power):
            if (
                p == ON
                and not self.failed[n]
                and self.idle_since[n] != math.inf
                and not queued[state.node_pool[n]]
            ):
                per_pool[state.node_pool[n]].append(n)
        # Highest index first from the partition with the most idle nodes left, so spare
        # powered capacity stays spread over partitions.
        heap = [(-len(nodes), pool) for pool, nodes in enumerate(per_pool) if nodes]
        heapq.heapify(heap)
        order: list[int] = []
        while heap:
            count, pool = heapq.heappop(heap)
            order.append(per_pool[pool].pop())
            if count < -1:
                heapq.heappush(heap, (count + 1, pool))
        return order, [self.idle_since[n] for n in order]

    def powered_gpus(self) -> list[tuple[float, int]]:
        """``(time, powered GPU slots from then on)`` change points, for the energy sum."""
        return [(c.time_s, c.powered_gpus) for c in self.changes]

    def report(self, start: float, end: float) -> dict[str, object]:
        """Counts for the summary; mean powered-off nodes over ``[start, end]``."""
        span = end - start
        off_s = integrate_steps([(c.time_s, c.off_nodes) for c in self.changes], start, end)
        days = span / 86_400 if span > 0 else math.nan
        out: dict[str, object] = {
            "power_manager": None if self.manager is None else self.manager.name,
            "wake_latency_s": self.wake_latency_s,
            "mean_powered_off_nodes": off_s / span if span > 0 else 0.0,
            "wakeups": self.wakeups,
            "wakeups_per_day": self.wakeups / days if span > 0 else None,
            "shutdowns": self.shutdowns,
            "demand_wake_events": self.demand_wakes,
        }
        if self.manager is not None:
            out.update(self.manager.report())
        return out
