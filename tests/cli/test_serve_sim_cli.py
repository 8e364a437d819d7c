"""``dlsched serve-sim``: a run directory from a bundled trace, and bad input refused with exit
2 and one line naming the problem."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner, Result

from dlsched.cli.main import app
from dlsched.metrics.rundir import RUN_FILES


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, ["serve-sim", *[str(a) for a in args]])


def test_bundled_trace_writes_a_serving_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = invoke("azure_code_3000", "--out", out, "--replicas", "2", "--scheduler", "sarathi")
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == set(RUN_FILES)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "serving"
    assert summary["requests"] == summary["served"] == 3000
    # A100 with llama2-70b at TP 8 has measured power; the energy is at least the idle draw.
    assert summary["power_source"].startswith("measured")
    assert 0 < summary["gpu_utilization"] <= 1
    assert summary["energy_j"] > 2 * 8 * (1750.0 / 8) * summary["makespan_s"]
    assert 0 <= summary["slo_attainment"] <= 1
    # The TBT objective bounds each request's mean gap, and says so by its key.
    assert summary["slo"] == {"ttft_s": 2.0, "tbt_mean_s": 0.2}
    assert summary["ttft_s"]["p50"] <= summary["ttft_s"]["p99"]
    requests = pq.read_table(out / "jobs.parquet")
    assert requests.num_rows == 3000
    assert set(requests.column("replica").to_pylist()) == {0, 1}
    config = json.loads((out / "config.json").read_text())
    assert config["replica"]["scheduler"] == "sarathi" and config["tp"] == 8
    assert pq.read_table(out / "timeline.parquet").num_rows > 0


def test_progress_lines_unless_no_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Piped (as here), a line is written at most every PIPED_EVERY_S seconds: every time here.
    monkeypatch.setattr("dlsched.cli.progress.PIPED_EVERY_S", 0.0)
    for flag, shown in (("--progress", True), ("--no-progress", False)):
        result = invoke("azure_code_3000", "--out", tmp_path / flag, flag)
        assert result.exit_code == 0, result.output
        assert ("serving, requests done: " in result.output) is shown, result.output


def test_options_a_run_cannot_honour_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cases = [
        (["--max-batch", "8"], "--max-batch does not apply to scheduler 'vllm' (only to static)"),
        (["--scheduler", "static", "--chunk-tokens", "64"], "--chunk-tokens does not apply"),
        (["--tp", "1"], "no measurements of llama2-70b on 1 x a100-80gb"),
        (["--gpu", "v100"], "unknown GPU 'v100'"),
        (["--scheduler", "fcfs"], "unknown scheduler 'fcfs'"),
        (["--scheduler", "orca", "--max-batched-tokens", "64"], "--max-batched-tokens does not"),
        (["--scheduler", "vllm", "--tbt-target", "0.1"], "--tbt-target does not apply"),
        (["--scheduler", "sarathi", "--no-chunked-prefill"], "--chunked-prefill does not"),
        (["--scheduler", "sarathi", "--tbt-target", "0.1", "--chunk-tokens", "64"], "give one"),
        (
            ["--max-seqs", "512", "--max-batched-tokens", "256"],
            "max_batched_tokens (256) must be at least max_seqs (512)",
        ),
        (["--scheduler", "orca", "--preemption", "swap"], "orca scheduler never preempts"),
        (["--scheduler", "sarathi", "--tbt-target", "0.0001"], "tbt_target 0.0001 s is below"),
        (["--router", "least-loaded"], "unknown router 'least-loaded'"),
    ]
    for extra, message in cases:
        result = invoke("azure_code_3000", "--out", out, *extra)
        assert result.exit_code == 2, (extra, result.output)
        assert message in result.output
        assert "Traceback" not in result.output
        assert not out.exists()


def test_bad_rows_name_file_and_line_and_nothing_is_written(tmp_path: Path) -> None:
    trace = tmp_path / "r.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.5,10,x\n")
    out = tmp_path / "run"
    result = invoke(trace, "--out", out)
    assert result.exit_code == 2
    assert f"{trace}:2: GeneratedTokens" in result.output
    assert "--skip-bad-rows" in result.output
    assert not out.exists()


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "keep.txt").write_text("mine")
    result = invoke("azure_code_3000", "--out", notes, "--force")
    assert result.exit_code == 2
    assert (notes / "keep.txt").read_text() == "mine"


def test_compare_shows_serving_figures_and_refuses_mixing_kinds(tmp_path: Path) -> None:
    plain, chunked = tmp_path / "plain", tmp_path / "sarathi"
    assert invoke("azure_conv_5000", "--out", plain, "--replicas", "2").exit_code == 0
    assert (
        invoke(
            "azure_conv_5000", "--out", chunked, "--replicas", "2", "--scheduler", "sarathi"
        ).exit_code
        == 0
    )
    result = CliRunner().invoke(app, ["compare", str(plain), str(chunked)])
    assert result.exit_code == 0, result.output
    titles = ("TTFT p99 (s)", "TBT p99, pooled gaps (s)", "SLO attainment", "goodput", "requests")
    for title in (*titles, "GPU util", "energy (kWh)"):
        assert title in result.output
    assert "avg JCT" not in result.output
    p99 = [json.loads((r / "summary.json").read_text())["tbt_s"]["p99"] for r in (plain, chunked)]
    assert f"({p99[1] / p99[0]:.2f}x)" in result.output
    energy = [json.loads((r / "summary.json").read_text())["energy_kwh"] for r in (plain, chunked)]
    assert f"({energy[1] / energy[0]:.2f}x)" in result.output
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "summary.json").write_text('{"policy": "fifo", "jobs": 3, "avg_jct_s": 10.0}')
    mixed = CliRunner().invoke(app, ["compare", str(jobs), str(plain)])
    assert mixed.exit_code == 2
    assert "cannot compare serving runs" in mixed.output


def test_disaggregated_run_and_its_refusals(tmp_path: Path) -> None:
    out = tmp_path / "split"
    result = invoke("azure_code_3000", "--out", out, "--replicas", "3", "--prefill-replicas", "1")
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["prefill_replicas"] == 1 and config["link_gbps"] == 400.0
    replicas = pq.read_table(out / "jobs.parquet").column("replica").to_pylist()
    assert set(replicas) == {1, 2}  # requests end on the decode pool (outputs > 1 here)
    bad = tmp_path / "bad"
    cases = [
        (["--replicas", "2", "--prefill-replicas", "2"], "must leave a decode replica"),
        (["--replicas", "2", "--link-gbps", "100"], "--link-gbps needs --prefill-replicas"),
        (
            ["--replicas", "2", "--prefill-replicas", "1", "--scheduler", "orca"],
            "runs vllm or sarathi, not 'orca'",
        ),
    ]
    for extra, message in cases:
        result = invoke("azure_code_3000", "--out", bad, *extra)
        assert result.exit_code == 2 and message in result.output, result.output
        assert not bad.exists()


def test_serving_beside_training_records_both_sides(tmp_path: Path) -> None:
    from dlsched.trace.bundled import bundled_trace_path

    training = bundled_trace_path("vc_0e4a51")
    out = tmp_path / "mixed"
    args = ["azure_code_3000", "--out", out, "--beside", training, "--cluster", "8x8"]
    result = invoke(*args, "--capacity", "1.0", "--window", "300")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    training_figures = summary["training"]
    assert training_figures["training_jobs"] == 990
    assert training_figures["replica_instances"] >= 1
    assert summary["gpu_utilization"] == training_figures["gpu_utilization"] is not None
    assert summary["energy_j"] == pytest.approx(training_figures["energy_kwh"] * 3.6e6)
    assert summary["autoscaler"]["capacity_rps"] == 1.0
    assert summary["autoscaler"]["window_s"] == 300.0
    # About 2.8 req/s over 1 req/s per replica, x 1.2 headroom: 3 to 4 replicas a window.
    windows = training_figures["replica_windows"]
    assert 3 * 4 <= windows <= 4 * 4
    config = json.loads((out / "config.json").read_text())
    assert config["policy"] == "serving-first" and config["cluster"] == "8x8"
    bad = tmp_path / "bad"
    cases = [
        (["--cluster", "8x8"], "--cluster needs --beside"),
        (["--beside", training], "--beside needs --cluster"),
        (["--beside", training, "--cluster", "8x8", "--replicas", "2"], "--replicas does not"),
    ]
    for extra, message in cases:
        refused = invoke("azure_code_3000", "--out", bad, *extra)
        assert refused.exit_code == 2 and message in refused.output, refused.output
        assert not bad.exists()


def test_autoscaled_run_reports_replicas_over_time_and_refuses_fixed_sizes(
    tmp_path: Path,
) -> None:
    out = tmp_path / "scaled"
    args = ["azure_conv_5000", "--out", out, "--autoscale", "--capacity", "1.0"]
    result = invoke(*args, "--window", "120", "--cold-start", "30")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    steps = summary["replica_count"]
    counts = [count for _, count in steps]
    # The first replica is ready after its cold start; the count moves with the load and
    # ends at zero when the last window closes.
    assert steps[0][0] == 30.0 and counts[-1] == 0
    assert max(counts) > counts[0] and len(set(counts)) > 2
    # Every replica instance started once: the first ones plus every later rise.
    rises = sum(max(0, b - a) for a, b in itertools.pairwise(counts))
    assert summary["replicas"] == counts[0] + rises
    assert summary["energy_j"] > 0 and 0 < summary["gpu_utilization"] <= 1
    config = json.loads((out / "config.json").read_text())
    assert config["autoscale"] is True and config["replicas"] is None
    bad = tmp_path / "bad"
    cases = [
        (["--window", "60"], "--window needs --autoscale or --beside"),
        (["--autoscale", "--replicas", "2"], "--replicas does not apply when autoscaled"),
        (["--autoscale", "--router", "kv-aware"], "--router does not apply when autoscaled"),
        (["--autoscale", "--policy", "fifo"], "--policy needs --beside"),
    ]
    for extra, message in cases:
        refused = invoke("azure_code_3000", "--out", bad, *extra)
        assert refused.exit_code == 2 and message in refused.output, refused.output
        assert not bad.exists()


def test_swap_preemption_is_recorded_and_refused_where_it_cannot_apply(tmp_path: Path) -> None:
    out = tmp_path / "swap"
    # Little KV memory (22% of the GPUs' memory less the weights): requests get preempted.
    args = ["azure_code_3000", "--replicas", "2", "--memory-fraction", "0.22"]
    result = invoke(*args, "--preemption", "swap", "--out", out)
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())["replica"]
    assert config["preemption"] == "swap"
    # llama2-70b: 327,680 KV bytes a token over 8 A100 links of 32 GB/s.
    assert config["swap_s_per_token"] == pytest.approx(327_680 / (8 * 32e9))
    assert json.loads((out / "summary.json").read_text())["preemptions"] > 0
    bad = tmp_path / "bad"
    cases = [
        (["--preemption", "swap", "--scheduler", "static"], "static scheduler never preempts"),
        (["--pcie-gbps", "16"], "--pcie-gbps needs --preemption swap"),
        (["--preemption", "evict"], "unknown preemption 'evict'"),
    ]
    for extra, message in cases:
        refused = invoke("azure_code_3000", "--out", bad, *extra)
        assert refused.exit_code == 2 and message in refused.output, refused.output
        assert not bad.exists()


def test_the_trace_is_the_argument_or_trace_or_requests(tmp_path: Path) -> None:
    runs = {}
    for how in (
        ["azure_conv_5000"],
        ["--trace", "azure_conv_5000"],
        ["--requests", "azure_conv_5000"],
    ):
        out = tmp_path / how[0].strip("-")
        result = invoke(*how, "--out", out)
        assert result.exit_code == 0, result.output
        runs[how[0]] = json.loads((out / "summary.json").read_text())["ttft_s"]
    assert len({json.dumps(v, sort_keys=True) for v in runs.values()}) == 1
    twice = invoke("azure_conv_5000", "--trace", "azure_code_3000", "--out", tmp_path / "x")
    assert twice.exit_code == 2 and "give the trace once" in twice.output
    none = invoke("--out", tmp_path / "y")
    assert none.exit_code == 2 and "give a trace" in none.output
