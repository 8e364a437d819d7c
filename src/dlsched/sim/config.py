"""Configuration of one simulation run: nested frozen dataclasses, each part given only to the
component that uses it. Everything needed to rerun is here (plus the trace and cluster)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class CheckpointConfig:
    """Preemption costs, charged as a stall (GPUs held, no progress) when the job resumes:
    ``one_gpu_s`` for 1 GPU, ``node_s`` up to ``node_gpus`` GPUs, ``multi_node_s`` beyond
    (defaults: the Helios evaluation's 7 s / 30 s / 60 s). ``interval_s`` is how often a running
    job checkpoints on its own; a node failure loses the progress since the last one (0 = never,
    so a failure loses the whole current run)."""

    one_gpu_s: float = 7.0
    node_s: float = 30.0
    multi_node_s: float = 60.0
    node_gpus: int = 8
    interval_s: float = 3600.0

    def cost(self, gpus: int) -> float:
        if gpus <= 1:
            return self.one_gpu_s
        return self.node_s if gpus <= self.node_gpus else self.multi_node_s


@dataclass(frozen=True)
class FaultConfig:
    """Node failures. Either from a file (CSV ``node,fail_time,repair_time``) or drawn per node
    from exponential times between failures (``mtbf_s``) and to repair (``mttr_s``), seeded.
    Both None/empty: no failures."""

    file: str | None = None
    mtbf_s: float | None = None
    mttr_s: float = 3600.0

    @property
    def enabled(self) -> bool:
        return bool(self.file) or self.mtbf_s is not None


@dataclass(frozen=True)
class PowerConfig:
    """Energy accounting, per GPU slot of a node (so nodes of any size scale): a powered node
    draws ``idle_w_per_gpu`` × its GPUs, plus ``busy_extra_w_per_gpu`` for each GPU held by a
    job. Defaults: an 8-GPU NVIDIA DGX-1 (V100) draws at most 3,500 W (data sheet), taken as a
    busy node; idle as half of that (Barroso and Hölzle, IEEE Computer 40(12), 2007) — the same
    figures as ``dlsched energy replay``. Estimates, not measurements: set them for real
    hardware. A powered-off node draws nothing; a booting one draws idle power.

    ``manager``: a node power manager by name (``dlsched list power-managers``; None: every
    node always on) with text ``manager_options``. A woken node takes ``wake_latency_s`` to
    boot (default 300 s, an assumed server boot time, not a measured one). With
    ``compare_baseline`` a managed run also runs the same setup without power management and
    reports the energy saved and queueing added against it."""

    idle_w_per_gpu: float = 1750.0 / 8
    busy_extra_w_per_gpu: float = 1750.0 / 8
    manager: str | None = None
    manager_options: dict[str, str] = field(default_factory=dict)
    wake_latency_s: float = 300.0
    compare_baseline: bool = True

    def __post_init__(self) -> None:
        for name in ("idle_w_per_gpu", "busy_extra_w_per_gpu", "wake_latency_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be finite and >= 0, got {value}")


@dataclass(frozen=True)
class SimConfig:
    """One run. ``estimator``: duration estimator by name (for policies that need one, e.g.
    QSSF); it is seeded with ``seed``. ``use_partitions``: jobs run only in their trace's VC
    (Helios semantics). ``timeline_step_s``: sampling period of timeline.parquet.
    ``every_round``: run round-based policies at every round even when nothing changed (slow;
    for checking the event-skipping)."""

    policy: str = "fifo"
    policy_options: dict[str, str] = field(default_factory=dict)
    placement: str = "consolidate"
    estimator: str | None = None
    seed: int = 0
    use_partitions: bool = True
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    faults: FaultConfig = field(default_factory=FaultConfig)
    power: PowerConfig = field(default_factory=PowerConfig)
    timeline_step_s: float = 60.0
    every_round: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimConfig:
        data = dict(data)
        ckpt = CheckpointConfig(**data.pop("checkpoint", {}))
        faults = FaultConfig(**data.pop("faults", {}))
        power = PowerConfig(**data.pop("power", {}))
        return cls(checkpoint=ckpt, faults=faults, power=power, **data)
