"""Measured serving performance (the Splitwise ``perf_model.csv`` columns).

Each row is one run: ``model, hardware, prompt_size, batch_size, token_size, peak_power,
average_power, prompt_time, token_time, e2e_time, tensor_parallel`` with times in
milliseconds; ``prompt_time`` is the prefill of the whole batch, ``token_time`` one decode
iteration. Repeated runs of one configuration are averaged into one :class:`PerfPoint`. A
power column of 0 means "not measured" and reads as None.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from dlsched.serving.bundled import inference_data_path
from dlsched.trace.errors import TraceError, reading

COLUMNS = (
    "model",
    "hardware",
    "prompt_size",
    "batch_size",
    "token_size",
    "peak_power",
    "average_power",
    "prompt_time",
    "token_time",
    "e2e_time",
    "tensor_parallel",
)
INTEGER_COLUMNS = ("prompt_size", "batch_size", "token_size", "tensor_parallel")
TIME_COLUMNS = ("prompt_time", "token_time")
POWER_COLUMNS = ("peak_power", "average_power")


@dataclass(frozen=True)
class PerfPoint:
    """One measured configuration (runs averaged): prefill of ``batch`` prompts of ``prompt``
    tokens took ``prefill_s`` seconds; a decode iteration of ``batch`` requests generating
    ``output`` tokens each took ``decode_s`` on average. ``average_power`` is the fraction of
    the GPUs' rated power drawn (None: not measured)."""

    model: str
    gpu: str
    tp: int
    batch: int
    prompt: int
    output: int
    prefill_s: float
    decode_s: float
    runs: int
    average_power: float | None

    @property
    def group(self) -> tuple[str, str, int]:
        """The (model, GPU, TP) deployment the point measures."""
        return self.model, self.gpu, self.tp

    @property
    def decode_context(self) -> float:
        """Mean context tokens of the batch over its decode iterations."""
        return self.batch * (self.prompt + self.output / 2.0)


def load_perf_points(path: str | Path | None = None) -> tuple[PerfPoint, ...]:
    """The points of ``path`` (the bundled measurements by default), sorted by configuration.
    TraceError naming file, line and column for a row that is not a valid measurement."""
    source = Path(path) if path is not None else inference_data_path("perf_model.csv")
    runs: dict[tuple[str, str, int, int, int, int], list[tuple[float, float, float | None]]]
    runs = defaultdict(list)
    with reading(str(source)), open(source, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise TraceError(f"{source}:1: missing columns {', '.join(missing)}")
        for row in reader:
            line = reader.line_num
            ints = {c: _integer(source, line, c, row[c]) for c in INTEGER_COLUMNS}
            times = [_positive(source, line, c, row[c]) for c in TIME_COLUMNS]
            power = _number(source, line, "average_power", row["average_power"])
            key = (
                row["model"],
                row["hardware"],
                ints["tensor_parallel"],
                ints["batch_size"],
                ints["prompt_size"],
                ints["token_size"],
            )
            runs[key].append((times[0], times[1], power if power > 0 else None))
    if not runs:
        raise TraceError(f"{source}: no measurement")
    return tuple(_point(key, values) for key, values in sorted(runs.items()))


def _point(
    key: tuple[str, str, int, int, int, int], values: list[tuple[float, float, float | None]]
) -> PerfPoint:
    powers = [p for _, _, p in values if p is not None]
    return PerfPoint(
        *key,
        prefill_s=sum(v[0] for v in values) / len(values) / 1e3,
        decode_s=sum(v[1] for v in values) / len(values) / 1e3,
        runs=len(values),
        average_power=sum(powers) / len(powers) if powers else None,
    )


def _number(path: Path, line: int, column: str, text: str | None) -> float:
    try:
        value = float(text or "")
    except ValueError:
        raise TraceError(f"{path}:{line}: {column}: not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise TraceError(f"{path}:{line}: {column}: expected a finite number >= 0, got {text}")
    return value


def _positive(path: Path, line: int, column: str, text: str | None) -> float:
    value = _number(path, line, column, text)
    if value <= 0:
        raise TraceError(f"{path}:{line}: {column}: expected a time > 0 ms, got {text}")
    return value


def _integer(path: Path, line: int, column: str, text: str | None) -> int:
    value = _number(path, line, column, text)
    if not value.is_integer() or value < 1:
        raise TraceError(f"{path}:{line}: {column}: expected a whole number >= 1, got {text}")
    return int(value)
