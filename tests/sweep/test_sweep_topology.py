"""``dlsched sweep --placement-opt/--comm-model`` and the topology figures of ``sweep`` and
``compare``: every cell runs with the options, results.csv and the table carry the figures of
each cell's summary.json, a figure a run did not model is empty or n/a (never 0), and an option
a cell cannot honour is refused before any cell runs."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from dlsched.cli.main import app
from dlsched.metrics.summary import topology_figures
from dlsched.sweep.grid import GridError, load_grid
from dlsched.trace.bundled import bundled_trace_path

# 2,000 Philly jobs, 16 of them on two 8-GPU nodes: on philly-vcs consolidate spreads one of
# those over two racks, the topology placement none.
TRACE = bundled_trace_path("philly_jobs_2000")
BASE = ("sweep", "--trace", TRACE, "--cluster", "philly-vcs", "--policy", "fifo")
TOPOLOGY_COLUMNS = ("fragmented_jobs", "multi_node_starts", "rack_spanning_share")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def rows_of(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def cell_files(out: Path, placement: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The summary and config of the one cell of ``placement`` in sweep ``out``."""
    (cell,) = (out / "cells").glob(f"*__{placement}__s0")
    summary = json.loads((cell / "summary.json").read_text())
    return summary, json.loads((cell / "config.json").read_text())


def by_hand(summary: dict[str, Any]) -> tuple[int, float]:
    """Multi-node starts and the share of them beyond one rack, from starts_by_tier."""
    tiers = summary["starts_by_tier"]
    multi = tiers["rack"] + tiers["block"] + tiers["cluster"]
    return multi, (tiers["block"] + tiers["cluster"]) / multi


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A sweep of consolidate and topology under the tier comm model, and one of consolidate
    alone without it (no topology modelled)."""
    root = tmp_path_factory.mktemp("sweeps")
    outs = {"tiers": root / "tiers", "plain": root / "plain"}
    done = invoke(
        *BASE, "--placement", "consolidate,topology", "--comm-model", "tiers",
        "--workers", "1", "--no-progress", "--out", outs["tiers"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "multi-node starts spanning racks" in done.output
    done = invoke(*BASE, "--workers", "1", "--no-progress", "--out", outs["plain"])
    assert done.exit_code == 0, done.output
    return outs


def test_cells_run_with_the_comm_model_and_the_csv_holds_their_figures(
    sweeps: dict[str, Path],
) -> None:
    out = sweeps["tiers"]
    rows = {row["placement"]: row for row in rows_of(out)}
    assert set(rows) == {"consolidate", "topology"}
    assert json.loads((out / "grid.json").read_text())["shared"]["comm_model"] == "tiers"
    for placement, row in rows.items():
        summary, config = cell_files(out, placement)
        assert config["sim"]["comm_model"] == summary["comm_model"] == "tiers"
        assert config["sim"]["placement"] == placement
        multi, share = by_hand(summary)
        assert int(row["multi_node_starts"]) == multi == 16
        assert float(row["rack_spanning_share"]) == pytest.approx(share)
        assert float(row["avg_jct_s"]) == pytest.approx(summary["avg_jct_s"])
    consolidate, _ = cell_files(out, "consolidate")
    topology, _ = cell_files(out, "topology")
    # consolidate takes no heed of racks: its fragmented jobs are not modelled (empty, not 0).
    assert consolidate["fragmented_jobs"] is None and rows["consolidate"]["fragmented_jobs"] == ""
    assert int(rows["topology"]["fragmented_jobs"]) == topology["fragmented_jobs"]
    assert float(rows["consolidate"]["rack_spanning_share"]) > 0
    assert float(rows["topology"]["rack_spanning_share"]) == 0.0
    table = (out / "table.md").read_text()
    header = next(line for line in table.splitlines() if line.startswith("| trace"))
    assert header.endswith(
        "| fragmented jobs | multi-node starts | multi-node starts spanning racks |"
    )
    line = next(line for line in table.splitlines() if "| consolidate |" in line)
    assert line.endswith("| — | 16 | 0.062 |")


def test_a_sweep_without_topology_leaves_the_columns_empty(sweeps: dict[str, Path]) -> None:
    out = sweeps["plain"]
    (row,) = rows_of(out)
    assert all(row[column] == "" for column in TOPOLOGY_COLUMNS)
    assert "spanning racks" not in (out / "table.md").read_text()
    summary, config = cell_files(out, "consolidate")
    assert summary["starts_by_tier"] is None and config["sim"]["comm_model"] is None


def test_placement_options_reach_every_cell(tmp_path: Path) -> None:
    out = tmp_path / "rack"
    done = invoke(
        *BASE, "--placement", "topology", "--placement-opt", "required=rack",
        "--workers", "1", "--no-progress", "--out", out,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    summary, config = cell_files(out, "topology")
    assert config["sim"]["placement_options"] == {"required": "rack"}
    # Without a comm model a topology-aware placement still counts its starts by tier.
    (row,) = rows_of(out)
    assert int(row["multi_node_starts"]) == by_hand(summary)[0]
    assert int(row["fragmented_jobs"]) == summary["fragmented_jobs"]
    again = invoke(*BASE, "--placement", "topology", "--no-progress", "--out", out)
    assert again.exit_code == 2
    assert "different --placement-opt (['required=rack'], now None)" in again.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--placement", "consolidate,topology", "--placement-opt", "required=rack"],
            "--placement-opt required: placement 'consolidate' takes no options",
        ),
        (
            ["--placement", "topology", "--placement-opt", "required=shelf"],
            "--placement-opt required: expected one of node, rack, block, got 'shelf'",
        ),
        (["--placement", "topology", "--placement-opt", "rack"], "--placement-opt expects KEY="),
        (["--comm-model", "fast"], "--comm-model: expected one of tiers, got 'fast'"),
    ],
)
def test_an_option_a_cell_cannot_honour_is_refused(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    out = tmp_path / "out"
    done = invoke(*BASE, *extra, "--no-progress", "--out", out)
    assert done.exit_code == 2, done.output
    assert message in done.output and "Traceback" not in done.output
    assert not out.exists()


def test_grid_and_serving_sweeps_refuse_the_options(tmp_path: Path) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'[grid]\ntraces = ["{TRACE}"]\nclusters = ["philly-vcs"]\npolicies = ["fifo"]\n'
    )
    done = invoke("sweep", "--grid", grid, "--comm-model", "tiers", "--out", tmp_path / "a")
    assert done.exit_code == 2 and "drop --comm-model" in done.output
    done = invoke(
        "sweep", "--grid", grid, "--placement-opt", "required=rack", "--out", tmp_path / "a"
    )
    assert done.exit_code == 2 and "drop --placement-opt" in done.output
    done = invoke(
        "sweep", "--requests", "azure_code_3000", "--comm-model", "tiers", "--out", tmp_path / "b"
    )
    assert done.exit_code == 2
    assert "--comm-model does not apply to a sweep of serving runs" in done.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_grid_file_placement_options_and_comm_model(tmp_path: Path) -> None:
    head = f'[grid]\ntraces = ["{TRACE}"]\nclusters = ["philly-vcs"]\npolicies = ["fifo"]\n'
    path = tmp_path / "grid.toml"
    path.write_text(
        head + 'placements = ["topology"]\ncomm_model = "tiers"\n'
        '[grid.placement_options]\nrequired = "block"\n'
    )
    grid = load_grid(path)
    assert grid.shared["placement_opt"] == ("required=block",)
    assert grid.shared["comm_model"] == "tiers"
    (cell,) = grid.cells()
    sim = grid.experiment(cell).sim
    assert (sim.placement_options, sim.comm_model) == ({"required": "block"}, "tiers")
    path.write_text(head + 'placement_options = { required = "rack" }\n')
    with pytest.raises(GridError, match="placement 'consolidate' takes no options") as info:
        load_grid(path)
    assert str(path) in str(info.value)
    path.write_text(head + "placement_options = { required = 1 }\n")
    with pytest.raises(GridError, match=r"--placement-opt expects a table of strings"):
        load_grid(path)
    path.write_text(head + 'comm_model = "fast"\n')
    with pytest.raises(GridError, match="--comm-model: expected one of tiers, got 'fast'"):
        load_grid(path)


def test_topology_figures_are_none_unless_modelled() -> None:
    assert topology_figures({}) == dict.fromkeys(TOPOLOGY_COLUMNS)
    starts = {"node": 9, "rack": 0, "block": 0, "cluster": 0}
    no_multi = topology_figures({"starts_by_tier": starts, "fragmented_jobs": None})
    assert no_multi == {
        "fragmented_jobs": None,
        "multi_node_starts": 0,
        "rack_spanning_share": None,
    }
    starts = {"node": 9, "rack": 3, "block": 2, "cluster": 1}
    figures = topology_figures({"starts_by_tier": starts, "fragmented_jobs": 0})
    assert figures == {"fragmented_jobs": 0, "multi_node_starts": 6, "rack_spanning_share": 0.5}


def compare_rows(output: str) -> dict[str, list[str]]:
    """Row title -> its cells, one per run, from compare's box-drawn table."""
    rows = {}
    for line in output.splitlines():
        parts = [part.strip() for part in line.split("│")]
        if len(parts) > 3:
            rows[parts[1]] = parts[2:-1]
    return rows


