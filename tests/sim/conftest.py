"""Helpers shared by the simulator tests."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from dlsched.sim.power_states import OFF, ON
from dlsched.sim.sharing import SharedSegment
from dlsched.sim.simulator import Segment


def assert_no_overcommit(
    segments: list[Segment], shared: Sequence[SharedSegment] | None = None
) -> None:
    """Sweep every GPU's intervals: the shares held at any instant never exceed one GPU, or two
    whole ones while a recorded pair time-shares it (``shared``: the run's
    ``Simulator.sharing.segments``)."""
    per_gpu: dict[tuple[int, int], list[tuple[float, int]]] = defaultdict(list)
    for s in segments:
        if s.gpu < 0 or s.end <= s.begin:
            continue
        per_gpu[(s.node, s.gpu)].append((s.begin, s.milli))
        per_gpu[(s.node, s.gpu)].append((s.end, -s.milli))
    for pair in shared or ():
        for node, gpus in pair.placement:
            for g in gpus:
                # The pair's extra GPU of room: opens before, closes after its jobs' shares.
                per_gpu[(node, g)].append((pair.begin, -1000))
                per_gpu[(node, g)].append((pair.end, 1000))
    for key, points in per_gpu.items():
        # Releases sort before acquisitions at the same instant (negative milli first).
        points.sort(key=lambda p: (p[0], p[1]))
        held = 0
        for t, delta in points:
            held += delta
            assert held <= 1000, f"GPU {key} over-committed at t={t}: {held} milli"


def check_power_safety(
    segments: list[Segment], transitions: list[tuple[float, int, int]], n_nodes: int
) -> None:
    """No allocation interval overlaps a time its node was off or booting."""
    down: dict[int, list[tuple[float, float]]] = defaultdict(list)
    since: dict[int, float] = {}
    for t, node, state in transitions:
        if state == OFF:
            since[node] = t
        elif state == ON:
            down[node].append((since.pop(node), t))
    for node, t in since.items():
        down[node].append((t, math.inf))
    for seg in segments:
        assert 0 <= seg.node < n_nodes
        for lo, hi in down[seg.node]:
            assert seg.end <= lo + 1e-9 or seg.begin >= hi - 1e-9, (
                f"job row {seg.row} held node {seg.node} over [{seg.begin}, {seg.end}] while it "
                f"was powered down over [{lo}, {hi}]"
            )


def check_outage_safety(segments: list[Segment], outages: list[tuple[int, float, float]]) -> None:
    """No allocation interval overlaps a time its node was failed."""
    down: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for node, fail, repair in outages:
        down[node].append((fail, repair))
    for seg in segments:
        for lo, hi in down[seg.node]:
            assert seg.end <= lo + 1e-9 or seg.begin >= hi - 1e-9, (
                f"job row {seg.row} held node {seg.node} over [{seg.begin}, {seg.end}] while it "
                f"was failed over [{lo}, {hi}]"
            )
