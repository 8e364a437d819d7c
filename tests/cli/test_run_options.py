"""One option set: every run option of dlsched.run_options is an option of simulate and of
sweep and a key of a grid file, with one meaning — a sweep's cell runs exactly what simulate
runs with the same values — and several queue configurations make a what-if of quotas."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import dlsched
from dlsched.cli.main import app
from dlsched.run_options import AXES, BY_NAME, RUN_OPTIONS, experiment_from
from dlsched.sweep.grid import load_grid
from dlsched.trace.bundled import bundled_trace_path

TRACE = bundled_trace_path("philly_jobs_2000")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def help_of(command: str) -> str:
    # Wide enough that rich does not wrap a flag.
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("command", ["simulate", "sweep"])
def test_every_run_option_is_an_option_of_simulate_and_sweep(command: str) -> None:
    shown = set(re.findall(r"--[a-z][a-z0-9-]*", help_of(command)))
    missing = [o.cli_flag for o in RUN_OPTIONS if o.cli_flag not in shown]
    assert not missing, f"{command} lacks {missing}"


@pytest.mark.parametrize(
    ("command", "names"),
    [
        ("serve", ("cluster", "policy", "policy_opt", "placement", "placement_opt", "queues")),
        ("serve-sim", ("cluster", "policy", "seed")),
    ],
)
def test_the_service_and_serve_sim_take_run_options_by_the_same_definitions(
    command: str, names: tuple[str, ...]
) -> None:
    shown = " ".join(help_of(command).split())
    for name in names:
        option = BY_NAME[name]
        assert option.cli_flag in shown
        assert " ".join(option.help.split())[:30] in shown, name


def test_every_run_option_is_a_grid_key(tmp_path: Path) -> None:
    # Each key is accepted (a value of the wrong type is refused naming its flag, which shows
    # the key was read as that option).
    for option in RUN_OPTIONS:
        path = tmp_path / "grid.toml"
        path.write_text(f"[grid]\n{option.name} = {{ a = 1 }}\n")
        with pytest.raises(ValueError, match=option.cli_flag):
            load_grid(path)


def test_the_axes_are_the_documented_ones() -> None:
    assert AXES == ("trace", "cluster", "load_scale", "policy", "seed", "placement", "queues")


OPTIONS: list[list[str]] = [
    ["--no-partitions", "--policy", "tiresias", "--policy-opt", "thresholds=3600"],
    ["--policy", "fifo", "--backfill", "--vc", "6214e9,7f04ca", "--gpu-only"],
    ["--policy", "sjf", "--mtbf", "200000", "--mttr", "1800", "--checkpoint-interval", "600"],
    ["--policy", "fifo", "--start", "0", "--end", "2000000", "--restart-cost", "helios"],
    ["--policy", "fifo", "--power-manager", "reactive", "--no-power-baseline"],
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: " ".join(o[:3]))
def test_a_sweep_cell_runs_what_simulate_runs(tmp_path: Path, options: list[str]) -> None:
    base = ["--trace", TRACE, "--cluster", "philly-vcs", *options, "--no-progress"]
    ran = invoke("simulate", *base, "--out", tmp_path / "sim")
    assert ran.exit_code == 0, ran.output
    swept = invoke("sweep", *base, "--workers", "1", "--out", tmp_path / "sweep")
    assert swept.exit_code == 0, swept.output
    (cell,) = (tmp_path / "sweep" / "cells").iterdir()
    for name in ("config.json", "summary.json"):
        one = json.loads((tmp_path / "sim" / name).read_text())
        other = json.loads((cell / name).read_text())
        one.pop("sim_wall_s", None), other.pop("sim_wall_s", None)
        assert one == other, name


def test_a_grid_file_with_the_options_names_equals_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "grid.toml"
    path.write_text(
        f'[grid]\ntrace = "{TRACE}"\ncluster = "philly-vcs"\npolicy = ["fifo", "tiresias"]\n'
        'seed = [0, 1]\nno_partitions = true\nmtbf = 86400.0\nvc = ["6214e9"]\n'
        'policy_opt = { thresholds = "3600" }\n'
    )
    grid = load_grid(path)
    cells = grid.cells()
    assert len(cells) == 4
    tiresias = next(c for c in cells if c.policy == "tiresias")
    values: dict[str, Any] = {
        "trace": str(TRACE),
        "cluster": "philly-vcs",
        "policy": "tiresias",
        "seed": tiresias.seed,
        "no_partitions": True,
        "mtbf": 86400.0,
        "vc": ("6214e9",),
        "policy_opt": ("thresholds=3600",),
    }
    assert grid.experiment(tiresias) == experiment_from(values)


def test_several_queue_configurations_are_a_what_if_of_quotas(tmp_path: Path) -> None:
    # The bundled cohort lets VCs borrow each other's idle GPUs; the same queues without the
    # cohort cannot, so jobs of busy VCs wait longer.
    alone = tmp_path / "no-cohort.yaml"
    text = (Path(dlsched.__file__).parent / "data" / "queues" / "philly-cohort.yaml").read_text()
    alone.write_text(text.replace("  cohort: philly\n", ""))
    out = tmp_path / "whatif"
    r = invoke(
        "sweep", "--trace", TRACE, "--cluster", "philly-vcs", "--policy", "fifo",
        "--no-partitions", "--submit-scale", "0.05", "--queues", f"philly-cohort,{alone}",
        "--workers", "1", "--no-progress", "--out", out,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    with (out / "results.csv").open() as handle:
        rows = {Path(row["queues"]).name: row for row in csv.DictReader(handle)}
    assert set(rows) == {"philly-cohort", "no-cohort.yaml"}
    assert float(rows["no-cohort.yaml"]["avg_queue_s"]) > float(
        rows["philly-cohort"]["avg_queue_s"]
    )
    lines = (out / "table.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| trace"))
    assert "| queues |" in header
    assert any("| no-cohort.yaml |" in line for line in lines)
    assert any("| philly-cohort |" in line for line in lines)
    # A rerun with one of the two configurations finds its cell done.
    again = invoke(
        "sweep", "--trace", TRACE, "--cluster", "philly-vcs", "--policy", "fifo",
        "--no-partitions", "--submit-scale", "0.05", "--queues", "philly-cohort", "--workers", "1",
        "--no-progress", "--out", out,
    )  # fmt: skip
    assert again.exit_code == 0 and "ran 0 cells, reused 1" in again.output


def test_simulate_takes_the_trace_as_an_argument_too(tmp_path: Path) -> None:
    r = invoke(
        "simulate", TRACE, "--cluster", "philly-vcs", "--no-progress", "--out", tmp_path / "a"
    )
    assert r.exit_code == 0, r.output
    r = invoke(
        "simulate", TRACE, "--trace", tmp_path / "other.csv", "--cluster", "philly-vcs",
        "--out", tmp_path / "b",
    )  # fmt: skip
    assert r.exit_code == 2 and "give the trace once" in r.output


def test_sweep_refuses_a_repeated_value_and_options_a_run_cannot_honour(
    tmp_path: Path,
) -> None:
    base = ["sweep", "--trace", TRACE, "--cluster", "philly-vcs", "--out", tmp_path / "x"]
    r = invoke(*base, "--policy", "fifo,fifo")
    assert r.exit_code == 2 and "--policy lists fifo more than once" in r.output
    r = invoke(*base, "--policy", "fifo", "--power-opt", "x=1")
    assert r.exit_code == 2 and "--power-opt: needs --power-manager" in r.output
    assert not (tmp_path / "x").exists()
