"""A sweep of serving runs: one request trace served under schedulers × routers × load scales ×
replica counts × seeds, each cell a serving run directory, then one comparison.

Layout of the sweep directory ``OUT`` (as for job sweeps, :mod:`dlsched.sweep.run`)::

    OUT/grid.json            the grid (``"kind": "serving"``); a rerun may add axis values
    OUT/cells/<cell key>/    one serving run directory per cell
    OUT/results.csv          one row per cell
    OUT/table.md, OUT/*.png  per-group means with 95% confidence intervals over seeds

A cell is written atomically, so a rerun runs only the cells missing. Seeds matter to the
``random`` router only; other cells are deterministic and their seeds replicate exactly.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dlsched.outdir import write_file_atomic
from dlsched.serving.arrivals import scale_rate
from dlsched.serving.bundled import BUNDLED_REQUESTS, bundled_requests_path
from dlsched.serving.cluster import ROUTERS, STATE_ROUTERS, simulate_serving
from dlsched.serving.config import ReplicaConfig
from dlsched.serving.energy import plain_extra
from dlsched.serving.hardware import kv_blocks
from dlsched.serving.metrics import Slo
from dlsched.serving.perf.deployment import deployment_model
from dlsched.serving.readers.read import read_requests
from dlsched.serving.rundir import write_serving_run
from dlsched.serving.schedulers import resolve
from dlsched.sweep.grid import GridError
from dlsched.sweep.report import csv_text, figures, markdown

METRICS = (
    ("ttft_p99_s", "p99 TTFT (s)"),
    ("tbt_p99_s", "p99 token gap, pooled (s)"),
    ("e2e_p99_s", "p99 E2E (s)"),
    ("slo_attainment", "SLO attainment"),
    ("goodput_rps", "goodput (req/s)"),
    ("energy_kwh", "energy (kWh)"),
)
COORDINATES = ("scheduler", "router", "load_scale", "replicas")


@dataclass(frozen=True)
class ServingCell:
    """One serving run of the grid."""

    scheduler: str
    router: str
    load_scale: float
    replicas: int
    seed: int

    @property
    def key(self) -> str:
        """A file-name-safe identifier, stable across runs."""
        return (
            f"{self.scheduler}__{self.router}__x{self.load_scale:g}__r{self.replicas}__s{self.seed}"
        )

    @property
    def group(self) -> tuple[str, str, float, int]:
        """The coordinates other than the seed."""
        return (self.scheduler, self.router, self.load_scale, self.replicas)


@dataclass(frozen=True)
class ServingGrid:
    """The axes of a serving sweep over one request trace and one deployment (model, GPU,
    tensor-parallel degree) under one SLO."""

    requests: str
    schedulers: tuple[str, ...] = ("vllm",)
    routers: tuple[str, ...] = ("round-robin",)
    load_scales: tuple[float, ...] = (1.0,)
    replicas: tuple[int, ...] = (1,)
    seeds: tuple[int, ...] = (0,)
    model: str = "llama2-70b"
    gpu: str = "a100-80gb"
    tp: int = 8
    slo_ttft: float = 2.0
    slo_tbt: float = 0.2

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "schedulers", tuple(resolve(s) for s in self.schedulers))
        except ValueError as exc:
            raise GridError(f"schedulers: {exc}") from None
        for value in self.routers:
            if value not in ROUTERS:
                raise GridError(f"routers: unknown {value!r}; expected one of {ROUTERS}")
        for name in ("schedulers", "routers", "load_scales", "replicas", "seeds"):
            values = getattr(self, name)
            if not values or len(set(values)) != len(values):
                raise GridError(f"{name}: give each value once, got {list(values)}")
        if any(not s > 0 for s in self.load_scales) or any(r < 1 for r in self.replicas):
            raise GridError("load scales must be positive and replicas at least 1")
        routed = sorted(set(self.routers) & set(STATE_ROUTERS))
        if "static" in self.schedulers and routed:
            raise GridError(f"the static scheduler cannot run under {', '.join(routed)}")

    def cells(self) -> list[ServingCell]:
        return [
            ServingCell(s, r, x, n, seed)
            for s in self.schedulers
            for r in self.routers
            for x in self.load_scales
            for n in self.replicas
            for seed in self.seeds
        ]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "serving", **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServingGrid:
        fields = {k: v for k, v in data.items() if k != "kind"}
        for name in ("schedulers", "routers", "load_scales", "replicas", "seeds"):
            fields[name] = tuple(fields[name])
        return cls(**fields)


def run_serving_cell(grid: dict[str, Any], cell: dict[str, Any], out: str) -> str:
    """Serve the grid's trace as ``cell`` says and write its run directory ``out``."""
    g = ServingGrid.from_dict(grid)
    c = ServingCell(**cell)
    path = _requests_path(g.requests)
    read = read_requests(path)
    trace = read.trace if c.load_scale == 1.0 else scale_rate(read.trace, c.load_scale)
    config = ReplicaConfig(c.scheduler, kv_blocks=kv_blocks(g.model, g.gpu, g.tp))
    model = deployment_model(g.model, g.gpu, g.tp, "fitted")
    run = simulate_serving(trace, model, config, c.replicas, c.router, c.seed)
    recorded = {"kind": "serving", "requests": str(path), **grid, **cell}
    extra = plain_extra(run, g.model, g.gpu, g.tp)
    write_serving_run(out, run, Slo(g.slo_ttft, g.slo_tbt), recorded, True, extra)
    return out


