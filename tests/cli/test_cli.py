"""The ``dlsched`` command end to end: the README's user story on the real Philly trace, the run
directory it writes, ``compare``, ``demo``, ``list`` and the selection/policy options.

Fast tests restrict the Philly replay to two busy VCs (``2869ce`` and ``103959``, 2,356 jobs on
24 nodes) with ``--vc``; the full 82,247-job replay is marked slow.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from dlsched.cli.main import app
from dlsched.elastic.registry import elastic_policies
from dlsched.policy.registry import policies
from dlsched.runner import Experiment, run_experiment
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.io import read_parquet
from tests.trace.helpers import TRACES, requires_traces

PHILLY = TRACES / "philly" / "philly_jobs.csv"
PHILLY_ROWS = 82_247
BUSY_VCS = ("2869ce", "103959")
VC_ARGS = [arg for vc in BUSY_VCS for arg in ("--vc", vc)]
RUN_FILES = {"jobs.parquet", "timeline.parquet", "config.json", "summary.json"}
SUMMARY_KEYS = {
    "policy",
    "placement",
    "jobs",
    "avg_jct_s",
    "median_jct_s",
    "p95_jct_s",
    "avg_queue_s",
    "makespan_s",
    "gpu_utilization",
    "avg_slowdown",
    "preemptions",
    "sim_wall_s",
}
# The rows of ``dlsched compare`` and the summary key each shows.
COMPARE_ROWS = {
    "avg JCT (s)": "avg_jct_s",
    "median JCT (s)": "median_jct_s",
    "p95 JCT (s)": "p95_jct_s",
    "avg queue (s)": "avg_queue_s",
    "makespan (s)": "makespan_s",
    "GPU util": "gpu_utilization",
    "avg slowdown": "avg_slowdown",
    "preemptions": "preemptions",
    "jobs": "jobs",
}


def invoke(*args: str | Path) -> Result:
    """Run ``dlsched ARGS`` in-process (no progress bar: stderr is not a terminal)."""
    return CliRunner().invoke(app, [str(a) for a in args])


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result


def summary_of(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "summary.json").read_text())
    return data


def config_of(run: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "config.json").read_text())
    return data


def jobs_of(run: Path) -> dict[str, list[Any]]:
    table: dict[str, list[Any]] = pq.read_table(run / "jobs.parquet").to_pydict()
    return table


def same_table(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas and values, NaN equal to NaN (set-aside jobs have NaN times, and
    ``pa.Table.equals`` holds NaN unequal to itself)."""
    if not a.schema.equals(b.schema) or a.num_rows != b.num_rows:
        return False
    for name in a.column_names:
        for x, y in zip(a.column(name).to_pylist(), b.column(name).to_pylist(), strict=True):
            both_nan = isinstance(x, float) and isinstance(y, float) and x != x and y != y
            if x != y and not both_nan:
                return False
    return True


def philly_rows(keep: Callable[[dict[str, str]], bool]) -> list[dict[str, str]]:
    """Rows of the shared Philly CSV, read with the csv module (independently of dlsched)."""
    with PHILLY.open(newline="") as f:
        return [row for row in csv.DictReader(f) if keep(row)]


# ---- parsing the compare table -----------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | None
    decimals: int
    ratio: float | None


NUMBER = re.compile(
    r"^(?P<num>-|[\d,]+(?:\.(?P<dec>\d+))?)(?P<pct>%)?(?: \((?P<ratio>[\d.]+)x\))?$"
)


def parse_cell(text: str) -> Cell:
    m = NUMBER.match(text)
    assert m, f"unexpected cell {text!r}"
    if m["num"] == "-":
        return Cell(text, None, 0, None)
    value = float(m["num"].replace(",", ""))
    decimals = len(m["dec"] or "")
    if m["pct"]:
        value /= 100
        decimals += 2
    return Cell(text, value, decimals, float(m["ratio"]) if m["ratio"] else None)


