"""An in-memory back end on a controllable clock: for fast tests and the load benchmark.

A launched request runs for ``duration_of(request)`` seconds of the given clock, minus the work
its job already did in earlier attempts (a preempted fake job "checkpoints" all its progress).
After ``launch_delay_s`` it shows as RUNNING; when its work is done it shows as EXITED with code
0. :meth:`FakeBackend.terminate` makes it exit with code 75 ``checkpoint_s`` later, or, if that
exceeds the grace period, be killed at the end of the grace period (exit code None, progress
since the last attempt lost). Jobs listed in ``fail_jobs`` fail to launch (a typed error).
Every run interval is kept in :attr:`FakeBackend.history` so tests can check invariants. Fake
jobs report no status (progress, throughput) unless ``status_of`` is given: it is called with a
running request and the seconds of work its job has done in all its attempts, and returns the
status the job reports.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dlsched.backends.base import (
    EXIT_PREEMPTED,
    AttemptCheck,
    AttemptFate,
    Backend,
    BackendError,
    KnownRequest,
    LaunchRequest,
    Observation,
    PriorAttempt,
    ProcState,
    deadline_passed,
)

DEFAULT_DURATION_S = 60.0
_SLEEP = re.compile(r"^\s*sleep\s+(\d+(?:\.\d*)?)\s*$")


def command_duration(request: LaunchRequest, default: float = DEFAULT_DURATION_S) -> float:
    """How long a fake job runs: the submitter's expected duration, else N for a command
    ``sleep N`` (one argument list or one shell string), else ``default``."""
    if request.expected_duration_s is not None:
        return request.expected_duration_s
    cmd = request.command
    if len(cmd) == 2 and cmd[0] == "sleep":
        try:
            return float(cmd[1])
        except ValueError:
            return default
    m = _SLEEP.match(" ".join(cmd))
    return float(m.group(1)) if m else default


@dataclass(slots=True)
class FakeRun:
    """One attempt of a job on the fake back end: [``begin``, ``end``) on ``gpu_ids``."""

    request: LaunchRequest
    begin: float
    work_left: float
    end: float = math.inf
    exit_code: int | None = None
    stop_at: float = math.inf
    stop_code: int | None = None
    seen: Observation | None = None

    def settle(self, now: float, done: dict[str, float]) -> None:
        """Fix the outcome once ``now`` has passed the finish or the requested stop."""
        if self.end != math.inf:
            return
        finish = self.begin + self.work_left
        if finish <= self.stop_at and finish <= now:
            self.end, self.exit_code = finish, 0
            done[self.request.job_id] = math.inf
        elif self.stop_at < finish and self.stop_at <= now:
            self.end, self.exit_code = self.stop_at, self.stop_code
            if self.stop_code == EXIT_PREEMPTED:
                done[self.request.job_id] = done.get(self.request.job_id, 0.0) + (
                    self.stop_at - self.begin
                )


class FakeBackend(Backend):
    """See the module docstring. ``clock`` returns the current time in seconds."""

    name = "fake"

    def __init__(
        self,
        clock: Callable[[], float],
        duration_of: Callable[[LaunchRequest], float] = command_duration,
        launch_delay_s: float = 0.0,
        checkpoint_s: float = 0.0,
        fail_jobs: Iterable[str] = (),
        status_of: Callable[[LaunchRequest, float], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self.clock = clock
        self.status_of = status_of
        self.duration_of = duration_of
        self.launch_delay_s = launch_delay_s
        self.checkpoint_s = checkpoint_s
        self.fail_jobs = set(fail_jobs)
        self.runs: dict[str, FakeRun] = {}
        self.history: list[FakeRun] = []
        self._done: dict[str, float] = {}
        self._errors: list[BackendError] = []
        self.launches = 0
        self.down: set[str] = set()
        self.peers: list[FakeBackend] = []
        """Fake back ends (of other services in this process) whose runs :meth:`probe`
        can see; tests link them."""

    def fail_node(self, node: str) -> None:
        """Fault injection: ``node`` is lost now; runs on it end with a ``node_lost`` error and
        launches there fail with ``node_unavailable`` until :meth:`restore_node`."""
        now = self.clock()
        self.down.add(node)
        for rid, run in self.runs.items():
            run.settle(now, self._done)
            if run.end == math.inf and node in run.request.gpu_ids:
                run.end, run.exit_code = now, None
                self._errors.append(BackendError(rid, "node_lost", f"node {node} was lost", now))

    def restore_node(self, node: str) -> None:
        self.down.discard(node)

    def unavailable_nodes(self) -> frozenset[str]:
        return frozenset(self.down)

    def launch(self, request: LaunchRequest) -> None:
        if request.request_id in self.runs:
            return
        now = self.clock()
        down = sorted(self.down.intersection(request.gpu_ids))
        if request.job_id in self.fail_jobs or down:
            run = FakeRun(request, now, 0.0, end=now)
            self.runs[request.request_id] = run
            kind, message = (
                ("node_unavailable", f"node {down[0]} is down")
                if down
                else ("launch_failed", "injected launch failure")
            )
            self._errors.append(BackendError(request.request_id, kind, message, now))
            return
        self.launches += 1
        done = self._done.get(request.job_id, 0.0)
        left = max(0.0, self.duration_of(request) - done)
        run = FakeRun(request, now + self.launch_delay_s, left)
        self.runs[request.request_id] = run
        self.history.append(run)

    def terminate(self, request_id: str, grace_s: float) -> None:
        run = self.runs.get(request_id)
        if run is None or run.stop_at != math.inf:
            return
        now = self.clock()
        run.settle(now, self._done)
        if run.end != math.inf:
            return
        if self.checkpoint_s <= grace_s:
            run.stop_at, run.stop_code = max(now, run.begin) + self.checkpoint_s, EXIT_PREEMPTED
        else:
            run.stop_at, run.stop_code = now + grace_s, None

    def observe(self) -> dict[str, Observation]:
        now = self.clock()
        out: dict[str, Observation] = {}
        for rid, run in self.runs.items():
            run.settle(now, self._done)
            if run.end <= now:
                state = ProcState.EXITED
            elif run.begin > now:
                state = ProcState.STARTING
            else:
                state = ProcState.RUNNING
            seen = run.seen
            if state is ProcState.RUNNING and self.status_of is not None:
                worked = self._done.get(run.request.job_id, 0.0) + (now - run.begin)
                status = self.status_of(run.request, worked)
                seen = run.seen = Observation(rid, state, None, None, run.begin, status)
            elif seen is None or seen.state is not state:
                seen = run.seen = Observation(rid, state, run.exit_code, None, run.begin)
            out[rid] = seen
        return out

    def forget(self, request_id: str) -> None:
        run = self.runs.get(request_id)
        if run is not None and run.end <= self.clock():
            del self.runs[request_id]

    def errors(self) -> list[BackendError]:
        out, self._errors = self._errors, []
        return out

    def recover(self, known: Mapping[str, KnownRequest]) -> None:
        """In-memory runs survive only inside one process: runs not in ``known`` are dropped
        (a restarted service with a new fake back end simply relaunches)."""
        for rid in [r for r in self.runs if r not in known]:
            run = self.runs.pop(rid)
            if run.end == math.inf:
                run.end, run.exit_code = self.clock(), None

    def probe(self, attempt: PriorAttempt) -> AttemptCheck:
        """Fake runs live in the memory of the back end that launched them: one of a back end
        in :attr:`peers` is judged from its run; any other is gone once its launch deadline
        has passed (its service's memory is gone with it)."""
        for peer in self.peers:
            run = peer.runs.get(attempt.request.request_id)
            if run is None:
                continue
            run.settle(self.clock(), peer._done)
            if run.end <= self.clock():
                return AttemptCheck(AttemptFate.EXITED, run.exit_code)
            return AttemptCheck(AttemptFate.ALIVE)
        if deadline_passed(attempt, self.clock()):
            return AttemptCheck(AttemptFate.GONE)
        return AttemptCheck(AttemptFate.UNKNOWN)

    def next_event_time(self) -> float | None:
        """The earliest time at which some run changes state on its own (for tests that jump
        the clock from event to event), or None if nothing is pending."""
        best = math.inf
        for run in self.runs.values():
            if run.end != math.inf:
                continue
            for t in (run.begin, run.begin + run.work_left, run.stop_at):
                if t > self.clock() and t < best:
                    best = t
        return None if best == math.inf else best
