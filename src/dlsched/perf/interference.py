"""How much two training jobs slow each other down when they time-share GPUs.

An :class:`InterferenceModel` answers, for two workloads sharing the same GPUs, the speed of
each: its throughput while co-located divided by its throughput alone. Speeds are in (0, 1]:
a co-located job never runs faster than alone (the measurements' values above 1 are noise, and
taken as 1). The answer comes from the first source that knows the pair:

1. **Measured pairs**: Lucid's 1,388 pairs of 1-GPU jobs time-sharing one RTX 3090 (Hu et al.,
   ASPLOS'23; ``data/profiles/lucid/colocate_info.csv``), matched on model, batch size and
   mixed precision of both jobs, in either order.
2. **Utilization**: when both workloads were profiled alone (``single_data.csv``: SM
   utilization ``u``), each runs at ``min(1, 100 / (u_a + u_b))``: the GPU's time is split in
   proportion once the two together would need more than all of it. Against the measured
   pairs this rule is off by 0.064 on average, a constant by 0.072.
3. **Unknown workloads** (a job with no ``application`` the profiles know): the median
   measured speed, 0.955.

A workload is a trace row's ``application`` (the model, e.g. ``ResNet18``), ``batch_size`` and
``amp``; each model of the profiles has one dataset, so the dataset is not part of the key. The
model is loaded once per process (:func:`lucid_interference`).
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from dlsched.safe_load import shown

MAX_PROFILE_ROWS = 100_000
"""Rows a co-location profile file may have."""
MAX_PROFILE_BYTES = 16 * 2**20
"""Bytes a co-location profile file may have."""

PAIR_COLUMNS = (
    "model1",
    "batchsize1",
    "amp1",
    "speed1",
    "model2",
    "batchsize2",
    "amp2",
    "speed2",
)
SINGLE_COLUMNS = ("model", "batchsize", "amp", "gpu_util", "gmem", "label")


class ProfileError(ValueError):
    """A co-location profile file that cannot be read: names the file, line and field."""


@dataclass(frozen=True, slots=True, order=True)
class Workload:
    """A training workload as the co-location profiles name it."""

    model: str
    batch_size: int
    amp: bool

    def __str__(self) -> str:
        return f"{self.model}/bs{self.batch_size}{'/amp' if self.amp else ''}"


@dataclass(frozen=True, slots=True)
class WorkloadProfile:
    """A workload run alone: SM utilization (percent), GPU memory (MiB) and Lucid's sharing
    score (0: barely affected by sharing, 1: moderately, 2: sensitive)."""

    workload: Workload
    gpu_util: float
    gpu_mem_mib: float
    sharing_score: int


class InterferenceModel:
    """Speeds of co-located workloads (module docstring)."""

    def __init__(
        self,
        pairs: dict[tuple[Workload, Workload], tuple[float, float]],
        single: Iterable[WorkloadProfile],
    ) -> None:
        self.pairs = pairs
        self.profiles = {p.workload: p for p in single}
        measured = [s for pair in pairs.values() for s in pair]
        self.unknown_speed = min(1.0, statistics.median(measured)) if measured else 1.0

    def profile(self, workload: Workload | None) -> WorkloadProfile | None:
        return None if workload is None else self.profiles.get(workload)

    def speeds(self, a: Workload | None, b: Workload | None) -> tuple[float, float]:
        """The speed of ``a`` and of ``b`` while they share GPUs, each in (0, 1]."""
        if a is not None and b is not None:
            hit = self.pairs.get((a, b))
            if hit is not None:
                return min(1.0, hit[0]), min(1.0, hit[1])
            hit = self.pairs.get((b, a))
            if hit is not None:
                return min(1.0, hit[1]), min(1.0, hit[0])
            pa, pb = self.profiles.get(a), self.profiles.get(b)
            if pa is not None and pb is not None:
                total = pa.gpu_util + pb.gpu_util
                speed = 1.0 if total <= 100.0 else 100.0 / total
                return speed, speed
        return self.unknown_speed, self.unknown_speed


def _rows(text: str, source: str, needed: tuple[str, ...]) -> Iterable[tuple[int, dict[str, str]]]:
    if len(text) > MAX_PROFILE_BYTES:
        raise ProfileError(f"{source}: larger than {MAX_PROFILE_BYTES:,} bytes")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        missing = [c for c in needed if c not in (reader.fieldnames or ())]
        if missing:
            raise ProfileError(f"{source}: line 1: missing columns {', '.join(missing)}")
        for i, row in enumerate(reader):
            if i >= MAX_PROFILE_ROWS:
                raise ProfileError(f"{source}: more than {MAX_PROFILE_ROWS:,} rows")
            yield reader.line_num, row
    except csv.Error as e:
        # The record that failed starts after the last line read whole.
        raise ProfileError(f"{source}: line {reader.line_num + 1}: {e}") from None


def _number(row: dict[str, str], field: str, where: str, low: float, high: float) -> float:
    text = (row.get(field) or "").strip()
    try:
        value = float(text) if len(text) <= 40 else math.nan
    except ValueError:
        value = math.nan
    if not (low <= value <= high):
        raise ProfileError(
            f"{where}: {field}: {shown(text)}; expected a number in {low:g}..{high:g}"
        )
    return value


def _workload(row: dict[str, str], suffix: str, where: str) -> Workload:
    model = (row.get("model" + suffix) or "").strip()
    if not model or len(model) > 100 or not model.isprintable():
        raise ProfileError(
            f"{where}: model{suffix}: expected a model name (printable, at most 100 "
            f"characters), got {shown(model)}"
        )
    batch = _number(row, "batchsize" + suffix, where, 1, 2**31 - 1)
    if batch != int(batch):
        raise ProfileError(f"{where}: batchsize{suffix}: expected an integer")
    amp = _number(row, "amp" + suffix, where, 0, 1)
    if amp not in (0.0, 1.0):
        raise ProfileError(f"{where}: amp{suffix}: expected 0 or 1")
    return Workload(model, int(batch), amp == 1.0)


def parse_pairs(text: str, source: str) -> dict[tuple[Workload, Workload], tuple[float, float]]:
    """Measured pairs of a ``colocate_info.csv``; a pair listed twice is an error."""
    pairs: dict[tuple[Workload, Workload], tuple[float, float]] = {}
    for line, row in _rows(text, source, PAIR_COLUMNS):
        where = f"{source}: line {line}"
        a, b = _workload(row, "1", where), _workload(row, "2", where)
        speeds = (_number(row, "speed1", where, 0.01, 10), _number(row, "speed2", where, 0.01, 10))
        if (a, b) in pairs or (b, a) in pairs:
            raise ProfileError(f"{where}: pair {a} + {b} listed twice")
        pairs[(a, b)] = speeds
    return pairs


def parse_single(text: str, source: str) -> list[WorkloadProfile]:
    """Workloads run alone, from a ``single_data.csv``."""
    out: list[WorkloadProfile] = []
    seen: set[Workload] = set()
    for line, row in _rows(text, source, SINGLE_COLUMNS):
        where = f"{source}: line {line}"
        w = _workload(row, "", where)
        if w in seen:
            raise ProfileError(f"{where}: workload {w} listed twice")
        seen.add(w)
        score = _number(row, "label", where, 0, 2)
        if score != int(score):
            raise ProfileError(f"{where}: label: expected 0, 1 or 2")
        out.append(
            WorkloadProfile(
                w,
                _number(row, "gpu_util", where, 0, 100),
                _number(row, "gmem", where, 0, 2**40),
                int(score),
            )
        )
    return out


@cache
def lucid_interference() -> InterferenceModel:
    """The model of the bundled Lucid profiles (S-Lab License 1.0, non-commercial use)."""
    folder = resources.files("dlsched") / "data" / "profiles" / "lucid"
    pairs = parse_pairs((folder / "colocate_info.csv").read_text(), "colocate_info.csv")
    single = parse_single((folder / "single_data.csv").read_text(), "single_data.csv")
    return InterferenceModel(pairs, single)