def parse_compare(output: str) -> dict[str, list[Cell]]:
    """metric title -> the cells of its row, one per run, from rich's box-drawn table."""
    rows: dict[str, list[Cell]] = {}
    for line in output.splitlines():
        parts = [p.strip() for p in line.split("│")]
        if len(parts) < 4 or parts[1] not in COMPARE_ROWS:
            continue
        rows[parts[1]] = [parse_cell(p) for p in parts[2:-1]]
    return rows


def check_compare_output(output: str, runs: list[Path]) -> None:
    """Every number ``compare`` printed is its run's summary value (to the digits shown), and
    every ratio is that value over the first run's."""
    summaries = [summary_of(r) for r in runs]
    assert f"ratios to {runs[0].name}" in output
    rows = parse_compare(output)
    assert set(rows) == set(COMPARE_ROWS), output
    for title, key in COMPARE_ROWS.items():
        cells = rows[title]
        assert len(cells) == len(runs)
        base = summaries[0][key]
        for i, (cell, s) in enumerate(zip(cells, summaries, strict=True)):
            actual = s[key]
            if actual is None:
                assert cell.value is None, (title, cell.text)
                continue
            assert cell.value is not None, (title, cell.text)
            tolerance = 0.5 * 10.0**-cell.decimals + 1e-9
            assert abs(cell.value - actual) <= tolerance, (title, runs[i].name, cell.text, actual)
            shows_ratio = i > 0 and key != "jobs" and base not in (None, 0)
            if not shows_ratio:
                assert cell.ratio is None, (title, cell.text)
                continue
            assert cell.ratio is not None, (title, cell.text)
            assert abs(cell.ratio - actual / base) <= 0.005 + 1e-9, (title, cell.text)


