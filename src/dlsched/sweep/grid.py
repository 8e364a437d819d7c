"""A grid of simulations and its cells, over the run options of :mod:`dlsched.run_options`.

A sweep takes every option ``dlsched simulate`` takes, under the same names. The axis options
(:data:`dlsched.run_options.AXES`: trace, cluster, policy, placement, seed, queues, load
scale) may take several values, and the grid's cells are every combination of them; every
other option holds for every cell. A cell runs exactly the experiment ``simulate`` would run
with those values (:func:`dlsched.run_options.experiment_from`), so a sweep and a simulation of
the same values agree. Several ``queues`` are the what-if of quotas: the same trace under each
queue configuration.

A grid comes from command-line options or from a TOML file whose ``[grid]`` keys are the
options' names (an axis option takes a list or one value)::

    [grid]
    trace = ["philly.csv"]           # paths relative to the TOML file
    cluster = ["philly-vcs"]         # built-in names, shorthands or TOML paths
    policy = ["fifo", "sjf", "tiresias"]
    seed = [0, 1, 2]
    queues = ["q-a.yaml", "q-b.yaml"]
    estimator = "noisy-oracle"       # for the policies that need one
    placement_opt = { required = "rack" }
    policy_opt = { thresholds = "57600" }
    gpu_only = true
    mtbf = 86400.0

The spellings of earlier grid files (``traces``, ``clusters``, ``policies``, ``placements``,
``seeds``, ``placement_options``) and their ``[grid.selection]`` table are read too. An unknown key,
a value of the wrong type, or a combination a run cannot honour is refused naming the file
and the key, before any cell runs.

Every cell has a stable identifier built from its coordinates, which names its run directory,
so a rerun finds the cells already done. ``estimator`` is given to the cells whose policy
needs one only; ``placement_opt`` must suit every placement of the grid.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched.run_options import AXES, BY_NAME, RunOption, experiment_from, flag, is_default
from dlsched.safe_load import InputError, load_toml, read_text

if TYPE_CHECKING:
    from dlsched.runner import Experiment

PLURALS = {
    "traces": "trace",
    "clusters": "cluster",
    "policies": "policy",
    "placements": "placement",
    "seeds": "seed",
    "placement_options": "placement_opt",
}
"""Keys of earlier grid files and the option each names."""
SELECTION_KEYS = {
    "start": "start",
    "end": "end",
    "vcs": "vc",
    "gpu_only": "gpu_only",
    "subsample": "subsample",
    "submit_scale": "submit_scale",
}
"""Keys of an earlier grid file's ``[grid.selection]`` table and the option each names."""
_PATHS = ("trace", "faults", "queue_map")
"""Options whose values are files: read relative to the grid file."""


class GridError(ValueError):
    """A grid specification that cannot be run; the message names the option or field."""


@dataclass(frozen=True)
class Cell:
    """One simulation of the grid: its value of every axis (``None``: the option's default)."""

    trace: str | None
    cluster: str | None
    policy: str
    placement: str | None = None
    seed: int = 0
    queues: str | None = None
    load_scale: float | None = None
    preset: str | None = None

    @property
    def key(self) -> str:
        """A file-name-safe identifier, unique within a grid and stable across runs."""
        if self.trace is None:
            where = f"preset-{_slug(self.preset or '')}"
        else:
            stem = _slug(Path(self.trace).stem)
            cluster = self.cluster or ""
            cluster = _slug(Path(cluster).stem if cluster.endswith(".toml") else cluster)
            digest = hashlib.sha1(f"{self.trace}\0{self.cluster}".encode()).hexdigest()[:6]
            where = f"{stem}-{cluster}-{digest}"
        key = f"{where}__{self.policy}__{self.placement or 'consolidate'}__s{self.seed}"
        if self.queues is not None:
            digest = hashlib.sha1(self.queues.encode()).hexdigest()[:6]
            key += f"__q-{_slug(Path(self.queues).stem)}-{digest}"
        if self.load_scale is not None:
            key += f"__x{self.load_scale:g}"
        return key

    @property
    def group(self) -> tuple[Any, ...]:
        """The coordinates other than the seed: seeds of one group are replicates."""
        return (self.trace, self.cluster, self.policy, self.placement, self.queues, self.load_scale)

    def values(self) -> dict[str, Any]:
        """The axis values as run options."""
        names = ("trace", "cluster", "policy", "placement", "seed", "queues", "load_scale")
        return {name: getattr(self, name) for name in names}


