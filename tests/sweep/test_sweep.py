"""``dlsched sweep``: grids, parallel and resumable runs, the comparison, and Ray."""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.sweep.grid import Cell, Grid, GridError, load_grid
from dlsched.sweep.report import jain_index, mean_ci
from dlsched.sweep.run import run_sweep
from dlsched.testing.ray_cluster import have_ray_and_namespaces, run_with_ray_cluster
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.io import write_parquet
from dlsched.trace.synth.philly_like import synthetic_trace


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("trace") / "small.parquet"
    write_parquet(synthetic_trace(300, seed=3), path)
    return str(path)


def grid_of(trace: str, **kw: object) -> Grid:
    args: dict[str, object] = {
        "trace": (trace,),
        "cluster": ("8x8",),
        "policy": ("fifo", "tiresias"),
        "placement": ("random",),
        "seed": (0, 1),
    }
    args.update(kw)
    return Grid.of(**args)


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_cells_cover_the_grid_with_stable_unique_keys(small_trace: str) -> None:
    grid = grid_of(small_trace, cluster=("8x8", "4x8"), placement=("random", "consolidate"))
    cells = grid.cells()
    assert len(cells) == 1 * 2 * 2 * 2 * 2
    assert len({c.key for c in cells}) == len(cells)
    again = Grid.from_dict(json.loads(json.dumps(grid.to_dict())))
    assert [c.key for c in again.cells()] == [c.key for c in cells]
    assert Cell(small_trace, "8x8", "fifo", "random", 1).key.endswith("__fifo__random__s1")


def test_grid_errors_name_the_field(tmp_path: Path, small_trace: str) -> None:
    with pytest.raises(GridError, match="unknown policy 'fifoo'; did you mean 'fifo'"):
        grid_of(small_trace, policy=("fifoo",))
    with pytest.raises(GridError, match="--seed lists a value twice"):
        grid_of(small_trace, seed=(1, 1))
    with pytest.raises(GridError, match="policy 'qssf' needs a duration estimator"):
        grid_of(small_trace, policy=("qssf",))
    bad = tmp_path / "grid.toml"
    bad.write_text(
        '[grid]\ntraces = ["t.csv"]\nclusters = ["8x8"]\npolicies = ["fifo"]\nsed = [1]\n'
    )
    with pytest.raises(GridError, match=r"grid.toml: unknown \[grid\] key 'sed'; known: "):
        load_grid(bad)
    bad.write_text(
        '[grid]\ntraces = ["t.csv"]\nclusters = ["8x8"]\npolicies = ["fifo"]\nseeds = ["a"]\n'
    )
    with pytest.raises(GridError, match=r"grid.toml: --seed expects whole numbers, got 'a'"):
        load_grid(bad)
    bad.write_text(
        '[grid]\ntrace = "t.csv"\ncluster = "8x8"\npolicy = "fifo"\nseed = 1\nseeds = [2]\n'
    )
    with pytest.raises(GridError, match="gives 'seed' twice"):
        load_grid(bad)


def test_toml_grid_resolves_paths_next_to_the_file(tmp_path: Path, small_trace: str) -> None:
    local = tmp_path / "small.parquet"
    local.write_bytes(Path(small_trace).read_bytes())
    spec = tmp_path / "grid.toml"
    spec.write_text(
        '[grid]\ntraces = ["small.parquet"]\nclusters = ["8x8"]\npolicies = ["fifo", "sjf"]\n'
        "seeds = [0, 1, 2]\n[grid.selection]\ngpu_only = true\n"
    )
    grid = load_grid(spec)
    assert grid.values("trace") == (str(local.resolve()),)
    assert grid.shared["gpu_only"] and len(grid.cells()) == 6


