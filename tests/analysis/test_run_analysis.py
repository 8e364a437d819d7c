"""``dlsched analyze RUN_DIR`` on every kind of run directory: a job run (rigid, elastic, PS,
mixed; with or without partitions and queues) gets JCT and queueing-delay CDFs, utilization and
queue length over time, a per-partition table and, with queues, the tenant report; a serving
run keeps its latency report. Every run is a real ``simulate``/``serve-sim`` run on a bundled
trace, and every figure is checked against the run's own files."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from dlsched.analysis.characterize import CDF_PROBABILITIES, Unavailable
from dlsched.analysis.run_analysis import job_cdfs
from dlsched.tenancy.run_report import write_tenant_report
from tests.analysis.run_dirs import (
    elastic_run,
    invoke,
    mixed_run,
    ok,
    partitioned_run,
    ps_run,
    reclaim_run,
    rigid_run,
    serving_run,
    simulate,
    summary_of,
)

PNG = b"\x89PNG\r\n\x1a\n"
REPORT_FILES = {"index.html", "stats.json", "jct_cdf.png", "queueing_cdf.png", "timeline.png"}
TENANT_FILES = {"index.html", "stats.json", "usage.png", "jct.png"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("analyze")


@pytest.fixture(scope="module")
def fifo(root: Path) -> Path:
    return rigid_run(root / "fifo")


def analyze(run: Path, out: Path, *extra: str) -> str:
    return ok(invoke("analyze", run, "--out", out, *extra)).output


def stats_of(report: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report / "stats.json").read_text())
    return data


def finished(run: Path) -> dict[str, np.ndarray]:
    jobs = pq.read_table(run / "jobs.parquet").to_pydict()
    done = np.array([s == "finished" for s in jobs["status"]])
    return {k: np.array(v, dtype=object)[done] for k, v in jobs.items()}


def check_cdf(section: dict[str, Any], values: np.ndarray) -> None:
    """The "all jobs" curve is the finished jobs' sample: its count, mean and end points."""
    assert section["available"] is True
    curve = section["curves"]["all jobs"]
    sample = values.astype(float)
    assert curve["count"] == len(sample) == section["jobs_finished"]
    assert curve["mean"] == pytest.approx(sample.mean())
    q = curve["quantiles"]
    assert len(q) == len(CDF_PROBABILITIES)
    assert q[0] == sample.min() and q[-1] == sample.max()
    assert all(a <= b for a, b in itertools.pairwise(q))


def test_a_rigid_run_gets_cdfs_timeline_and_partition_table(fifo: Path, tmp_path: Path) -> None:
    report = tmp_path / "report"
    output = analyze(fifo, report)
    assert output.strip() == f"{fifo}: job run; wrote {report / 'index.html'}"
    assert {p.name for p in report.iterdir()} == REPORT_FILES
    for png in REPORT_FILES - {"index.html", "stats.json"}:
        assert (report / png).read_bytes()[:8] == PNG
    s, stats = summary_of(fifo), stats_of(report)
    jobs = finished(fifo)
    sections = stats["sections"]
    check_cdf(sections["jct"], jobs["jct_s"])
    check_cdf(sections["queueing"], jobs["queue_s"])
    assert sections["jct"]["curves"]["all jobs"]["mean"] == pytest.approx(s["avg_jct_s"])
    assert sections["queueing"]["curves"]["all jobs"]["mean"] == pytest.approx(s["avg_queue_s"])
    one_gpu = sections["jct"]["curves"]["1 GPU"]
    assert one_gpu["count"] == int((jobs["gpus"] == 1).sum())
    assert stats["overview"]["policy"] == "fifo" and stats["queues"] is None
    # The timeline, read here on its own: one partition, each row holding until the next.
    timeline = pq.read_table(fifo / "timeline.parquet").to_pydict()
    t = np.array(timeline["time_s"])
    busy = np.array(timeline["busy_gpus"])
    waiting = np.array(timeline["pending_jobs"])
    tl = sections["timeline"]
    assert tl["total_gpus"] == 256 and (tl["start_s"], tl["end_s"]) == (t[0], t[-1])
    avg_busy = float((np.diff(t) * busy[:-1]).sum() / (t[-1] - t[0]))
    assert tl["time_avg_busy_gpus"] == pytest.approx(avg_busy)
    assert tl["time_avg_utilization"] == pytest.approx(avg_busy / 256)
    assert tl["peak_waiting_jobs"] == waiting.max() > 0
    assert max(tl["waiting_jobs_max"]) == waiting.max()
    assert max(tl["busy_gpus_max"]) == busy.max() and tl["powered_varies"] is False
    assert len(tl["busy_gpus_mean"]) == len(tl["waiting_jobs_mean"]) <= 1000
    # A run without partitions has one: its figures are the summary's.
    (row,) = sections["partitions"]["rows"]
    assert row["partition"] == "default" and row["gpus"] == 256 and row["jobs"] == s["jobs"]
    for key in ("avg_jct_s", "median_jct_s", "p95_jct_s", "avg_queue_s", "p95_queue_s"):
        assert row[key] == pytest.approx(s[key]), key
    assert row["utilization"] == pytest.approx(s["gpu_utilization"])
    assert row["gpu_time_s"] == pytest.approx(s["gpu_seconds"])
    assert sections["tenants"] == {
        "available": False,
        "reason": "the run had no queues (simulate --queues)",
    }
    page = (report / "index.html").read_text()
    for name in REPORT_FILES - {"index.html", "stats.json"}:
        assert f'src="{name}"' in page
    assert "Not available: the run had no queues" in page
    assert page.count("Not available") == 1


