"""Running a grid: every cell not yet done, in parallel, then the comparison table.

Layout of the sweep directory ``OUT``::

    OUT/grid.json            the grid (a rerun must use the same grid, or a superset of it)
    OUT/cells/<cell key>/    one run directory per cell (jobs, timeline, config, summary)
    OUT/results.csv          one row per cell (written by :mod:`dlsched.sweep.report`)
    OUT/table.md, OUT/*.png  per-group means with 95% confidence intervals over seeds

A cell's run directory is written atomically, so a cell either exists complete or not at all;
a rerun after an interruption runs only the missing cells. The grid is checked (clusters,
traces, extras) before ``OUT`` is created, and a sweep that fails before any cell is done
removes the ``OUT`` it created. Cells run in a process pool
(``workers`` processes) or, given ``ray_address``, as Ray tasks on that cluster (one CPU each).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.cluster.parse import resolve_cluster
from dlsched.outdir import write_file_atomic
from dlsched.policy.registry import policies
from dlsched.progress import ProgressFn
from dlsched.run_options import flag
from dlsched.runner import Experiment, check_extras, run_experiment
from dlsched.sweep.grid import Cell, Grid, GridError, cell_dir
from dlsched.sweep.report import write_report


@dataclass(frozen=True)
class SweepOutcome:
    """What a sweep did: cells run now, cells found done, and the directory."""

    out: Path
    ran: tuple[str, ...]
    reused: tuple[str, ...]
    figures: bool = True


def run_cell(experiment: dict[str, Any], cell_dir: str) -> str:
    """Run one cell and write its run directory (the unit of work of every executor). A cell
    directory without a summary is the sweep's own unfinished cell, and is replaced."""
    run_experiment(Experiment.from_dict(experiment), cell_dir, force=True)
    return cell_dir


def is_done(out: Path, cell: Cell) -> bool:
    return (cell_dir(out, cell) / "summary.json").is_file()


def run_sweep(
    grid: Grid,
    out: str | Path,
    workers: int | None = None,
    ray_address: str | None = None,
    progress: ProgressFn | None = None,
) -> SweepOutcome:
    """Run the cells of ``grid`` not yet in ``out`` (module docstring), then write the report.

    Raises GridError if ``out`` holds a sweep of a grid that does not include this one's
    existing cells' coordinates (so unrelated results are never mixed)."""
    out = Path(out)
    check_grid(grid)
    created = not out.exists()
    try:
        return _run(grid, out, workers, ray_address, progress)
    except BaseException:
        if created and not any(out.glob("cells/*/summary.json")):
            shutil.rmtree(out, ignore_errors=True)
        raise


def check_grid(grid: Grid) -> None:
    """What can be checked before any cell runs: every cluster resolves, every trace file
    exists, every queue configuration reads, every extra a cell needs is installed
    (ValueError / MissingExtra)."""
    experiments = [grid.experiment(cell) for cell in grid.cells()]
    for cluster in dict.fromkeys(e.cluster for e in experiments):
        resolve_cluster(cluster)
    for trace in dict.fromkeys(e.trace for e in experiments):
        if not Path(trace).is_file():
            raise GridError(f"{trace}: no such trace file")
    for queues in grid.values("queues"):
        if queues is not None:
            _check_queues(grid, queues)
    for experiment in experiments:
        check_extras(experiment.sim)


def _check_queues(grid: Grid, queues: str) -> None:
    """One queue configuration and the queue map read, and every policy orders jobs (the
    admission stage runs in front of ordering policies only)."""
    from dlsched.tenancy.manifests import read_manifests
    from dlsched.tenancy.queue_map import read_queue_map

    tenancy = read_manifests(queues)
    queue_map = grid.shared.get("queue_map")
    if queue_map is not None:
        read_queue_map(queue_map).check(tenancy)
    ordering = policies()
    for policy in grid.values("policy"):
        if policy not in ordering:
            raise GridError(
                f"--queues: policy {policy!r} allocates GPUs beyond what jobs ask, which quotas "
                f"cannot charge; with queues use ordering policies ({', '.join(sorted(ordering))})"
            )


def _run(
    grid: Grid,
    out: Path,
    workers: int | None,
    ray_address: str | None,
    progress: ProgressFn | None,
) -> SweepOutcome:
    out.mkdir(parents=True, exist_ok=True)
    _check_grid_file(out, grid)
    cells = grid.cells()
    todo = [c for c in cells if not is_done(out, c)]
    reused = tuple(c.key for c in cells if c not in todo)
    jobs = [(grid.experiment(c).to_dict(), str(cell_dir(out, c))) for c in todo]
    done = len(reused)
    if progress is not None:
        progress(done, len(cells))
    runner = _ray_runs(jobs, ray_address) if ray_address else _pool_runs(jobs, workers)
    for _ in runner:
        done += 1
        if progress is not None:
            progress(done, len(cells))
    figures = write_report(out)
    return SweepOutcome(out, tuple(c.key for c in todo), reused, figures)


def _pool_runs(jobs: list[tuple[dict[str, Any], str]], workers: int | None) -> Iterator[str]:
    if not jobs:
        return
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    if workers == 1:
        for experiment, target in jobs:
            yield run_cell(experiment, target)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_cell, experiment, target) for experiment, target in jobs]
        for future in as_completed(futures):
            yield future.result()


def _ray_runs(jobs: list[tuple[dict[str, Any], str]], address: str) -> Iterator[str]:
    try:
        import ray
    except ImportError:
        raise GridError("--ray-address needs Ray: pip install 'dlsched[ray]'") from None
    if not jobs:
        return
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, log_to_driver=False, include_dashboard=False)
    try:
        remote = ray.remote(num_cpus=1)(run_cell)
        pending = [remote.remote(experiment, target) for experiment, target in jobs]
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            yield str(ray.get(ready[0]))
    finally:
        if started_here:
            ray.shutdown()


def _check_grid_file(out: Path, grid: Grid) -> None:
    """Record ``grid`` in ``out/grid.json``: a sweep already there must have the same shared
    options; its axes' values are kept and this grid's added."""
    path = out / "grid.json"
    data = json.loads(json.dumps(grid.to_dict()))
    if path.exists():
        try:
            old = Grid.from_dict(json.loads(path.read_text())).to_dict()
        except (json.JSONDecodeError, ValueError, KeyError, TypeError):
            raise GridError(f"{path}: not a sweep's grid file") from None
        old = json.loads(json.dumps(old))
        for name in sorted(set(old["shared"]) | set(data["shared"])):
            if old["shared"].get(name) != data["shared"].get(name):
                raise GridError(
                    f"{out} holds a sweep with a different {flag(name)} "
                    f"({old['shared'].get(name)!r}, now {data['shared'].get(name)!r}); "
                    "use another --out"
                )
        for name in sorted(set(old["axes"]) ^ set(data["axes"])):
            raise GridError(
                f"{out} holds a sweep {'with' if name in old['axes'] else 'without'} "
                f"{flag(name)}; use another --out"
            )
        for name, values in data["axes"].items():
            data["axes"][name] = list(dict.fromkeys([*old["axes"][name], *values]))
    elif any(out.iterdir()):
        raise GridError(f"{out} is not empty and holds no sweep (no grid.json); use another --out")
    write_file_atomic(path, json.dumps(data, indent=2) + "\n")