def test_jain_index_and_confidence_interval_by_hand() -> None:
    assert jain_index(np.array([2.0, 2.0, 2.0])) == pytest.approx(1.0)
    assert jain_index(np.array([1.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)
    assert jain_index(np.array([1.0, 3.0])) == pytest.approx(16 / (2 * 10))
    assert jain_index(np.array([])) is None
    mean, half = mean_ci([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert half == pytest.approx(stats.t.ppf(0.975, 2) * 1.0 / math.sqrt(3))
    assert mean_ci([5.0]) == (5.0, None)


def test_parallel_sweep_equals_serial_and_resumes(tmp_path: Path, small_trace: str) -> None:
    grid = grid_of(small_trace)
    serial = run_sweep(grid, tmp_path / "serial", workers=1)
    parallel = run_sweep(grid, tmp_path / "parallel", workers=2)
    assert len(serial.ran) == len(parallel.ran) == 4
    assert rows(tmp_path / "serial") == rows(tmp_path / "parallel")
    out = tmp_path / "parallel"
    table = (out / "table.md").read_text()
    assert table.count("| small.parquet | 8x8 |") == 2
    assert "±" in table, "two seeds give a confidence interval"
    for png in ("avg_jct_s.png", "avg_queue_s.png", "fairness_jain.png", "energy_kwh.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    results = rows(out)
    random_placement_differs = {r["avg_jct_s"] for r in results if r["policy"] == "tiresias"}
    assert len(results) == 4 and all(r["jobs"] == "300" for r in results)
    assert len(random_placement_differs) >= 1

    again = run_sweep(grid, out, workers=2)
    assert again.ran == () and len(again.reused) == 4
    victim = grid.cells()[1]
    summary = out / "cells" / victim.key / "summary.json"
    summary.unlink()
    resumed = run_sweep(grid, out, workers=2)
    assert resumed.ran == (victim.key,)
    assert rows(out) == results

    wider = grid_of(small_trace, seed=(0, 1, 2))
    extended = run_sweep(wider, out, workers=2)
    assert len(extended.ran) == 2 and len(rows(out)) == 6


def test_a_sweep_runs_elastic_policies_on_an_elastic_workload(tmp_path: Path) -> None:
    # Elastic jobs run on the one simulator, so a sweep covers their policies like any other.
    lines = bundled_trace_path("pollux_workload-6").read_text().splitlines()[:21]
    trace = tmp_path / "elastic.csv"
    trace.write_text("\n".join(lines) + "\n")
    grid = Grid.of(trace=str(trace), cluster="pollux", policy=("pollux", "tiresias"))
    run_sweep(grid, tmp_path / "out", workers=1)
    results = rows(tmp_path / "out")
    assert {r["policy"] for r in results} == {"pollux", "tiresias"}
    assert all(r["jobs"] == "20" for r in results)


def test_sweep_refuses_foreign_directories(tmp_path: Path, small_trace: str) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(GridError, match="holds no sweep"):
        run_sweep(grid_of(small_trace), tmp_path, workers=1)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_cli_sweep_prints_the_table_and_names_bad_input(tmp_path: Path, small_trace: str) -> None:
    runner = CliRunner()
    out = tmp_path / "sweep"
    base = ["sweep", "--trace", small_trace, "--cluster", "8x8", "--out", str(out)]
    result = runner.invoke(app, [*base, "--policy", "fifo,sjf", "--seed", "0", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "ran 2 cells, reused 0" in result.output and "| sjf |" in result.output
    bad = runner.invoke(app, [*base, "--policy", "fifo", "--seed", "x"])
    assert bad.exit_code == 2 and "--seed expects whole numbers" in bad.output
    missing = runner.invoke(app, ["sweep", "--out", str(tmp_path / "o"), "--trace", small_trace])
    assert missing.exit_code == 2 and "give --cluster" in missing.output


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.long
def test_sweep_on_a_three_node_ray_cluster_equals_the_process_pool(
    tmp_path: Path, small_trace: str
) -> None:
    reason = have_ray_and_namespaces()
    if reason is not None:
        pytest.fail(f"the Ray test cannot run here: {reason}")
    grid = grid_of(small_trace, policy=("fifo", "sjf", "tiresias"))
    run_sweep(grid, tmp_path / "pool", workers=2)
    dlsched = str(Path(sys.executable).parent / "dlsched")
    output = run_with_ray_cluster(
        [
            dlsched, "sweep", "--trace", small_trace, "--cluster", "8x8",
            "--policy", "fifo,sjf,tiresias", "--placement", "random", "--seed", "0,1",
            "--ray-address", "127.0.0.1:6379", "--out", str(tmp_path / "ray"), "--no-progress",
        ]
    )  # fmt: skip
    assert "ran 6 cells, reused 0" in output
    assert rows(tmp_path / "ray") == rows(tmp_path / "pool")