# ---- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user story, once per module: convert the Philly CSV to Parquet, then simulate FIFO,
    SJF and Tiresias (consolidated placement) on two VCs of ``philly-vcs``."""
    if not PHILLY.is_file():
        pytest.skip("the shared public traces are not available")
    home = tmp_path_factory.mktemp("story")
    ok(invoke("trace", "convert", PHILLY, "--out", home / "X.parquet"))
    for policy in ("fifo", "sjf", "tiresias"):
        ok(
            invoke(
                "simulate",
                "--trace",
                home / "X.parquet",
                "--cluster",
                "philly-vcs",
                "--policy",
                policy,
                "--placement",
                "consolidate",
                *VC_ARGS,
                "--out",
                home / "runs" / policy,
            )
        )
    yield home


def simulate_two_vcs(story: Path, out: Path, *options: str) -> Path:
    ok(
        invoke(
            "simulate", "--trace", story / "X.parquet", "--cluster", "philly-vcs", *VC_ARGS,
            "--out", out, *options,
        )
    )  # fmt: skip
    return out


# ---- trace validate / convert --------------------------------------------------------------


@requires_traces
def test_trace_validate_philly_reports_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exactly as in the README, from the project root."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    relative = "../shared/traces/philly/philly_jobs.csv"
    result = ok(invoke("trace", "validate", relative))
    assert f"{relative}: ok: format philly, {PHILLY_ROWS} rows read" in result.output
    assert f"{PHILLY_ROWS} accepted, 0 rejected" in result.output


@requires_traces
def test_trace_convert_writes_the_whole_trace(story: Path) -> None:
    trace = read_parquet(story / "X.parquet")
    assert len(trace) == PHILLY_ROWS
    # Wall-clock origin kept: the first job (submit_s 0) was submitted at this UTC time.
    first = philly_rows(lambda r: r["submit_s"] == "0")[0]["submit_time"]
    origin = datetime.strptime(first, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()
    assert trace.origin_unix == origin
    assert sorted(trace.column("job_id").to_pylist()) == sorted(
        r["job_id"] for r in philly_rows(lambda r: True)
    )


def test_trace_convert_reports_counts(tmp_path: Path) -> None:
    source = bundled_trace_path("philly_jobs_2000")
    out = tmp_path / "slice.parquet"
    result = ok(invoke("trace", "convert", source, "--out", out, "--vc", "6214e9"))
    expected = sum(1 for line in source.read_text().splitlines()[1:] if line.endswith(",6214e9"))
    assert 0 < expected < 2000
    assert f"2000 rows read, 0 rejected, {expected} written to {out}" in result.output
    assert len(read_parquet(out)) == expected


# ---- the run directory ---------------------------------------------------------------------


@requires_traces
def test_run_directory_holds_jobs_timeline_config_summary(story: Path) -> None:
    run = story / "runs" / "tiresias"
    assert {p.name for p in run.iterdir()} == RUN_FILES
    s = summary_of(run)
    assert s.keys() >= SUMMARY_KEYS
    assert (s["policy"], s["placement"]) == ("tiresias", "consolidate")
    expected_rows = len(philly_rows(lambda r: r["vc"] in BUSY_VCS))
    assert expected_rows == 2356

    jobs = jobs_of(run)
    assert len(jobs["job_id"]) == expected_rows
    done = np.array(jobs["status"]) == "finished"
    assert s["jobs"] == int(done.sum()) == expected_rows  # both VCs exist in philly-vcs
    assert set(np.array(jobs["partition"])[done]) == set(BUSY_VCS)
    jct = np.array(jobs["jct_s"])[done]
    queue = np.array(jobs["queue_s"])[done]
    assert math.isclose(s["avg_jct_s"], jct.mean())
    assert math.isclose(s["median_jct_s"], float(np.median(jct)))
    assert math.isclose(s["p95_jct_s"], float(np.percentile(jct, 95)))
    assert math.isclose(s["avg_queue_s"], queue.mean())
    end, submit = np.array(jobs["end_s"])[done], np.array(jobs["submit_s"])[done]
    assert math.isclose(s["makespan_s"], end.max() - submit.min())
    assert s["preemptions"] == sum(jobs["preemptions"]) > 0  # Tiresias preempts here
    assert 0 < s["gpu_utilization"] <= 1
    assert s["avg_slowdown"] >= 1
    assert s["sim_wall_s"] > 0

    timeline = pq.read_table(run / "timeline.parquet")
    assert timeline.num_rows > 0
    assert set(BUSY_VCS) <= set(timeline.column("partition").to_pylist())
    assert (run / "config.json").read_text().endswith("\n")


@requires_traces
def test_config_json_reruns_to_the_same_jobs(story: Path) -> None:
    run = story / "runs" / "tiresias"
    config = config_of(run)
    assert config["sim"]["policy"] == "tiresias"
    assert config["selection"]["vcs"] == list(BUSY_VCS)
    rerun = run_experiment(Experiment.from_dict(config))
    assert same_table(rerun.jobs, pq.read_table(run / "jobs.parquet"))
    assert rerun.summary["avg_jct_s"] == summary_of(run)["avg_jct_s"]


@requires_traces
def test_user_story_with_relative_paths(story: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As typed in the README: relative trace and output paths, rerun from config.json."""
    monkeypatch.chdir(story)
    result = ok(
        invoke(
            "simulate", "--trace", "X.parquet", "--cluster", "philly-vcs", "--policy", "tiresias",
            "--placement", "consolidate", *VC_ARGS, "--out", "runs/again",
        )
    )  # fmt: skip
    assert "wrote runs/again" in result.output
    shown = json.loads(result.stdout[: result.stdout.index("wrote")])
    assert shown["jobs"] == summary_of(Path("runs/again"))["jobs"] == 2356
    config = config_of(Path("runs/again"))
    # Recorded absolute, so the rerun below works from any working directory.
    assert config["trace"] == str(story / "X.parquet")
    monkeypatch.chdir(story.parent)
    rerun = run_experiment(Experiment.from_dict(config))
    monkeypatch.chdir(story)
    assert same_table(rerun.jobs, pq.read_table("runs/again/jobs.parquet"))
    # Same options as the fixture's absolute-path run: same jobs table.
    assert same_table(rerun.jobs, pq.read_table(story / "runs" / "tiresias" / "jobs.parquet"))