def test_compare_shows_the_topology_figures_and_na_where_not_modelled(
    sweeps: dict[str, Path],
) -> None:
    runs = [
        next((sweeps["plain"] / "cells").glob("*__consolidate__s0")),
        next((sweeps["tiers"] / "cells").glob("*__consolidate__s0")),
        next((sweeps["tiers"] / "cells").glob("*__topology__s0")),
    ]
    done = invoke("compare", *runs)
    assert done.exit_code == 0, done.output
    rows = compare_rows(done.output)
    summaries = [json.loads((run / "summary.json").read_text()) for run in runs]
    assert rows["comm model"] == ["n/a", "tiers", "tiers"]
    assert rows["fragmented jobs"] == ["n/a", "n/a", str(summaries[2]["fragmented_jobs"])]
    for i in (1, 2):
        tiers = summaries[i]["starts_by_tier"]
        shown = "/".join(f"{tiers[t]:,}" for t in ("node", "rack", "block", "cluster"))
        assert rows["starts node/rack/block/cluster"][i] == shown
        multi, share = by_hand(summaries[i])
        assert rows["multi-node starts"][i] == str(multi)
        assert rows["multi-node starts spanning racks"][i] == f"{share:.1%}"
    assert rows["starts node/rack/block/cluster"][0] == "n/a"
    assert rows["multi-node starts"][0] == rows["multi-node starts spanning racks"][0] == "n/a"
    assert rows["multi-node starts spanning racks"][1:] == ["6.2%", "0.0%"]
