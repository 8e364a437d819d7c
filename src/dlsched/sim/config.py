"""Configuration of one simulation run: nested frozen dataclasses, each part given only to the
component that uses it. Everything needed to rerun is here (plus the trace and cluster)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class RestartCost:
    """What a job pays, in seconds holding its GPUs without progress, when it (re)starts: a
    first start stalls ``first_start_s``; a resume (after a preemption or a failure) or a move
    to other GPUs stalls ``one_gpu_s`` on 1 GPU, ``node_s`` up to ``node_gpus`` GPUs and
    ``multi_node_s`` beyond (counted on the GPUs it then holds). A change of batch size alone
    costs nothing."""

    one_gpu_s: float
    node_s: float
    multi_node_s: float
    node_gpus: int = 8
    first_start_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("one_gpu_s", "node_s", "multi_node_s", "first_start_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be finite and >= 0, got {value}")

    def cost(self, gpus: int) -> float:
        if gpus <= 1:
            return self.one_gpu_s
        return self.node_s if gpus <= self.node_gpus else self.multi_node_s


RESTART_PRESETS: dict[str, RestartCost] = {
    # Helios evaluation (Hu et al., SC'21): checkpoint restore stalls of 7 / 30 / 60 s.
    "helios": RestartCost(7.0, 30.0, 60.0),
    # Pollux artifact (Qiao et al., OSDI'21): 30 s without progress after every start or
    # change of GPUs.
    "pollux": RestartCost(30.0, 30.0, 30.0, first_start_s=30.0),
    # dlsched's SMD reconstruction: 30 s to restore a checkpoint, none at the first start.
    "smd": RestartCost(30.0, 30.0, 30.0),
    "none": RestartCost(0.0, 0.0, 0.0),
}
KIND_RESTART_PRESETS = {"rigid": "helios", "elastic": "pollux", "ps": "smd"}
"""The restart cost each job kind gets by default: its paper's."""


@dataclass(frozen=True)
class CheckpointConfig:
    """Restart costs and checkpoints. ``restart``: a preset of :data:`RESTART_PRESETS` for
    every job kind, or None for each kind's own (:data:`KIND_RESTART_PRESETS`: rigid jobs the
    Helios figures, elastic jobs Pollux's, parameter-server jobs SMD's); ``costs`` overrides
    both with explicit figures. ``interval_s`` is how often a running job checkpoints on its
    own; a node failure loses the progress since the last one (0 = never, so a failure loses
    the whole current run)."""

    restart: str | None = None
    costs: RestartCost | None = None
    interval_s: float = 3600.0

    def __post_init__(self) -> None:
        if self.restart is not None and self.restart not in RESTART_PRESETS:
            raise ValueError(
                f"restart cost {self.restart!r} unknown; presets: {', '.join(RESTART_PRESETS)}"
            )
        if not (self.interval_s >= 0 and math.isfinite(self.interval_s)):
            raise ValueError(f"checkpoint interval must be finite and >= 0, got {self.interval_s}")

    def for_kind(self, kind: str) -> RestartCost:
        """The restart cost of jobs of ``kind`` (``rigid``, ``elastic`` or ``ps``)."""
        if self.costs is not None:
            return self.costs
        return RESTART_PRESETS[self.restart or KIND_RESTART_PRESETS[kind]]


@dataclass(frozen=True)
class FaultConfig:
    """Node failures. Either from a file (CSV ``node,fail_time,repair_time``) or drawn per node
    from exponential times between failures (``mtbf_s``) and to repair (``mttr_s``), seeded.
    Both None/empty: no failures."""

    file: str | None = None
    mtbf_s: float | None = None
    mttr_s: float = 3600.0

    def __post_init__(self) -> None:
        # Messages name the command-line options: these are their values.
        for flag, value in (("--mtbf", self.mtbf_s), ("--mttr", self.mttr_s)):
            if value is not None and not (value > 0 and math.isfinite(value)):
                raise ValueError(f"{flag} must be a positive number of seconds, got {value:g}")

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
    """One run. ``policy`` schedules every job kind unless ``kind_policies`` names another
    policy for a kind (``{"elastic": "pollux", "ps": "smd"}``); ``policy_options`` are the
    policies' text options, a key ``KIND.NAME`` going to that kind's policy and a plain key to
    ``policy``. ``estimator``: duration estimator by name (for policies that need one, e.g.
    QSSF); it is seeded with ``seed``. ``use_partitions``: jobs run only in their trace's VC
    (Helios semantics). ``timeline_step_s``: sampling period of timeline.parquet.
    ``every_round``: run round-based policies at every round even when nothing changed (slow;
    for checking the event-skipping). ``max_idle_rounds``: consecutive rounds in which an
    allocation policy runs no job while its jobs wait and the pool is idle, before the run is
    declared stuck (an error naming the policy). ``queues``: Kueue manifests (a YAML file or a
    directory of them) whose admission stage runs before the policies (None: every job goes
    straight to its policy); ``queue_map``: the TOML file mapping trace VCs/users to their
    LocalQueues (None: one LocalQueue per VC, named after it); ``admission_clock``,
    ``cycle_period_s``, ``termination_grace_s``: when admission decides
    (:class:`~dlsched.tenancy.model.KueueClock`). ``placement_options``: the
    placer's text options (``topology``: ``required``/``preferred`` = node, rack or block).
    ``comm_model``: None (rigid jobs run their trace duration wherever placed) or ``"tiers"``
    (:mod:`dlsched.perf.comm`: slower when spread over nodes, racks, blocks)."""

    policy: str = "fifo"
    policy_options: dict[str, str] = field(default_factory=dict)
    kind_policies: dict[str, str] = field(default_factory=dict)
    placement: str = "consolidate"
    placement_options: dict[str, str] = field(default_factory=dict)
    comm_model: str | None = None
    estimator: str | None = None
    seed: int = 0
    use_partitions: bool = True
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    faults: FaultConfig = field(default_factory=FaultConfig)
    power: PowerConfig = field(default_factory=PowerConfig)
    timeline_step_s: float = 60.0
    every_round: bool = False
    max_idle_rounds: int = 10_000
    queues: str | None = None
    queue_map: str | None = None
    admission_clock: str = "cycle"
    cycle_period_s: float = 0.0
    termination_grace_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SimConfig:
        data = dict(data)
        ckpt_data = dict(data.pop("checkpoint", {}))
        costs = ckpt_data.pop("costs", None)
        ckpt = CheckpointConfig(
            costs=RestartCost(**costs) if costs is not None else None, **ckpt_data
        )
        faults = FaultConfig(**data.pop("faults", {}))
        power = PowerConfig(**data.pop("power", {}))
        return cls(checkpoint=ckpt, faults=faults, power=power, **data)
