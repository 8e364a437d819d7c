"""``dlsched compare``: only the figures that apply to the runs given, the footnote on evictions
beside preemptions, ``--format csv`` and ``--format json`` with the summaries' own numbers, and
a wrong ``--format`` refused in one line. Every run is a real ``simulate`` or ``serve-sim``
run on a bundled trace."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dlsched.analysis.compare import EVICTIONS_NOTE
from dlsched.cluster.topology import TIER_NAMES
from tests.analysis.run_dirs import (
    invoke,
    ok,
    reclaim_run,
    rigid_run,
    serving_run,
    summary_of,
)

JOB_ROWS = {
    "avg JCT (s)": "avg_jct_s",
    "median JCT (s)": "median_jct_s",
    "p95 JCT (s)": "p95_jct_s",
    "avg queue (s)": "avg_queue_s",
    "makespan (s)": "makespan_s",
    "GPU util": "gpu_utilization",
    "energy (kWh)": "energy_kwh",
    "avg slowdown": "avg_slowdown",
    "preemptions": "preemptions",
    "jobs": "jobs",
}
QUEUE_ROWS = ("Jain's index (tenants)", "max fair-share deviation")
TOPOLOGY_ROWS = (
    "comm model",
    "fragmented jobs",
    "starts node/rack/block/cluster",
    "multi-node starts",
    "multi-node starts spanning racks",
)
SERVING_KEYS = ("ttft_s.p50", "ttft_s.p99", "tbt_s.p99", "e2e_s.p50", "e2e_s.p99")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare")
    return {
        "fifo": rigid_run(root / "fifo"),
        "sjf": rigid_run(root / "sjf", "sjf"),
        "topology": rigid_run(
            root / "topology", "fifo", "--placement", "topology", "--comm-model", "tiers"
        ),
        "queues": reclaim_run(root / "reclaim"),
        "vllm": serving_run(root / "vllm"),
        "sarathi": serving_run(root / "sarathi", "--scheduler", "sarathi"),
    }


def table_rows(output: str) -> dict[str, list[str]]:
    """Row title -> its cells, one per run, from compare's box-drawn table."""
    rows = {}
    for line in output.splitlines():
        parts = [part.strip() for part in line.split("│")]
        if len(parts) > 3 and parts[1]:
            rows[parts[1]] = parts[2:-1]
    return rows


def nested(summary: dict[str, Any], key: str) -> Any:
    """The summary value a dotted CSV/JSON column names (tier counts of starts_by_tier)."""
    value: Any = summary
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def read_csv(output: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(output)))


def test_job_runs_without_queues_show_no_queue_or_topology_rows(runs: dict[str, Path]) -> None:
    done = ok(invoke("compare", runs["fifo"], runs["sjf"]))
    rows = table_rows(done.output)
    assert set(rows) == set(JOB_ROWS), done.output
    assert "n/a" not in done.output and "preemptions:" not in done.output
    assert EVICTIONS_NOTE not in done.output
    s = [summary_of(runs["fifo"]), summary_of(runs["sjf"])]
    ratio = s[1]["avg_queue_s"] / s[0]["avg_queue_s"]
    assert rows["avg queue (s)"][1].endswith(f"({ratio:.2f}x)")
    assert rows["energy (kWh)"][0] == f"{s[0]['energy_kwh']:,.0f}"


def test_topology_rows_appear_when_one_run_modelled_them(runs: dict[str, Path]) -> None:
    done = ok(invoke("compare", runs["topology"], runs["fifo"]))
    rows = table_rows(done.output)
    s = summary_of(runs["topology"])
    assert rows["comm model"] == ["tiers", "n/a"]
    assert rows["fragmented jobs"] == [f"{s['fragmented_jobs']:,}", "n/a"]
    tiers = "/".join(f"{s['starts_by_tier'][t]:,}" for t in TIER_NAMES)
    assert rows["starts node/rack/block/cluster"] == [tiers, "n/a"]
    # No job of either run started on several nodes: the share of those is nobody's figure.
    assert s["starts_by_tier"]["node"] == s["jobs"]
    assert "multi-node starts spanning racks" not in rows
    assert not set(QUEUE_ROWS) & set(rows)


def test_queue_rows_and_the_footnote_on_evictions(runs: dict[str, Path]) -> None:
    done = ok(invoke("compare", runs["queues"], runs["fifo"]))
    rows = table_rows(done.output)
    s = summary_of(runs["queues"])
    # The behaviour the footnote explains: b1 was evicted before it started.
    assert s["preemptions_by_cause"]["reclaim"] == 1 > s["preemptions"] == 0
    assert rows["preemptions"] == ["0", "0"]
    assert rows["preemptions: reclaim"] == ["1", "-"]
    assert rows["preemptions: priority"] == rows["preemptions: fair_share"] == ["0", "-"]
    assert rows["Jain's index (tenants)"][1] == "-"
    assert rows["a: avg JCT (s)"][0] == f"{s['tenants']['a']['avg_jct_s']:,.0f}"
    assert rows["b: GPUs borrowed"] == [f"{s['tenants']['b']['borrowed_gpus_avg']:.1f}", "-"]
    notes = [line for line in done.output.splitlines() if line.startswith("preemptions: CAUSE")]
    assert notes == [EVICTIONS_NOTE]
    assert "admitted jobs that had not started yet" in EVICTIONS_NOTE


