"""Node failures and repairs: read from a file or drawn from a seeded MTBF/MTTR model."""

from __future__ import annotations

import csv
import math
import random
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from dlsched.sim.config import FaultConfig


@dataclass(frozen=True, slots=True)
class NodeOutage:
    """Node ``node`` (index) is down from ``fail_time`` until ``repair_time`` (seconds)."""

    node: int
    fail_time: float
    repair_time: float


def read_outages(path: str | Path, node_names: list[str]) -> list[NodeOutage]:
    """Parse a CSV ``node,fail_time,repair_time``; errors name the file and line."""
    index = {name: i for i, name in enumerate(node_names)}
    outages: list[NodeOutage] = []
    lines: list[int] = []
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or [h.strip() for h in header] != ["node", "fail_time", "repair_time"]:
            raise ValueError(f"{path}:1: expected header 'node,fail_time,repair_time'")
        for line, row in enumerate(reader, start=2):
            if len(row) != 3:
                raise ValueError(f"{path}:{line}: expected 3 fields, got {len(row)}")
            name = row[0].strip()
            if name not in index:
                raise ValueError(f"{path}:{line}: node: unknown node {name!r}")
            try:
                fail, repair = float(row[1]), float(row[2])
            except ValueError as exc:
                raise ValueError(f"{path}:{line}: times must be numbers: {exc}") from exc
            if not (math.isfinite(fail) and math.isfinite(repair)) or fail < 0:
                raise ValueError(f"{path}:{line}: fail_time must be finite and >= 0")
            if repair <= fail:
                raise ValueError(f"{path}:{line}: repair_time must be after fail_time")
            outages.append(NodeOutage(index[name], fail, repair))
            lines.append(line)
    order = sorted(range(len(outages)), key=lambda i: (outages[i].node, outages[i].fail_time))
    for a, b in pairwise(order):
        first, second = outages[a], outages[b]
        if first.node == second.node and second.fail_time < first.repair_time:
            raise ValueError(
                f"{path}:{lines[b]}: outage of node {node_names[second.node]!r} overlaps the "
                f"one on line {lines[a]}; merge them into one row"
            )
    outages.sort(key=lambda o: (o.fail_time, o.node))
    return outages


class MtbfModel:
    """Each node fails after an exponential time with mean ``mtbf_s`` from its last repair and
    is repaired after an exponential time with mean ``mttr_s``; one seeded stream per run."""

    def __init__(self, config: FaultConfig, seed: int) -> None:
        if config.mtbf_s is None or config.mtbf_s <= 0 or config.mttr_s <= 0:
            raise ValueError("MTBF and MTTR must be positive")
        self._mtbf = config.mtbf_s
        self._mttr = config.mttr_s
        self._rng = random.Random(seed * 1_000_003 + 17)

    def next_failure(self, now: float) -> float:
        return now + self._rng.expovariate(1.0 / self._mtbf)

    def repair_time(self, now: float) -> float:
        return now + self._rng.expovariate(1.0 / self._mttr)
