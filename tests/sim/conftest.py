"""Helpers shared by the simulator tests."""

from __future__ import annotations

from collections import defaultdict

from dlsched.sim.simulator import Segment


def assert_no_overcommit(segments: list[Segment]) -> None:
    """Sweep every GPU's intervals: the shares held at any instant never exceed one GPU."""
    per_gpu: dict[tuple[int, int], list[tuple[float, int]]] = defaultdict(list)
    for s in segments:
        if s.gpu < 0 or s.end <= s.begin:
            continue
        per_gpu[(s.node, s.gpu)].append((s.begin, s.milli))
        per_gpu[(s.node, s.gpu)].append((s.end, -s.milli))
    for key, points in per_gpu.items():
        # Releases sort before acquisitions at the same instant (negative milli first).
        points.sort(key=lambda p: (p[0], p[1]))
        held = 0
        for t, delta in points:
            held += delta
            assert held <= 1000, f"GPU {key} over-committed at t={t}: {held} milli"