def test_csv_is_a_header_and_a_row_per_run_of_plain_numbers(runs: dict[str, Path]) -> None:
    order = [runs["queues"], runs["fifo"], runs["topology"]]
    done = ok(invoke("compare", *order, "--format", "csv"))
    lines = done.output.splitlines()
    assert len(lines) == 1 + len(order)
    table = table_rows(ok(invoke("compare", *order)).output)
    records = read_csv(done.output)
    header = list(records[0])
    assert header[:3] == ["run", "label", "policy"]
    # One column per table row (starts by tier: one per tier), nothing else.
    assert len(header) - 3 == len(table) - 1 + len(TIER_NAMES)
    assert {"starts_by_tier.rack", "tenants.b.borrowed_gpus_avg"} <= set(header)
    assert "multi_node_starts" in header and "rack_spanning_share" not in header
    for record, run in zip(records, order, strict=True):
        s = summary_of(run)
        assert (record["run"], record["label"], record["policy"]) == (str(run), run.name, "fifo")
        for key in header[3:]:
            expected = nested(s, key)
            if key == "multi_node_starts":
                expected = None if s["starts_by_tier"] is None else 0
            cell = record[key]
            if expected is None:
                assert cell == "", (run.name, key, cell)  # does not apply: empty, never 0
            elif isinstance(expected, str):
                assert cell == expected
            else:
                assert "," not in cell and "%" not in cell
                assert float(cell) == expected, (run.name, key, cell)
    assert records[1]["tenant_fairness_jain"] == records[1]["preemptions_by_cause.reclaim"] == ""
    assert records[0]["preemptions_by_cause.reclaim"] == "1"
    assert float(records[1]["gpu_utilization"]) < 1  # a share is a fraction, not a percentage


def test_json_is_an_object_per_run_with_ratios_to_the_first(runs: dict[str, Path]) -> None:
    order = [runs["fifo"], runs["sjf"], runs["queues"]]
    done = ok(invoke("compare", *order, "--format", "json"))
    data = json.loads(done.output)
    assert isinstance(data, list) and len(data) == len(order)
    csv_done = ok(invoke("compare", *order, "--format", "csv"))
    header = list(read_csv(csv_done.output)[0])
    base = summary_of(order[0])
    for record, run in zip(data, order, strict=True):
        s = summary_of(run)
        assert list(record) == [*header, "ratios"]
        assert record["run"] == str(run) and record["policy"] == s["policy"]
        for key in header[3:]:
            assert record[key] == nested(s, key), (run.name, key)
        # Ratios where the table shows them: headline figures, not counts or tenant rows.
        assert "jobs" not in record["ratios"] and "tenants.a.avg_jct_s" not in record["ratios"]
        assert set(record["ratios"]) == {k for k in JOB_ROWS.values() if k != "jobs"} | {
            "tenant_fairness_jain",
            "tenant_fair_share_max_deviation",
        }
        for key, ratio in record["ratios"].items():
            value, first = s.get(key), base.get(key)
            if value is None or not first:
                assert ratio is None, (run.name, key)
            else:
                assert ratio == pytest.approx(value / first), (run.name, key)
    assert data[0]["ratios"]["avg_jct_s"] == 1.0
    assert data[0]["ratios"]["preemptions"] is None  # no preemptions in the base run
    assert data[0]["tenants.a.avg_jct_s"] is None and data[2]["tenants.a.avg_jct_s"] is not None


def test_serving_runs_show_serving_figures_in_every_format(runs: dict[str, Path]) -> None:
    pair = [runs["vllm"], runs["sarathi"]]
    rows = table_rows(ok(invoke("compare", *pair)).output)
    assert "avg JCT (s)" not in rows and "jobs" not in rows and "comm model" not in rows
    assert {"TTFT p99 (s)", "E2E p50 (s)", "energy (kWh)", "requests"} <= set(rows)
    records = read_csv(ok(invoke("compare", *pair, "--format", "csv")).output)
    assert [r["scheduler"] for r in records] == ["vllm", "sarathi"]
    data = json.loads(ok(invoke("compare", *pair, "--format", "json")).output)
    for record, run in zip(data, pair, strict=True):
        s = summary_of(run)
        for key in SERVING_KEYS:
            assert record[key] == nested(s, key)
            assert float(records[pair.index(run)][key]) == nested(s, key)
        assert record["requests"] == s["requests"]
        assert record["ratios"]["e2e_s.p99"] == pytest.approx(
            nested(s, "e2e_s.p99") / nested(summary_of(pair[0]), "e2e_s.p99")
        )


def test_energy_is_shown_only_where_accounted(runs: dict[str, Path], tmp_path: Path) -> None:
    # A run written before energy accounting has no energy figures in its summary.
    old = tmp_path / "before-energy"
    shutil.copytree(runs["fifo"], old)
    summary = summary_of(old)
    for key in [k for k in summary if k.startswith("energy_")]:
        del summary[key]
    (old / "summary.json").write_text(json.dumps(summary))
    assert "energy (kWh)" not in table_rows(ok(invoke("compare", old)).output)
    rows = table_rows(ok(invoke("compare", old, runs["sjf"])).output)
    assert rows["energy (kWh)"][0] == "-"
    data = json.loads(ok(invoke("compare", old, runs["sjf"], "--format", "json")).output)
    assert (
        data[0]["energy_kwh"] is None
        and data[1]["energy_kwh"] == summary_of(runs["sjf"])["energy_kwh"]
    )
    assert data[1]["ratios"]["energy_kwh"] is None  # no base to divide by


@pytest.mark.parametrize("value", ["xml", "TABLE", ""])
def test_a_wrong_format_exits_2_in_one_line(runs: dict[str, Path], value: str) -> None:
    done = invoke("compare", runs["fifo"], "--format", value)
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines() == [
        f"error: --format must be one of table, csv, json, got {value!r}"
    ]
    assert done.stdout == ""