def run_serving_sweep(grid: ServingGrid, out: str | Path, workers: int | None = None) -> int:
    """Run the cells of ``grid`` not yet in ``out`` and write the comparison; returns the
    number of cells run. GridError when ``out`` holds another kind of sweep or trace."""
    out = Path(out)
    if out.exists() and not (out / "grid.json").is_file() and any(out.iterdir()):
        raise GridError(f"{out} is not empty and holds no sweep (no grid.json); use another --out")
    read_requests(_requests_path(grid.requests))  # a bad trace is refused before OUT exists
    full = _merge_grid(out, grid)
    cells = [c for c in grid.cells() if not (out / "cells" / c.key / "summary.json").is_file()]
    jobs = [(grid.to_dict(), asdict(c), str(out / "cells" / c.key)) for c in cells]
    workers = min(len(jobs), workers or os.cpu_count() or 1)
    if workers <= 1:
        for job in jobs:
            run_serving_cell(*job)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(run_serving_cell, *job) for job in jobs]:
                future.result()
    _write_report(out, full)
    return len(cells)


def _requests_path(requests: str) -> str:
    return str(bundled_requests_path(requests)) if requests in BUNDLED_REQUESTS else requests


def _merge_grid(out: Path, grid: ServingGrid) -> ServingGrid:
    """The grid of ``out`` after this run: the axes of an earlier run there and of ``grid``."""
    path = out / "grid.json"
    data = grid.to_dict()
    if path.is_file():
        old = json.loads(path.read_text())
        if old.get("kind") != "serving":
            raise GridError(f"{out} holds a sweep of job runs; use another --out")
        for key in ("requests", "model", "gpu", "tp", "slo_ttft", "slo_tbt"):
            if old[key] != data[key]:
                raise GridError(f"{out} holds a sweep with {key} {old[key]!r}; use another --out")
        for key in ("schedulers", "routers", "load_scales", "replicas", "seeds"):
            data[key] = list(dict.fromkeys([*old[key], *data[key]]))
    out.mkdir(parents=True, exist_ok=True)
    write_file_atomic(path, json.dumps(data, indent=2) + "\n")
    return ServingGrid.from_dict(data)


def cell_row(out: Path, cell: ServingCell) -> dict[str, Any]:
    """The coordinates and figures of one finished cell."""
    summary = json.loads((out / "cells" / cell.key / "summary.json").read_text())
    return {
        **asdict(cell),
        "requests": summary["requests"],
        "ttft_p99_s": summary["ttft_s"]["p99"],
        "tbt_p99_s": summary["tbt_s"]["p99"],
        "e2e_p99_s": summary["e2e_s"]["p99"],
        "slo_attainment": summary["slo_attainment"],
        "goodput_rps": summary["goodput_rps"],
        "energy_kwh": summary.get("energy_kwh"),
    }


def _write_report(out: Path, grid: ServingGrid) -> None:
    cells = [c for c in grid.cells() if (out / "cells" / c.key / "summary.json").is_file()]
    rows = [cell_row(out, c) for c in cells]
    fields = [*COORDINATES, "seed", "requests", *(k for k, _ in METRICS)]
    write_file_atomic(out / "results.csv", csv_text(rows, fields))
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for cell, row in zip(cells, rows, strict=True):
        groups[cell.group].append(row)
    labelled = {tuple(str(v) for v in g): rows for g, rows in groups.items()}
    write_file_atomic(out / "table.md", markdown(labelled, COORDINATES, METRICS))
    figures(out, labelled, METRICS)
