"""The performance model elastic policies read live: the profiles, corrected by each job's
measured throughputs.

Elastic policies read step times and goodput through a
:class:`~dlsched.perf.perfbook.PerfBook` keyed by application name. A live job's
``JobInfo.application`` is a :class:`LiveApplication`: the profile's name (equal to it and
hashing like it, so whatever reads the profile by name still does) carrying the job's row.
:class:`LivePerfBook` answers for such a name from that job's measurements, recorded by
:meth:`LivePerfBook.record` (throughput of a run on ``nodes`` nodes, ``gpus`` GPUs and a per-GPU
batch, the last :data:`HISTORY` per shape):

- at a shape the job has run (nodes, GPUs, examples per GPU per optimizer step): the measured
  step time, ``gpus × batch / mean throughput``, where the mean (of the last :data:`HISTORY`) is
  taken up when the shape is first measured and again whenever it has moved by more than
  :data:`MOVE` from the one in use (so the batch searches are not redone for noise);
- elsewhere: the profile's step time × the job's measured/profile ratio at that GPU count. At a
  count it has run the ratio is the mean over its measured shapes there (each measured step
  over the profile's step at the same nodes, GPUs and examples per GPU in one micro-step: live
  jobs have no gradient accumulation); between counts it has run, linear in the GPU count;
  beyond them, the line through the two nearest counts (one count: its ratio), never below the
  smallest measured ratio. A job whose throughput does not grow with its GPUs has a ratio that
  grows like its GPU count, so the extrapolated step times stay as slow as measured; one that
  scales as profiled keeps the profile's shape;
- for a job with no measurement, or a plain name: the profile (:class:`PerfBook`).

Measured step times stand for the cluster's GPUs whatever GPU variant is asked.
:meth:`LivePerfBook.revision` changes whenever the answers for a job change, so a policy caching
something derived from them (Optimus's speed fit) computes it again.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from dlsched.perf.goodput import Goodput, GoodputModel
from dlsched.perf.perfbook import PerfBook
from dlsched.perf.profiles import load_profile

HISTORY = 5
"""Throughputs kept per measured shape."""

MOVE = 0.02
"""Relative change of a shape's mean throughput that replaces the mean in use."""

Shape = tuple[int, int, int]
"""(nodes, GPUs, examples per GPU per optimizer step)."""


class LiveApplication(str):
    """A live job's profiled application name (equal to the plain name) carrying its row
    ``seq``."""

    seq: int

    def __new__(cls, name: str, seq: int) -> LiveApplication:
        made = super().__new__(cls, name)
        made.seq = seq
        return made


