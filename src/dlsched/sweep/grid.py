"""A grid of simulations: traces × clusters × policies × placements × seeds, and its cells.

A grid comes from command-line lists or from a TOML file::

    [grid]
    traces = ["philly.csv"]          # paths, relative to the TOML file
    clusters = ["philly-vcs"]        # built-in names, shorthands or TOML paths
    policies = ["fifo", "sjf", "tiresias"]
    placements = ["consolidate"]     # optional, default consolidate
    seeds = [0, 1, 2]                # optional, default [0]
    estimator = "noisy-oracle"       # optional, for policies that need one
    queues = "kueue.yaml"            # optional: Kueue manifests every cell admits through
    queue_map = "queue-map.toml"     # optional, with queues: VCs/users to LocalQueues
    placement_options = { required = "rack" }  # optional, every placement takes them
    comm_model = "tiers"             # optional: multi-node rigid jobs run slower when spread
    [grid.selection]                 # optional job selection applied to every trace
    gpu_only = true

Every cell has a stable identifier built from its coordinates, which names its run directory,
so a rerun finds the cells already done. ``placement_options`` (``--placement-opt``) and
``comm_model`` (``--comm-model``) are not axes: every cell runs with them, so every placement
of the grid must take every option given (:mod:`dlsched.placement.topology`: ``required`` or
``preferred``); a grid with a placement that takes no such option is refused.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dlsched.perf.comm import check_comm_model
from dlsched.placement.registry import create_placer
from dlsched.policy.registry import policies
from dlsched.runner import Experiment, Selection
from dlsched.sim.config import SimConfig
from dlsched.sim.groups import policy_catalog

AXIS_KEYS = ("traces", "clusters", "policies", "placements", "seeds")
"""Grid fields whose values multiply into cells (a resumed sweep may add values)."""
SHARED_KEYS = (
    "estimator",
    "selection",
    "trace_format",
    "queues",
    "queue_map",
    "placement_options",
    "comm_model",
)
"""Grid fields every cell shares (a resumed sweep must keep them)."""
GRID_KEYS = {*AXIS_KEYS, *SHARED_KEYS}


class GridError(ValueError):
    """A grid specification that cannot be run; the message names the field."""


@dataclass(frozen=True)
class Cell:
    """One simulation of the grid."""

    trace: str
    cluster: str
    policy: str
    placement: str
    seed: int

    @property
    def key(self) -> str:
        """A file-name-safe identifier, unique within a grid and stable across runs."""
        stem = _slug(Path(self.trace).stem)
        cluster = _slug(Path(self.cluster).stem if self.cluster.endswith(".toml") else self.cluster)
        digest = hashlib.sha1(f"{self.trace}\0{self.cluster}".encode()).hexdigest()[:6]
        return f"{stem}-{cluster}-{digest}__{self.policy}__{self.placement}__s{self.seed}"

    @property
    def group(self) -> tuple[str, str, str, str]:
        """The coordinates other than the seed: seeds of one group are replicates."""
        return (self.trace, self.cluster, self.policy, self.placement)


@dataclass(frozen=True)
class Grid:
    """The axes of a sweep; :meth:`cells` enumerates them (traces outermost, seeds innermost)."""

    traces: tuple[str, ...]
    clusters: tuple[str, ...]
    policies: tuple[str, ...]
    placements: tuple[str, ...] = ("consolidate",)
    seeds: tuple[int, ...] = (0,)
    estimator: str | None = None
    selection: Selection = field(default_factory=Selection)
    trace_format: str | None = None
    queues: str | None = None
    queue_map: str | None = None
    placement_options: dict[str, str] = field(default_factory=dict)
    comm_model: str | None = None

    def __post_init__(self) -> None:
        if self.queue_map is not None and self.queues is None:
            raise GridError("grid field 'queue_map' maps jobs to the LocalQueues of 'queues'")
        try:
            check_comm_model(self.comm_model)
            # Built once here so that an option some placement cannot honour is refused
            # before any cell runs, naming the option and the placement.
            for placement in self.placements:
                create_placer(placement, 0, self.placement_options)
        except ValueError as exc:
            raise GridError(str(exc)) from None
        for name in ("traces", "clusters", "policies", "placements", "seeds"):
            values = getattr(self, name)
            if not values:
                raise GridError(f"grid field {name!r} is empty")
            if len(set(values)) != len(values):
                raise GridError(f"grid field {name!r} lists a value twice: {list(values)}")
        known = policies()
        every = {name for name, _, _ in policy_catalog()}
        for policy in self.policies:
            if policy not in every:
                raise GridError(
                    f"grid field 'policies': unknown policy {policy!r}; "
                    f"available: {', '.join(sorted(every))}"
                )
            if policy in known and known[policy].needs_estimate and self.estimator is None:
                raise GridError(
                    f"grid field 'estimator': policy {policy!r} needs a duration estimator"
                )

    def cells(self) -> list[Cell]:
        return [
            Cell(trace, cluster, policy, placement, seed)
            for trace in self.traces
            for cluster in self.clusters
            for policy in self.policies
            for placement in self.placements
            for seed in self.seeds
        ]

    def experiment(self, cell: Cell) -> Experiment:
        """The experiment one cell runs."""
        ordering = policies().get(cell.policy)
        estimator = self.estimator if ordering is not None and ordering.needs_estimate else None
        config = SimConfig(
            policy=cell.policy,
            placement=cell.placement,
            seed=cell.seed,
            estimator=estimator,
            queues=self.queues,
            queue_map=self.queue_map,
            placement_options=dict(self.placement_options),
            comm_model=self.comm_model,
        )
        return Experiment(
            str(Path(cell.trace).resolve()) if Path(cell.trace).exists() else cell.trace,
            cell.cluster,
            config,
            self.selection,
            self.trace_format,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (written beside the results); :meth:`from_dict` reads it."""
        return {
            "traces": list(self.traces),
            "clusters": list(self.clusters),
            "policies": list(self.policies),
            "placements": list(self.placements),
            "seeds": list(self.seeds),
            "estimator": self.estimator,
            "selection": asdict(self.selection),
            "trace_format": self.trace_format,
            "queues": self.queues,
            "queue_map": self.queue_map,
            "placement_options": dict(self.placement_options),
            "comm_model": self.comm_model,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grid:
        selection = dict(data.get("selection") or {})
        selection["vcs"] = tuple(selection.get("vcs", ()))
        return cls(
            traces=tuple(data["traces"]),
            clusters=tuple(data["clusters"]),
            policies=tuple(data["policies"]),
            placements=tuple(data["placements"]),
            seeds=tuple(int(s) for s in data["seeds"]),
            estimator=data.get("estimator"),
            selection=Selection(**selection),
            trace_format=data.get("trace_format"),
            queues=data.get("queues"),
            queue_map=data.get("queue_map"),
            placement_options=dict(data.get("placement_options") or {}),
            comm_model=data.get("comm_model"),
        )


def cell_dir(out: Path, cell: Cell) -> Path:
    """The run directory of ``cell`` in the sweep directory ``out``."""
    return out / "cells" / cell.key


def load_grid(path: str | Path) -> Grid:
    """Read a grid from a TOML file (module docstring); GridError naming the file and field."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise GridError(f"{path}: not valid TOML: {exc}") from None
    grid = data.get("grid")
    if not isinstance(grid, dict):
        raise GridError(f"{path}: expected a [grid] table")
    unknown = set(grid) - GRID_KEYS
    if unknown:
        raise GridError(
            f"{path}: unknown [grid] field(s) {sorted(unknown)}; known: {sorted(GRID_KEYS)}"
        )

    def strings(name: str, default: list[str] | None = None) -> tuple[str, ...]:
        value = grid.get(name, default)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise GridError(f"{path}: [grid] {name} must be a list of strings")
        return tuple(value)

    seeds = grid.get("seeds", [0])
    if not isinstance(seeds, list) or not all(isinstance(s, int) for s in seeds):
        raise GridError(f"{path}: [grid] seeds must be a list of integers")
    traces = tuple(
        str((path.parent / t).resolve()) if not Path(t).is_absolute() else t
        for t in strings("traces")
    )
    clusters = tuple(
        str((path.parent / c).resolve()) if c.endswith(".toml") and not Path(c).is_absolute() else c
        for c in strings("clusters")
    )
    selection_data = grid.get("selection", {})
    if not isinstance(selection_data, dict):
        raise GridError(f"{path}: [grid.selection] must be a table")
    if "vcs" in selection_data:
        selection_data["vcs"] = tuple(selection_data["vcs"])
    try:
        selection = Selection(**selection_data)
    except TypeError as exc:
        raise GridError(f"{path}: [grid.selection]: {exc}") from None
    estimator = grid.get("estimator")
    if estimator is not None and not isinstance(estimator, str):
        raise GridError(f"{path}: [grid] estimator must be a string")
    files: dict[str, str | None] = {}
    for name in ("queues", "queue_map"):
        value = grid.get(name)
        if value is not None and not isinstance(value, str):
            raise GridError(f"{path}: [grid] {name} must be a string (a file path)")
        files[name] = None if value is None else str((path.parent / value).resolve())
    options = grid.get("placement_options", {})
    if not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values()):
        raise GridError(
            f"{path}: [grid] placement_options must be a table of strings, "
            'e.g. placement_options = { required = "rack" }'
        )
    comm_model = grid.get("comm_model")
    if comm_model is not None and not isinstance(comm_model, str):
        raise GridError(f"{path}: [grid] comm_model must be a string (tiers)")
    try:
        return Grid(
            traces=traces,
            clusters=clusters,
            policies=strings("policies"),
            placements=strings("placements", ["consolidate"]),
            seeds=tuple(seeds),
            estimator=estimator,
            selection=selection,
            trace_format=grid.get("trace_format"),
            queues=files["queues"],
            queue_map=files["queue_map"],
            placement_options=options,
            comm_model=comm_model,
        )
    except GridError as exc:
        raise GridError(f"{path}: {exc}") from None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:40] or "_"