@requires_traces
def test_compare_prints_the_summaries_and_ratios(story: Path) -> None:
    runs = [story / "runs" / p for p in ("fifo", "sjf", "tiresias")]
    result = ok(invoke("compare", *runs))
    check_compare_output(result.output, runs)
    s = [summary_of(r) for r in runs]
    # Sanity of the story itself: SJF and Tiresias queue less than FIFO on these busy VCs.
    assert s[1]["avg_queue_s"] < s[0]["avg_queue_s"]
    assert s[2]["avg_queue_s"] < s[0]["avg_queue_s"]


@pytest.mark.slow
@requires_traces
def test_full_philly_user_story(tmp_path: Path) -> None:
    """The whole trace, as in the README: validate, convert, three policies, compare."""
    ok(invoke("trace", "validate", PHILLY))
    ok(invoke("trace", "convert", PHILLY, "--out", tmp_path / "X.parquet"))
    runs = []
    for policy in ("fifo", "sjf", "tiresias"):
        out = tmp_path / "runs" / policy
        ok(
            invoke(
                "simulate", "--trace", tmp_path / "X.parquet", "--cluster", "philly-vcs",
                "--policy", policy, "--placement", "consolidate", "--out", out,
            )
        )  # fmt: skip
        runs.append(out)
    # Jobs of VCs that philly-vcs lacks are set aside with a reason, never dropped.
    with (TRACES / "philly" / "philly_vc.csv").open(newline="") as f:
        vcs = {row["vc"] for row in csv.DictReader(f)}
    missing = philly_rows(lambda r: r["vc"] not in vcs)
    assert len(missing) == 18
    for run in runs:
        s = summary_of(run)
        assert s.keys() >= SUMMARY_KEYS
        assert s["jobs_in_trace"] == PHILLY_ROWS
        assert s["jobs"] == PHILLY_ROWS - len(missing)
        assert s["jobs_set_aside"] == sum(s["set_aside_reasons"].values()) == len(missing)
        assert all("not in cluster 'philly-vcs'" in reason for reason in s["set_aside_reasons"])
    result = ok(invoke("compare", *runs))
    check_compare_output(result.output, runs)
    config = config_of(runs[2])
    rerun = run_experiment(Experiment.from_dict(config))
    assert same_table(rerun.jobs, pq.read_table(runs[2] / "jobs.parquet"))


def test_run_directory_permissions_follow_umask(tmp_path: Path) -> None:
    """A run directory gets the permissions of any directory the user makes (not mkdtemp's
    private 0700)."""
    out = tmp_path / "run"
    ok(invoke("simulate", "--trace", bundled_trace_path("vc_0e4a51"), "--cluster", "32x8",
              "--out", out))  # fmt: skip
    plain = tmp_path / "plain"
    plain.mkdir()
    assert out.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


# ---- demo and list -------------------------------------------------------------------------