@dataclass(frozen=True)
class Grid:
    """The values of a sweep's run options: ``axes`` (each a tuple of one or more values) and
    ``shared`` (one value each, for every cell). Use :meth:`of` to build one from values by
    option name."""

    axes: Mapping[str, tuple[Any, ...]]
    shared: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, **values: Any) -> Grid:
        """A grid from run-option values by name: an axis option takes one value or a sequence
        of values, any other option one value; ``None`` (or an empty list) is not given."""
        axes: dict[str, tuple[Any, ...]] = {}
        shared: dict[str, Any] = {}
        for name, value in values.items():
            option = _option(name)
            if value is None or (
                option.kind in ("list", "pairs") and not value and not option.axis
            ):
                continue
            if option.axis:
                several = value if isinstance(value, list | tuple) else (value,)
                axes[name] = tuple(_coerce(option, v) for v in several)
            else:
                shared[name] = _coerce(option, value)
        return cls(axes, shared)

    def __post_init__(self) -> None:
        for name, values in self.axes.items():
            if name not in AXES:
                raise GridError(f"{flag(name)} is not an axis of a sweep: give it once")
            if not values:
                raise GridError(f"{flag(name)}: no value given")
            if len(set(values)) != len(values):
                raise GridError(f"{flag(name)} lists a value twice: {list(values)}")
        for name in self.shared:
            if name in AXES:
                raise GridError(f"{flag(name)} is an axis: give it in axes")
        if "preset" in self.shared:
            both = [flag(n) for n in ("trace", "cluster") if n in self.axes]
            if both:
                raise GridError(f"--preset fixes the trace and cluster; drop {', '.join(both)}")
        else:
            for name in ("trace", "cluster", "policy"):
                if name not in self.axes:
                    raise GridError(f"give {flag(name)} (repeated or comma-separated) or --grid")
        self._check_cells()

    def values(self, name: str) -> tuple[Any, ...]:
        """The values option ``name`` takes in this grid's cells."""
        if name in self.axes:
            return tuple(self.axes[name])
        return (self.shared.get(name, BY_NAME[name].default),)

    def cells(self) -> list[Cell]:
        """Every combination of the axes' values (traces outermost, load scales innermost)."""
        names = ("trace", "cluster", "policy", "placement", "seed", "queues", "load_scale")
        preset = self.shared.get("preset")
        return [
            Cell(**dict(zip(names, combo, strict=True)), preset=preset)
            for combo in itertools.product(*(self.values(n) for n in names))
        ]

    def experiment(self, cell: Cell) -> Experiment:
        """The experiment one cell runs: what ``simulate`` runs with the same values."""
        values = {**self.shared, **cell.values()}
        if not _needs_estimate(cell.policy):
            values.pop("estimator", None)
        return experiment_from({k: v for k, v in values.items() if v is not None})

    def _check_cells(self) -> None:
        from dlsched.perf.comm import check_comm_model
        from dlsched.placement.registry import create_placer
        from dlsched.run_options import pairs

        try:
            check_comm_model(self.shared.get("comm_model"))
            options = pairs(self.shared.get("placement_opt", ()), flag("placement_opt"))
            # Built once here so that an option some placement cannot honour is refused before
            # any cell runs, naming the option and the placement.
            for placement in self.values("placement"):
                create_placer(placement or "consolidate", 0, options)
            for policy in self.values("policy"):
                if _needs_estimate(policy) and self.shared.get("estimator") is None:
                    raise ValueError(f"--estimator: policy {policy!r} needs a duration estimator")
            seen: set[tuple[Any, ...]] = set()
            for cell in self.cells():
                # The seed and the trace change nothing a check looks at.
                shape = (cell.policy, cell.placement, cell.queues, cell.load_scale, cell.cluster)
                if shape not in seen:
                    seen.add(shape)
                    self.experiment(cell)
        except GridError:
            raise
        except ValueError as exc:
            raise GridError(str(exc)) from None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (written beside the results); :meth:`from_dict` reads it."""
        return {
            "axes": {k: list(v) for k, v in self.axes.items()},
            "shared": {k: list(v) if isinstance(v, tuple) else v for k, v in self.shared.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Grid:
        """The grid :meth:`to_dict` wrote (or an earlier sweep's ``grid.json``)."""
        if "axes" not in data:
            return cls.of(**_earlier(data))
        return cls.of(**{**data.get("shared", {}), **data["axes"]})


def _earlier(data: Mapping[str, Any]) -> dict[str, Any]:
    """The run options of a grid.json written before grids took every run option."""
    values: dict[str, Any] = {PLURALS[k]: v for k, v in data.items() if k in PLURALS}
    for key in ("estimator", "trace_format", "queues", "queue_map", "comm_model"):
        if data.get(key) is not None:
            values[key] = data[key]
    placement = data.get("placement_options") or {}
    if placement:
        values["placement_opt"] = [f"{k}={v}" for k, v in placement.items()]
    for key, value in (data.get("selection") or {}).items():
        if key in SELECTION_KEYS and not is_default(SELECTION_KEYS[key], value):
            values[SELECTION_KEYS[key]] = value
    return values


def _option(name: str) -> RunOption:
    if name not in BY_NAME:
        raise GridError(f"unknown run option {name!r}; known: {', '.join(sorted(BY_NAME))}")
    return BY_NAME[name]


def _coerce(option: RunOption, value: Any) -> Any:
    """``value`` as option ``option`` takes it; GridError naming the flag otherwise."""
    name = option.cli_flag
    kind = option.kind
    if kind in ("list", "pairs"):
        if isinstance(value, Mapping) and kind == "pairs":
            if not all(isinstance(v, str) for v in value.values()):
                raise GridError(f'{name} expects a table of strings, e.g. {{ key = "value" }}')
            value = [f"{k}={v}" for k, v in value.items()]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise GridError(f"{name} expects a list of strings, got {value!r}")
        return tuple(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise GridError(f"{name} expects true or false, got {value!r}")
        return value
    if kind in ("int", "float"):
        number: type[int | float] = int if kind == "int" else float
        what = "whole numbers" if kind == "int" else "numbers"
        if isinstance(value, str):
            try:
                value = number(value)
            except ValueError:
                raise GridError(f"{name} expects {what}, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(
            value, int | (float if kind == "float" else int)
        ):
            raise GridError(f"{name} expects {what}, got {value!r}")
        return number(value)
    if not isinstance(value, str):
        raise GridError(f"{name} expects a string, got {value!r}")
    return value


def _needs_estimate(policy: str) -> bool:
    from dlsched.policy.registry import policies

    found = policies().get(policy)
    return found is not None and bool(found.needs_estimate)


def cell_dir(out: Path, cell: Cell) -> Path:
    """The run directory of ``cell`` in the sweep directory ``out``."""
    return out / "cells" / cell.key


def load_grid(path: str | Path) -> Grid:
    """Read a grid from a TOML file (module docstring); GridError naming the file and key."""
    path = Path(path)
    try:
        data = load_toml(read_text(path), str(path))
    except InputError as exc:
        raise GridError(str(exc)) from None
    except OSError as exc:
        raise GridError(f"{path}: {exc.strerror or exc}") from None
    unknown_top = sorted(set(data) - {"grid"})
    grid = data.get("grid")
    if not isinstance(grid, dict) or unknown_top:
        raise GridError(f"{path}: expected one [grid] table{_listed(unknown_top, ' (not ')}")
    values: dict[str, Any] = {}

    def give(key: str, name: str, value: Any) -> None:
        if name in values:
            raise GridError(f"{path}: [grid] gives {name!r} twice (as {key!r} too)")
        values[name] = value

    for key, value in grid.items():
        if key == "selection":
            if not isinstance(value, dict):
                raise GridError(f"{path}: [grid.selection] must be a table")
            for sub, inner in value.items():
                if sub not in SELECTION_KEYS:
                    raise GridError(
                        f"{path}: unknown [grid.selection] field {sub!r}; known: "
                        f"{sorted(SELECTION_KEYS)}"
                    )
                give(f"selection.{sub}", SELECTION_KEYS[sub], inner)
            continue
        name: str = PLURALS.get(str(key), str(key))
        if name not in BY_NAME:
            raise GridError(
                f"{path}: unknown [grid] key {key!r}; known: {', '.join(sorted(BY_NAME))}"
            )
        give(key, name, value)
    try:
        for name in values:
            option = BY_NAME[name]
            if option.axis and isinstance(values[name], list):
                values[name] = [_coerce(option, v) for v in values[name]]
            else:
                values[name] = _coerce(option, values[name])
        for name, value in values.items():
            values[name] = _relative(path.parent, name, value)
        return Grid.of(**values)
    except GridError as exc:
        raise GridError(f"{path}: {exc}") from None


def _relative(base: Path, name: str, value: Any) -> Any:
    """File values of ``name`` resolved against ``base`` (the grid file's directory)."""
    if isinstance(value, list | tuple):
        return [_relative(base, name, v) for v in value]
    if not isinstance(value, str) or Path(value).is_absolute():
        return value
    looks_like_file = name in _PATHS
    looks_like_file |= name == "cluster" and value.endswith(".toml")
    looks_like_file |= name == "queues" and (
        "/" in value or value.endswith((".yaml", ".yml")) or (base / value).exists()
    )
    return str((base / value).resolve()) if looks_like_file else value


def _listed(items: Iterable[str], prefix: str) -> str:
    items = list(items)
    return f"{prefix}{', '.join(items)})" if items else ""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:40] or "_"
