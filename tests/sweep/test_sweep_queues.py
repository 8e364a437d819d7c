"""``dlsched sweep --queues``: every cell admits through the manifests, results.csv and the
table carry the tenant fairness figures, and bad queue input is refused before any cell."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from dlsched.cli.main import app
from dlsched.sweep.grid import GridError, load_grid
from dlsched.trace.bundled import bundled_trace_path

TRACE = bundled_trace_path("philly_jobs_2000")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def test_sweep_with_queues_reports_tenant_fairness(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    r = invoke(
        "sweep", "--trace", TRACE, "--cluster", "philly-vcs", "--policy", "fifo,sjf",
        "--queues", "philly-cohort", "--workers", "1", "--out", out, "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "tenant fairness (Jain, shares)" in r.output
    with (out / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [row["policy"] for row in rows] == ["fifo", "sjf"]
    for row in rows:
        cell = next((out / "cells").glob(f"*__{row['policy']}__*"))
        summary = json.loads((cell / "summary.json").read_text())
        assert len(summary["tenants"]) == 11
        assert 0 < float(row["tenant_fairness_jain"]) <= 1
        assert float(row["tenant_fairness_jain"]) == summary["tenant_fairness_jain"]
        deviation = float(row["tenant_fair_share_max_deviation"])
        assert deviation == summary["tenant_fair_share_max_deviation"] and deviation >= 0
        config = json.loads((cell / "config.json").read_text())
        assert config["sim"]["queues"] == "philly-cohort"
    assert json.loads((out / "grid.json").read_text())["axes"]["queues"] == ["philly-cohort"]


def test_sweep_without_queues_leaves_tenant_columns_empty(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    r = invoke(
        "sweep", "--trace", TRACE, "--cluster", "philly-vcs", "--policy", "fifo",
        "--workers", "1", "--out", out, "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "tenant fairness" not in (out / "table.md").read_text()
    with (out / "results.csv").open() as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["tenant_fairness_jain"] == "" and row["tenant_fair_share_max_deviation"] == ""


def test_bad_queue_input_is_refused_before_any_cell(tmp_path: Path) -> None:
    base = ["sweep", "--trace", TRACE, "--cluster", "philly-vcs", "--no-progress"]
    out = tmp_path / "a"
    r = invoke(*base, "--policy", "fifo", "--queue-map", tmp_path / "m.toml", "--out", out)
    assert r.exit_code == 2 and "give --queues" in r.output
    r = invoke(*base, "--policy", "fifo", "--queues", tmp_path / "none.yaml", "--out", out)
    assert r.exit_code == 2 and "none.yaml: no such file or directory" in r.output
    qmap = tmp_path / "map.toml"
    qmap.write_text('[vc]\n6214e9 = "philly/nope"\n')
    r = invoke(
        *base, "--policy", "fifo", "--queues", "philly-cohort", "--queue-map", qmap, "--out", out
    )
    assert r.exit_code == 2 and "philly/nope" in r.output
    r = invoke(*base, "--policy", "fifo,pollux", "--queues", "philly-cohort", "--out", out)
    assert r.exit_code == 2 and "policy 'pollux' allocates GPUs" in r.output
    assert "Traceback" not in r.output
    assert not out.exists()


def test_toml_grid_queues_resolve_next_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "grid.toml"
    path.write_text(
        f'[grid]\ntraces = ["{TRACE}"]\nclusters = ["philly-vcs"]\npolicies = ["fifo"]\n'
        'queues = "q.yaml"\nqueue_map = "map.toml"\n'
    )
    grid = load_grid(path)
    assert grid.values("queues") == (str(tmp_path / "q.yaml"),)
    assert grid.shared["queue_map"] == str(tmp_path / "map.toml")
    path.write_text(
        f'[grid]\ntraces = ["{TRACE}"]\nclusters = ["philly-vcs"]\npolicies = ["fifo"]\n'
        'queue_map = "map.toml"\n'
    )
    with pytest.raises(GridError, match="--queue-map maps jobs to the LocalQueues") as info:
        load_grid(path)
    assert str(path) in str(info.value)


def test_two_queue_configurations_give_the_what_if_per_queue(tmp_path: Path) -> None:
    from tests.tenancy.kueue_manifests import documents, write

    # b borrows a's idle half at first and a reclaims it (baseline); with a lending nothing,
    # b waits for its own quota instead and nobody is evicted.
    shared = {"cohort": "pool", "reclaim": "Any"}
    lend = write(tmp_path / "lend.yaml", documents({"a": {"gpu": 4, **shared},
                                                    "b": {"gpu": 4, **shared}}))  # fmt: skip
    keep = write(tmp_path / "keep.yaml", documents({"a": {"gpu": 4, "lend": 0, **shared},
                                                    "b": {"gpu": 4, **shared}}))  # fmt: skip
    trace = tmp_path / "jobs.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,duration,vc\n"
        "b1,0,4,1000,b\nb2,0,4,1000,b\na1,100,4,200,a\na2,400,4,200,a\n"
    )
    out = tmp_path / "whatif"
    r = invoke(
        "sweep", "--trace", trace, "--cluster", "1x8", "--no-partitions", "--policy", "fifo",
        "--queues", f"{lend},{keep}", "--seed", "0,1", "--workers", "1", "--out", out,
        "--no-progress",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    with (out / "whatif.csv").open() as handle:
        rows = {(row["level"], row["name"], row["metric"]): row for row in csv.DictReader(handle)}
    assert {row["queues"] for row in rows.values()} == {str(keep)}
    assert {row["baseline_queues"] for row in rows.values()} == {str(lend)}

    def delta(level: str, name: str, metric: str) -> float:
        row = rows[(level, name, metric)]
        assert row["seeds"] == "2" and float(row["delta_ci95"]) == 0  # deterministic FIFO
        return float(row["delta"])

    # Baseline: b2 borrows a's 4 GPUs, a1 reclaims them, b2 borrows them again once a1 is done
    # and a2 reclaims them again; kept: b2 waits for b1.
    assert delta("cluster_queue", "b", "evictions_InCohortReclamation") == -2
    assert delta("cluster_queue", "b", "wait_p99_s") > 0
    assert delta("cluster_queue", "b", "borrowed_gpus_avg") < 0
    assert delta("cluster_queue", "a", "wait_p99_s") <= 0
    assert delta("cohort", "pool", "evictions_InCohortReclamation") == -2
    table = (out / "whatif.md").read_text()
    assert "### keep.yaml against lend.yaml (jobs.csv, 1x8, fifo" in table
    assert "| cluster_queue | b |" in table and "| cohort | pool |" in table
    assert (out / "whatif.png").is_file()
