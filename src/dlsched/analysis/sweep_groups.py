"""The finished cells of a sweep directory (``dlsched sweep``: ``grid.json``, ``results.csv``,
``cells/*/``), grouped as the sweep's ``table.md`` groups them: by every coordinate but the
seed (:attr:`dlsched.sweep.grid.Cell.group`), groups and the seeds within them in the grid's
order (:meth:`dlsched.sweep.grid.Grid.cells`). A cell is finished when its run directory
holds ``summary.json`` (a cell's run directory is written whole or not at all)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRID_FILE = "grid.json"
SERVING = "serving"


@dataclass(frozen=True)
class CellGroup:
    """The finished cells of one group: their run directories and seeds, in grid order, and
    the group's coordinates as ``table.md`` shows them (trace and queues by file name)."""

    runs: tuple[Path, ...]
    seeds: tuple[int, ...]
    coordinates: dict[str, Any]

    @property
    def name(self) -> str:
        """The coordinates' values joined by " / " (as the sweep's figures label a group)."""
        return " / ".join(str(v) for v in self.coordinates.values())


@dataclass(frozen=True)
class SweepGroups:
    """A sweep's finished cells by group; ``cells_in_grid`` counts its grid's cells, finished
    or not."""

    sweep: Path
    cells_in_grid: int
    groups: tuple[CellGroup, ...]

    @property
    def cells_finished(self) -> int:
        return sum(len(g.runs) for g in self.groups)


def is_sweep(path: str | Path) -> bool:
    """Whether ``path`` is a sweep directory (it holds ``grid.json``)."""
    p = Path(path)
    return p.is_dir() and (p / GRID_FILE).is_file()


def sweep_groups(path: str | Path) -> SweepGroups:
    """The finished cells of sweep directory ``path`` by group (module docstring).

    ValueError in one line naming the directory or its grid file: an unreadable grid, a sweep
    of serving runs (``dlsched sweep --requests``), a sweep with no finished cell."""
    from dlsched.sweep.grid import Grid, cell_dir

    sweep = Path(path)
    grid_file = sweep / GRID_FILE
    try:
        data = json.loads(grid_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{grid_file}: not a sweep's grid file ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{grid_file}: not a sweep's grid file (expected a JSON object)")
    if data.get("kind") == SERVING:
        raise ValueError(
            f"{sweep}: a sweep of serving runs; analyze compares job runs (its table.md "
            "compares the serving cells)"
        )
    try:
        grid = Grid.from_dict(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{grid_file}: not a sweep's grid file ({exc})") from None
    cells = grid.cells()
    by_group: dict[tuple[Any, ...], list[Any]] = {}
    for cell in cells:
        if (cell_dir(sweep, cell) / "summary.json").is_file():
            by_group.setdefault(cell.group, []).append(cell)
    if not by_group:
        raise ValueError(
            f"{sweep}: a sweep with no finished cell (no {sweep / 'cells'}/*/summary.json); "
            "run or resume it with dlsched sweep first"
        )
    groups = []
    for members in by_group.values():
        first = members[0]
        coordinates: dict[str, Any] = {
            "trace": Path(first.trace).name if first.trace else f"preset:{first.preset}",
            "cluster": first.cluster,
            "policy": first.policy,
            "placement": first.placement or "consolidate",
        }
        if first.queues is not None:
            coordinates["queues"] = Path(first.queues).name
        if first.load_scale is not None:
            coordinates["load_scale"] = first.load_scale
        groups.append(
            CellGroup(
                runs=tuple(cell_dir(sweep, c) for c in members),
                seeds=tuple(c.seed for c in members),
                coordinates=coordinates,
            )
        )
    return SweepGroups(sweep, len(cells), tuple(groups))
