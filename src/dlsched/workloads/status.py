"""The status file a training job keeps up to date for the service (written atomically).

Contract fields: ``step`` (optimizer steps done), ``epoch`` (epochs done, fractional),
``samples`` (training samples processed), ``progress`` (fraction of the job's samples done, in
[0, 1]), ``samples_per_s`` (throughput measured after warm-up in the current run; 0 until
measured), ``checkpoint_step`` (step of the latest checkpoint, 0 if none), ``num_gpus``,
``batch_size`` (per-GPU batch), ``time`` (Unix seconds of the write). This workload adds
``job_id``, ``model``, ``global_batch_size``, ``total_samples``, ``loss`` (mean of recent steps,
null before the first) and ``state`` (``running``, ``preempted``, ``finished``).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from dlsched.outdir import write_file_atomic
from dlsched.safe_load import load_json, read_text

STATES = ("running", "preempted", "finished")
"""Values of ``state``."""


class StatusError(ValueError):
    """A status file is unreadable or a field is missing or wrong; the message names both."""


@dataclass(frozen=True)
class TrainStatus:
    """One snapshot of a training job (see the module docstring for every field)."""

    step: int
    epoch: float
    samples: int
    progress: float
    samples_per_s: float
    checkpoint_step: int
    num_gpus: int
    batch_size: int
    time: float
    job_id: str
    model: str
    global_batch_size: int
    total_samples: int
    loss: float | None
    state: str

    def to_json(self) -> str:
        """The status as one JSON object (keys in field order)."""
        return json.dumps(asdict(self))


_INT_FIELDS = ("step", "samples", "checkpoint_step", "num_gpus", "batch_size")
_FLOAT_FIELDS = ("epoch", "progress", "samples_per_s", "time")
_CONTRACT_FIELDS = _INT_FIELDS + _FLOAT_FIELDS


def write_status(path: Path, status: TrainStatus) -> None:
    """Replace the status file at ``path`` atomically (temp file, then rename)."""
    write_file_atomic(path, status.to_json() + "\n")


def read_status(path: Path) -> TrainStatus:
    """Read and check a status file written by :func:`write_status`.

    Raises :class:`StatusError` naming the file and field when the file is not a JSON object,
    a contract field is missing or of the wrong type, or ``progress`` is outside [0, 1].
    Fields this workload adds may be absent (written by another job): they get neutral values.
    """
    try:
        raw = load_json(read_text(path), str(path), non_finite=True)
    except (OSError, ValueError) as e:
        raise StatusError(f"{path}: cannot read a JSON status: {e}") from None
    if not isinstance(raw, dict):
        raise StatusError(f"{path}: expected a JSON object, got {type(raw).__name__}")
    values: dict[str, Any] = {}
    for name in _CONTRACT_FIELDS:
        if name not in raw:
            raise StatusError(f"{path}: field {name!r} is missing")
        values[name] = _number(path, name, raw[name], integer=name in _INT_FIELDS)
    if not 0.0 <= values["progress"] <= 1.0:
        raise StatusError(f"{path}: field 'progress' must be in [0, 1], got {values['progress']}")
    state = raw.get("state", "running")
    if state not in STATES:
        raise StatusError(f"{path}: field 'state' must be one of {STATES}, got {state!r}")
    loss = raw.get("loss")
    values.update(
        job_id=str(raw.get("job_id", "")),
        model=str(raw.get("model", "")),
        global_batch_size=_number(
            path,
            "global_batch_size",
            raw.get("global_batch_size", values["batch_size"] * values["num_gpus"]),
            integer=True,
        ),
        total_samples=_number(path, "total_samples", raw.get("total_samples", 0), integer=True),
        loss=None if loss is None else _number(path, "loss", loss, integer=False),
        state=state,
    )
    assert set(values) == {f.name for f in fields(TrainStatus)}
    return TrainStatus(**values)


def _number(path: Path, name: str, value: Any, *, integer: bool) -> Any:
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StatusError(f"{path}: field {name!r} must be {kind}, got {value!r}")
    if integer:
        if isinstance(value, float):
            raise StatusError(f"{path}: field {name!r} must be {kind}, got {value!r}")
        return value
    if not math.isfinite(value):
        raise StatusError(f"{path}: field {name!r} must be finite, got {value!r}")
    return float(value)