class LivePerfBook(PerfBook):
    """A :class:`PerfBook` that answers for :class:`LiveApplication` names from the job's
    measurements (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._measured: dict[int, dict[Shape, list[float]]] = {}
        self._means: dict[int, dict[Shape, float]] = {}
        self._revisions: dict[int, int] = {}
        self._counter = itertools.count(1)
        self._ratios: dict[tuple[int, str], tuple[int, dict[int, float]]] = {}
        self._models: dict[tuple[int, str], tuple[int, GoodputModel]] = {}
        self._best_live: dict[tuple[int, str, int, int, int], tuple[int, Goodput]] = {}
        self._profile_steps: dict[tuple[str, str, int, int, float, int], float] = {}

    # ---- measurements --------------------------------------------------------------------
    def record(self, seq: int, nodes: int, gpus: int, batch_size: int, rate: float) -> None:
        """Job ``seq`` processed ``rate`` examples per second on ``gpus`` GPUs over ``nodes``
        nodes at ``batch_size`` examples per GPU per step. ValueError naming the field for a
        shape or rate that cannot be."""
        if not 1 <= nodes <= gpus:
            raise ValueError(f"nodes: need 1 <= nodes <= gpus, got nodes={nodes}, gpus={gpus}")
        if batch_size < 1:
            raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
        if not rate > 0 or rate == float("inf"):
            raise ValueError(f"rate: must be positive and finite, got {rate}")
        shape = (nodes, gpus, batch_size)
        history = self._measured.setdefault(seq, {}).setdefault(shape, [])
        history.append(rate)
        del history[:-HISTORY]
        mean = _mean(history)
        in_use = self._means.setdefault(seq, {})
        current = in_use.get(shape)
        if current is None or abs(mean / current - 1.0) > MOVE:
            in_use[shape] = mean
            self._revisions[seq] = next(self._counter)

    def measured(self, seq: int) -> dict[Shape, tuple[float, ...]]:
        """Job ``seq``'s recorded throughputs by shape."""
        return {k: tuple(v) for k, v in self._measured.get(seq, {}).items()}

    def forget(self, seq: int) -> None:
        """Drop job ``seq``'s measurements (it left)."""
        self._measured.pop(seq, None)
        self._means.pop(seq, None)
        self._revisions.pop(seq, None)
        self._ratios = {k: v for k, v in self._ratios.items() if k[0] != seq}
        self._models = {k: v for k, v in self._models.items() if k[0] != seq}
        self._best_live = {k: v for k, v in self._best_live.items() if k[0] != seq}

    def revision(self, app: str) -> int:
        """0 while the answers for ``app`` are the profile's; else a number no other job or
        measurement state shares, changed whenever a mean in use for the job changes."""
        seq = _seq(app)
        return 0 if seq is None else self._revisions.get(seq, 0)

    # ---- the PerfBook interface ----------------------------------------------------------
    def iteration_time(
        self,
        app: str,
        variant: str,
        placement: Sequence[int],
        local_bsz: int,
        accum_steps: int = 0,
    ) -> float:
        if self.revision(app) == 0:
            return super().iteration_time(str(app), variant, placement, local_bsz, accum_steps)
        return self.live_step(app, variant, len(placement), sum(placement), local_bsz, accum_steps)

    def goodput_model(self, app: str, variant: str) -> GoodputModel:
        rev = self.revision(app)
        if rev == 0:
            return super().goodput_model(str(app), variant)
        key = (_seq_of(app), variant)
        found = self._models.get(key)
        if found is None or found[0] != rev:
            steps = _JobSteps(self, app, variant)
            found = (rev, GoodputModel(load_profile(str(app), variant), step_model=steps))
            self._models[key] = found
        return found[1]

    def best_batch(self, app: str, variant: str, epoch: int, nodes: int, replicas: int) -> Goodput:
        rev = self.revision(app)
        if rev == 0:
            return super().best_batch(str(app), variant, epoch, nodes, replicas)
        key = (_seq_of(app), variant, epoch, nodes, replicas)
        found = self._best_live.get(key)
        if found is None or found[0] != rev:
            best = self.goodput_model(app, variant).best_batch(epoch, nodes, replicas)
            found = (rev, best)
            self._best_live[key] = found
        return found[1]

    # ---- the corrected step time ---------------------------------------------------------
    def live_step(
        self,
        app: str,
        variant: str,
        nodes: int,
        replicas: int,
        local_bsz: float,
        accum_steps: int = 0,
    ) -> float:
        """Seconds per optimizer step of ``app`` (a :class:`LiveApplication` with
        measurements) at this shape (module docstring)."""
        seq = _seq_of(app)
        per_gpu = local_bsz * (accum_steps + 1)
        if float(per_gpu).is_integer():
            mean = self._means[seq].get((nodes, replicas, int(per_gpu)))
            if mean is not None:
                return replicas * per_gpu / mean
        profile = self.profile_step(app, variant, nodes, replicas, local_bsz, accum_steps)
        return profile * self.ratio(app, variant, replicas)

    def profile_step(
        self,
        app: str,
        variant: str,
        nodes: int,
        replicas: int,
        local_bsz: float,
        accum_steps: int = 0,
    ) -> float:
        """The profile's seconds per optimizer step at this shape (memoized: the batch searches
        ask the same shapes every round)."""
        key = (str(app), variant, nodes, replicas, local_bsz, accum_steps)
        found = self._profile_steps.get(key)
        if found is None:
            found = self.step_model(key[0], variant).iteration_time(
                nodes, replicas, local_bsz, accum_steps
            )
            self._profile_steps[key] = found
        return found

    def ratio(self, app: str, variant: str, gpus: int) -> float:
        """The job's measured/profile step-time ratio at ``gpus`` GPUs (module docstring)."""
        table = self._ratio_table(app, variant)
        found = table.get(gpus)
        if found is None:
            found = _along(sorted(table.items()), gpus)
            table[gpus] = found
        return found

    def _ratio_table(self, app: str, variant: str) -> dict[int, float]:
        """The job's ratio by GPU count at its current revision: the measured counts, then
        each count asked for since."""
        seq = _seq_of(app)
        rev = self._revisions.get(seq, 0)
        found = self._ratios.get((seq, variant))
        if found is not None and found[0] == rev:
            return found[1]
        by_count: dict[int, list[float]] = {}
        for (nodes, gpus, batch), mean in self._means[seq].items():
            measured = gpus * batch / mean
            by_count.setdefault(gpus, []).append(
                measured / self.profile_step(app, variant, nodes, gpus, batch)
            )
        table = {n: _mean(rs) for n, rs in by_count.items()}
        self._ratios[(seq, variant)] = (rev, table)
        return table


def _along(points: list[tuple[int, float]], gpus: int) -> float:
    """The ratio at ``gpus`` from the measured ``(count, ratio)`` points, sorted by count, none
    at ``gpus`` (module docstring)."""
    floor = min(r for _, r in points)
    if len(points) == 1:
        return points[0][1]
    right = next((i for i, (n, _) in enumerate(points) if n > gpus), len(points) - 1)
    right = max(right, 1)
    (n0, r0), (n1, r1) = points[right - 1], points[right]
    return max(r0 + (r1 - r0) * (gpus - n0) / (n1 - n0), floor)


class _JobSteps:
    """One live job's step model on one GPU variant, for its :class:`GoodputModel`."""

    def __init__(self, book: LivePerfBook, app: str, variant: str) -> None:
        self._book = book
        self._app = app
        self._variant = variant

    def iteration_time(
        self, nodes: int, replicas: int, local_bsz: float, accum_steps: int = 0
    ) -> float:
        return self._book.live_step(
            self._app, self._variant, nodes, replicas, local_bsz, accum_steps
        )


def _seq(app: str) -> int | None:
    return app.seq if isinstance(app, LiveApplication) else None


def _seq_of(app: str) -> int:
    seq = _seq(app)
    if seq is None:
        raise ValueError(f"application: {app!r} names no live job")
    return seq


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)