def test_demo_writes_four_runs_and_compares_them(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = ok(invoke("demo", "--out", out))
    runs = [out / p for p in ("fifo", "sjf", "srtf", "tiresias")]
    for run in runs:
        assert {p.name for p in run.iterdir()} == RUN_FILES
        s = summary_of(run)
        assert (s["policy"], s["jobs"]) == (run.name, 990)
        line = next(x for x in result.output.splitlines() if x.startswith(run.name + " "))
        m = re.search(r"jobs=(\d+) avg JCT=([\d,]+)s avg queue=([\d,]+)s", line)
        assert m, line
        assert int(m[1]) == 990
        assert abs(float(m[2].replace(",", "")) - s["avg_jct_s"]) <= 0.5
        assert abs(float(m[3].replace(",", "")) - s["avg_queue_s"]) <= 0.5
    check_compare_output(result.output, runs)


def first_column(output: str) -> set[str]:
    return {line.split()[0] for line in output.splitlines() if line.strip()}


def test_list_policies_placements_clusters() -> None:
    listed = ok(invoke("list", "policies")).output
    expected = set(policies()) | set(elastic_policies()) | {"smd"}
    assert first_column(listed) == {"policy"} | expected
    assert expected >= {"fifo", "sjf", "srtf", "tiresias", "pollux", "ones", "optimus"}
    rows = {line.split()[0]: line for line in listed.splitlines()[1:]}
    assert "rigid, elastic, ps" in rows["tiresias"] and "elastic" in rows["pollux"]
    assert first_column(ok(invoke("list", "placements")).output) == {
        "consolidate",
        "pack",
        "random",
        "spread",
        "topology",
    }
    clusters = ok(invoke("list", "clusters")).output
    assert first_column(clusters) == {"philly-vcs", "philly-machines", "pollux", "alibaba-2023"}
    assert "352 nodes x 8 GPUs" in clusters


def test_console_script_entry_point(tmp_path: Path) -> None:
    """The installed ``dlsched`` script (not the in-process app) runs and sets exit codes."""
    script = Path(sys.executable).parent / "dlsched"
    assert script.is_file(), "the dlsched console script is not installed in this environment"
    trace = bundled_trace_path("vc_0e4a51")
    done = subprocess.run(
        [script, "trace", "validate", trace], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "990 rows read, 990 accepted, 0 rejected" in done.stdout
    out = tmp_path / "run"
    done = subprocess.run(
        [script, "simulate", "--trace", trace, "--cluster", "32x8", "--out", out],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert summary_of(out)["jobs"] == 990
    bad = subprocess.run(
        [script, "simulate", "--trace", trace, "--cluster", "32x8", "--policy", "nope",
         "--out", tmp_path / "bad"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "unknown policy 'nope'" in bad.stderr and "Traceback" not in bad.stderr


# ---- options -------------------------------------------------------------------------------


@requires_traces
def test_policy_opt_sets_tiresias_thresholds(story: Path, tmp_path: Path) -> None:
    run = simulate_two_vcs(
        story, tmp_path / "t", "--policy", "tiresias", "--policy-opt", "thresholds=3600,36000"
    )
    assert config_of(run)["sim"]["policy_options"] == {"thresholds": "3600,36000"}
    default = story / "runs" / "tiresias"
    assert not same_table(
        pq.read_table(run / "jobs.parquet"), pq.read_table(default / "jobs.parquet")
    )
    assert summary_of(run)["jobs"] == summary_of(default)["jobs"]


def starts_in_submit_order(jobs: dict[str, list[Any]]) -> bool:
    """Whether, in every partition, jobs started in the order they were submitted."""
    by_partition: dict[str, list[tuple[float, float]]] = {}
    for part, submit, start in zip(
        jobs["partition"], jobs["submit_s"], jobs["first_start_s"], strict=True
    ):
        by_partition.setdefault(part, []).append((submit, start))
    for rows in by_partition.values():
        starts = [start for _, start in sorted(rows, key=lambda r: r[0])]
        if any(b < a for a, b in itertools.pairwise(starts)):
            return False
    return True


@requires_traces
def test_backfill_lets_later_jobs_start_first(story: Path, tmp_path: Path) -> None:
    strict = story / "runs" / "fifo"
    assert starts_in_submit_order(jobs_of(strict)), "FIFO without backfill is in order"
    run = simulate_two_vcs(story, tmp_path / "bf", "--policy", "fifo", "--backfill")
    assert config_of(run)["sim"]["policy_options"] == {"allow_backfill": "true"}
    assert not starts_in_submit_order(jobs_of(run))
    assert summary_of(run)["avg_queue_s"] < summary_of(strict)["avg_queue_s"]


@requires_traces
def test_no_partitions_pools_all_vcs(story: Path, tmp_path: Path) -> None:
    run = simulate_two_vcs(story, tmp_path / "np", "--no-partitions")
    assert config_of(run)["sim"]["use_partitions"] is False
    jobs = jobs_of(run)
    assert set(jobs["partition"]) == {"*"}
    s = summary_of(run)
    assert s["jobs"] == 2356 and s["total_gpus"] == 352 * 8
    # Pooled, the two VCs' jobs can use all 352 nodes: far less queueing than in their VCs.
    assert s["avg_queue_s"] < summary_of(story / "runs" / "fifo")["avg_queue_s"]


@requires_traces
def test_no_partitions_admits_jobs_of_unknown_vcs(story: Path, tmp_path: Path) -> None:
    """VC 23dbec is in the trace but not in philly-vcs: with partitions, all its jobs would be
    set aside, so the run is refused (nothing written); pooled, they run."""
    trace = story / "X.parquet"
    args = ("simulate", "--trace", trace, "--cluster", "philly-vcs", "--vc", "23dbec")
    refused = invoke(*args, "--out", tmp_path / "p")
    assert refused.exit_code == 2
    assert (
        "all 8 jobs were set aside, none ran: partition '23dbec' not in cluster 'philly-vcs' "
        "(8 jobs)" in refused.stderr
    )
    assert "--no-partitions" in refused.stderr and not (tmp_path / "p").exists()
    ok(invoke(*args, "--no-partitions", "--out", tmp_path / "np"))
    s = summary_of(tmp_path / "np")
    assert (s["jobs"], s["jobs_set_aside"]) == (8, 0)


@requires_traces
def test_window_in_seconds(story: Path, tmp_path: Path) -> None:
    start, end = 2_000_000, 3_000_000
    run = simulate_two_vcs(story, tmp_path / "w", "--start", str(start), "--end", str(end))
    expected = philly_rows(lambda r: r["vc"] in BUSY_VCS and start <= int(r["submit_s"]) < end)
    jobs = jobs_of(run)
    assert sorted(jobs["job_id"]) == sorted(r["job_id"] for r in expected)
    assert all(start <= t < end for t in jobs["submit_s"])
    assert config_of(run)["selection"]["start"] == str(start)


@requires_traces
def test_window_by_dates(story: Path, tmp_path: Path) -> None:
    run = simulate_two_vcs(story, tmp_path / "d", "--start", "2017-10-01", "--end", "2017-10-08")
    expected = philly_rows(
        lambda r: r["vc"] in BUSY_VCS and "2017-10-01" <= r["submit_time"] < "2017-10-08"
    )
    assert len(expected) == 203
    jobs = jobs_of(run)
    assert sorted(jobs["job_id"]) == sorted(r["job_id"] for r in expected)
    assert summary_of(run)["jobs"] == 203


@requires_traces
def test_mtbf_injects_node_failures(story: Path, tmp_path: Path) -> None:
    assert summary_of(story / "runs" / "fifo")["failures"] is None
    run = simulate_two_vcs(story, tmp_path / "f", "--mtbf", "864000", "--mttr", "3600")
    s = summary_of(run)
    assert config_of(run)["sim"]["faults"]["mtbf_s"] == 864000
    assert s["failures"] > 0
    assert s["restarts"] == sum(jobs_of(run)["restarts"]) > 0
    assert s["lost_gpu_seconds"] > 0
    assert s["jobs"] == 2356  # every job still finishes


def test_simulate_reports_to_stdout(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = ok(
        invoke("simulate", "--trace", bundled_trace_path("vc_0e4a51"), "--cluster", "32x8",
               "--policy", "sjf", "--out", out)
    )  # fmt: skip
    shown = json.loads(result.stdout[: result.stdout.index("wrote")])
    s = summary_of(out)
    assert shown == {k: s[k] for k in shown}
    assert shown["policy"] == "sjf" and shown["jobs"] == 990
    table = pq.read_table(out / "jobs.parquet")
    assert isinstance(table, pa.Table) and table.num_rows == 990