def test_each_partition_gets_a_row(root: Path, tmp_path: Path) -> None:
    run = partitioned_run(root / "vcs")
    report = tmp_path / "report"
    analyze(run, report)
    rows = stats_of(report)["sections"]["partitions"]["rows"]
    jobs = finished(run)
    timeline = pq.read_table(run / "timeline.parquet").to_pydict()
    sizes = dict(zip(timeline["partition"], timeline["total_gpus"], strict=True))
    # Every partition of the cluster has a row; only the two VCs simulated ran jobs.
    assert {r["partition"] for r in rows} == set(sizes)
    assert {r["partition"] for r in rows if r["jobs"]} == {"2869ce", "103959"}
    idle = [r for r in rows if not r["jobs"]]
    assert idle and all(r["avg_jct_s"] is None and r["utilization"] == 0 for r in idle)
    assert sum(r["jobs"] for r in rows) == summary_of(run)["jobs"]
    held = [r["gpu_time_s"] for r in rows]
    assert held == sorted(held, reverse=True)
    for r in rows:
        mine = jobs["partition"] == r["partition"]
        assert r["gpus"] == sizes[r["partition"]]
        assert r["jobs"] == mine.sum()
        if not r["jobs"]:
            continue
        assert r["avg_jct_s"] == pytest.approx(jobs["jct_s"][mine].astype(float).mean())
        assert r["gpu_time_s"] == pytest.approx(jobs["gpu_seconds"][mine].astype(float).sum())
    # Utilization over time counts the GPUs of the partitions that ran jobs, as the summary's.
    timeline_section = stats_of(report)["sections"]["timeline"]
    assert set(timeline_section["partitions"]) == {"2869ce", "103959"}
    assert timeline_section["partitions_in_cluster"] == len(sizes)
    assert timeline_section["total_gpus"] == sizes["2869ce"] + sizes["103959"]
    page = (report / "index.html").read_text()
    assert "<td>2869ce</td>" in page and "<td>103959</td>" in page


def test_a_run_with_queues_adds_the_tenant_report(root: Path, tmp_path: Path) -> None:
    run = reclaim_run(root / "reclaim")
    report = tmp_path / "report"
    output = analyze(run, report)
    assert "job run with queues" in output and str(report / "tenants") in output
    assert {p.name for p in report.iterdir()} == REPORT_FILES | {"tenants"}
    assert {p.name for p in (report / "tenants").iterdir()} == TENANT_FILES
    summary, stats = summary_of(run), stats_of(report)
    assert stats["queues"] == 2
    assert (
        json.loads((report / "tenants" / "stats.json").read_text())["tenants"]
        == (summary["tenants"])
    )
    assert stats["sections"]["tenants"]["available"] is True
    page = (report / "index.html").read_text()
    assert 'href="tenants/index.html"' in page
    assert 'src="tenants/usage.png"' in page and 'src="tenants/jct.png"' in page
    (row,) = stats["sections"]["partitions"]["rows"]
    assert row["partition"] == "*" and row["gpus"] == 8  # --no-partitions: one pool
    check_cdf(stats["sections"]["queueing"], finished(run)["queue_s"])
    # Jobs waiting for admission are not in the timeline's queue: b1 and a1 waited there.
    assert stats["sections"]["timeline"]["peak_waiting_jobs"] <= 1
    again = invoke("analyze", run, "--out", report)
    assert again.exit_code == 2 and "--force" in again.output
    ok(invoke("analyze", run, "--out", report, "--force"))


