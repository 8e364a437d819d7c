"""Step time of any configuration, interpolated from the measured profile.

:class:`StepTimeModel` answers ``(nodes, replicas, local batch[, placement])`` with the measured
step and sync time where measured and interpolates elsewhere, in this order:

1. the placement (per-node replica counts, any rotation) was measured: that placement's
   measurements, linear in local batch;
2. the (nodes, replicas) pair was measured: the mean of all its measurements (placements of that
   shape and ``scalability`` rows) at each local batch, linear in local batch;
3. replicas lie between two measured counts on the same number of nodes: linear in
   ``log(replicas)`` between the two (each read as in 2);
4. nodes lie between two measured node counts that can both answer for these replicas (by 2 or
   3): linear in ``log(nodes)``;
5. otherwise the fitted Pollux model (:mod:`dlsched.perf.pollux_fit`), scaled by the ratio of
   measured to modelled time at the nearest measured (nodes, replicas) pair, nearest in
   ``(log nodes, log replicas)``; ties go to fewer nodes, then fewer replicas.

A local batch outside a configuration's measured range is extrapolated the same way: the
Pollux model scaled to agree with the measurement at the nearest measured batch; sync time is
held at its value there. So measured points are reproduced exactly and every answer is
continuous in local batch. Gradient accumulation runs ``s`` extra micro-steps without
synchronization: ``step + s·(step − sync)``.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dlsched.perf.pollux_fit import PolluxModel, fit_pollux
from dlsched.perf.profiles import AppProfile, StepSample, canonical_placement


@dataclass(frozen=True, slots=True)
class StepTime:
    """Time of one synchronized step."""

    step: float  # seconds per optimizer step without accumulation, sync included
    sync: float  # seconds of ``step`` spent synchronizing gradients (0 ≤ sync ≤ step)

    @property
    def compute(self) -> float:
        """Seconds of one micro-step outside synchronization: ``step − sync``."""
        return self.step - self.sync

    def with_accumulation(self, accum_steps: int) -> float:
        """Seconds per optimizer step with ``accum_steps`` extra micro-steps:
        ``step + accum_steps·(step − sync)``."""
        if accum_steps < 0:
            raise ValueError(f"accum_steps must be >= 0, got {accum_steps}")
        return self.step + accum_steps * self.compute


@dataclass(frozen=True, slots=True)
class _Line:
    """Measurements of one configuration over local batch (sorted, distinct batches)."""

    nodes: int
    replicas: int
    bsz: tuple[int, ...]
    step: tuple[float, ...]
    sync: tuple[float, ...]

    def at(self, local_bsz: float, model: PolluxModel) -> StepTime:
        bsz = self.bsz
        if local_bsz <= bsz[0] or local_bsz >= bsz[-1]:
            i = 0 if local_bsz <= bsz[0] else len(bsz) - 1
            ratio = model(self.nodes, self.replicas, local_bsz) / model(
                self.nodes, self.replicas, bsz[i]
            )
            step = self.step[i] * ratio
            return StepTime(step, min(self.sync[i], step))
        hi = bisect.bisect_right(bsz, local_bsz)
        lo = hi - 1
        w = (local_bsz - bsz[lo]) / (bsz[hi] - bsz[lo])
        step = (1 - w) * self.step[lo] + w * self.step[hi]
        sync = (1 - w) * self.sync[lo] + w * self.sync[hi]
        return StepTime(step, min(sync, step))


def _line(nodes: int, replicas: int, samples: Iterable[StepSample]) -> _Line:
    by_bsz: dict[int, list[StepSample]] = defaultdict(list)
    for s in samples:
        by_bsz[s.local_bsz].append(s)
    sizes = tuple(sorted(by_bsz))
    return _Line(
        nodes,
        replicas,
        sizes,
        tuple(sum(s.step_time for s in by_bsz[b]) / len(by_bsz[b]) for b in sizes),
        tuple(sum(s.sync_time for s in by_bsz[b]) / len(by_bsz[b]) for b in sizes),
    )


def _mix(a: StepTime, b: StepTime, w: float) -> StepTime:
    return StepTime((1 - w) * a.step + w * b.step, (1 - w) * a.sync + w * b.sync)


class StepTimeModel:
    """Measured-or-interpolated step time for one application profile (module docstring).

    Calling it, ``model(nodes, replicas, local_bsz, placement=None)``, returns a
    :class:`StepTime`. Deterministic; the tables are built once and never changed (the
    nearest measured shape of an extrapolated one is remembered).
    """

    def __init__(self, profile: AppProfile, fallback: PolluxModel | None = None) -> None:
        if not profile.samples:
            raise ValueError(f"profile {profile.app}/{profile.variant} has no step samples")
        self.profile = profile
        self.fallback = fallback or PolluxModel(fit_pollux(profile.samples))
        by_placement: dict[tuple[int, ...], list[StepSample]] = defaultdict(list)
        by_shape: dict[tuple[int, int], list[StepSample]] = defaultdict(list)
        for s in profile.samples:
            if s.placement:
                by_placement[s.placement].append(s)
            by_shape[(s.nodes, s.replicas)].append(s)
        self._placements = {
            p: _line(len(p), sum(p), rows) for p, rows in sorted(by_placement.items())
        }
        self._shapes = {k: _line(k[0], k[1], rows) for k, rows in sorted(by_shape.items())}
        replicas_at: dict[int, list[int]] = defaultdict(list)
        for n, r in self._shapes:
            replicas_at[n].append(r)
        self._replicas_at = {n: tuple(sorted(rs)) for n, rs in replicas_at.items()}
        self._node_counts = tuple(sorted(self._replicas_at))
        self._anchors: dict[tuple[int, int], _Line] = {}

    @property
    def measured_shapes(self) -> tuple[tuple[int, int], ...]:
        """Every measured (nodes, replicas) pair, sorted."""
        return tuple(self._shapes)

    def __call__(
        self,
        nodes: int,
        replicas: int,
        local_bsz: float,
        placement: Sequence[int] | None = None,
    ) -> StepTime:
        """Step and sync time of ``replicas`` on ``nodes`` at ``local_bsz``; ``placement``, if
        given, lists the replicas per node (and must agree with ``nodes`` and ``replicas``)."""
        if nodes < 1 or replicas < nodes or local_bsz <= 0:
            raise ValueError(
                f"need 1 <= nodes <= replicas and local_bsz > 0; got nodes={nodes}, "
                f"replicas={replicas}, local_bsz={local_bsz}"
            )
        if placement is not None:
            key = canonical_placement(placement)
            if len(key) != nodes or sum(key) != replicas:
                raise ValueError(f"placement {tuple(placement)} is not {replicas} on {nodes}")
            line = self._placements.get(key)
            if line is not None:
                return line.at(local_bsz, self.fallback)
        found = self._on_nodes(nodes, replicas, local_bsz)
        if found is not None:
            return found
        found = self._across_nodes(nodes, replicas, local_bsz)
        if found is not None:
            return found
        return self._extrapolate(nodes, replicas, local_bsz)

    def iteration_time(
        self, nodes: int, replicas: int, local_bsz: float, accum_steps: int = 0
    ) -> float:
        """Seconds per optimizer step with ``accum_steps`` extra micro-steps."""
        return self(nodes, replicas, local_bsz).with_accumulation(accum_steps)

    def _on_nodes(self, nodes: int, replicas: int, local_bsz: float) -> StepTime | None:
        line = self._shapes.get((nodes, replicas))
        if line is not None:
            return line.at(local_bsz, self.fallback)
        counts = self._replicas_at.get(nodes, ())
        hi = bisect.bisect_right(counts, replicas)
        if hi == 0 or hi == len(counts):
            return None
        r_lo, r_hi = counts[hi - 1], counts[hi]
        w = math.log(replicas / r_lo) / math.log(r_hi / r_lo)
        lo_t = self._shapes[(nodes, r_lo)].at(local_bsz, self.fallback)
        hi_t = self._shapes[(nodes, r_hi)].at(local_bsz, self.fallback)
        return _mix(lo_t, hi_t, w)

    def _across_nodes(self, nodes: int, replicas: int, local_bsz: float) -> StepTime | None:
        lo = self._nearest_answer(
            reversed([n for n in self._node_counts if n < nodes]), replicas, local_bsz
        )
        hi = self._nearest_answer((n for n in self._node_counts if n > nodes), replicas, local_bsz)
        if lo is None or hi is None:
            return None
        w = math.log(nodes / lo[0]) / math.log(hi[0] / lo[0])
        return _mix(lo[1], hi[1], w)

    def _nearest_answer(
        self, node_counts: Iterable[int], replicas: int, local_bsz: float
    ) -> tuple[int, StepTime] | None:
        for n in node_counts:
            found = self._on_nodes(n, replicas, local_bsz)
            if found is not None:
                return n, found
        return None

    def _anchor(self, nodes: int, replicas: int) -> _Line:
        """The measured shape nearest (nodes, replicas), remembered per shape."""
        found = self._anchors.get((nodes, replicas))
        if found is None:

            def distance(shape: tuple[int, int]) -> tuple[float, int, int]:
                n, r = shape
                d = math.hypot(math.log(n / nodes), math.log(r / replicas))
                return (round(d, 12), n, r)

            found = self._shapes[min(self._shapes, key=distance)]
            self._anchors[(nodes, replicas)] = found
        return found

    def _extrapolate(self, nodes: int, replicas: int, local_bsz: float) -> StepTime:
        anchor = self._anchor(nodes, replicas)
        measured = anchor.at(local_bsz, self.fallback)
        model = self.fallback
        ratio = model(nodes, replicas, local_bsz) / model(anchor.nodes, anchor.replicas, local_bsz)
        step = measured.step * ratio
        # Compute time depends on the local batch only, so the anchor's holds here too; the
        # rest of the step is synchronization.
        return StepTime(step, min(max(step - measured.compute, 0.0), step))