RUNS: dict[str, Callable[[Path], Path]] = {
    "elastic": lambda root: elastic_run(root / "elastic"),
    "ps": ps_run,
    "mixed": mixed_run,
}


@pytest.mark.parametrize("kind", list(RUNS))
def test_elastic_ps_and_mixed_runs_are_analyzed(kind: str, tmp_path: Path) -> None:
    run = RUNS[kind](tmp_path / "runs")
    report = tmp_path / "report"
    assert analyze(run, report).startswith(f"{run}: job run;")
    assert {p.name for p in report.iterdir()} == REPORT_FILES
    summary, stats = summary_of(run), stats_of(report)
    jobs = finished(run)
    check_cdf(stats["sections"]["jct"], jobs["jct_s"])
    assert stats["sections"]["jct"]["jobs_finished"] == summary["jobs"]
    assert stats["overview"]["job_kinds"] == summary["job_kinds"]
    kinds = {k for k, n in summary["job_kinds"].items() if n}
    assert (
        kinds == {"elastic": {"elastic"}, "ps": {"ps"}, "mixed": {"rigid", "elastic", "ps"}}[kind]
    )
    page = (report / "index.html").read_text()
    if kind == "mixed":
        for job_kind, policy in summary["kind_policies"].items():
            assert f"{policy} ({job_kind})" in page


def test_set_aside_jobs_are_counted_apart_and_no_finished_job_is_no_cdf(tmp_path: Path) -> None:
    trace = tmp_path / "half.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\nx,0,64,100\ny,10,1,100\n")
    run = simulate(tmp_path / "run", "--trace", trace, "--cluster", "2x4")
    report = tmp_path / "report"
    analyze(run, report)
    table = stats_of(report)["sections"]["partitions"]
    assert [r["jobs"] for r in table["rows"]] == [1]
    assert table["jobs_set_aside"] == 1
    assert table["set_aside_reasons"] == summary_of(run)["set_aside_reasons"]
    page = (report / "index.html").read_text()
    assert "1 jobs set aside never ran" in page
    assert "1: needs 64 GPUs but pool &#x27;default&#x27; has 8" in page
    # Of the set-aside job alone there is no CDF: not available, never an empty curve.
    jobs = pq.read_table(run / "jobs.parquet")
    aside = jobs.filter(pc.equal(jobs.column("status"), "set_aside"))
    assert job_cdfs(aside, "jct_s") == Unavailable("no job finished in this run")


def test_trace_options_and_incomplete_runs_are_refused_in_one_line(
    fifo: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    for flag, value in (("--cluster", "8x8"), ("--format", "philly")):
        done = invoke("analyze", fifo, "--out", out, flag, value)
        assert done.exit_code == 2
        assert done.stderr.strip() == f"error: {flag} does not apply to a job run directory"
    broken = tmp_path / "broken"
    shutil.copytree(fifo, broken)
    (broken / "timeline.parquet").unlink()
    done = invoke("analyze", broken, "--out", out)
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert done.stderr.strip() == (
        f"error: {broken / 'timeline.parquet'}: missing; a job run directory holds timeline.parquet"
    )
    assert not out.exists()


def test_force_replaces_a_tenant_report_of_an_earlier_dlsched(root: Path, tmp_path: Path) -> None:
    run = reclaim_run(root / "reclaim-earlier")
    out = tmp_path / "report"
    write_tenant_report(run, out)  # what analyze wrote for a run with queues before
    assert {p.name for p in out.iterdir()} == TENANT_FILES
    refused = invoke("analyze", run, "--out", out)
    assert refused.exit_code == 2 and "--force" in refused.stderr
    ok(invoke("analyze", run, "--out", out, "--force"))
    assert {p.name for p in out.iterdir()} == REPORT_FILES | {"tenants"}
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "mine.txt").write_text("keep")
    done = invoke("analyze", run, "--out", notes, "--force")
    assert done.exit_code == 2 and "not a dlsched run report directory" in done.stderr
    assert (notes / "mine.txt").read_text() == "keep"


def test_a_serving_run_keeps_its_latency_report(tmp_path: Path) -> None:
    run = serving_run(tmp_path / "serve", "--scheduler", "sarathi")
    report = tmp_path / "report"
    assert analyze(run, report).strip() == f"{run}: serving run; wrote {report / 'index.html'}"
    assert {p.name for p in report.iterdir()} == {
        "index.html",
        "stats.json",
        "latency.png",
        "replicas.png",
    }
    summary, stats = summary_of(run), stats_of(report)
    for key in ("ttft_s", "tbt_s", "e2e_s"):
        assert stats[key] == summary[key]
