"""``analyze`` on request traces: rate over time, burstiness, length distributions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.serving.arrivals import synthetic_requests
from dlsched.serving.bundled import bundled_requests_path
from dlsched.serving.characterize import characterize_requests
from dlsched.serving.requests import RequestSpec, RequestTrace


def test_poisson_trace_characterized_as_such() -> None:
    trace = synthetic_requests(10.0, duration=600.0, seed=4)
    c = characterize_requests(trace, bin_seconds=60.0)
    assert len(c.rate_per_bin) == 10
    assert sum(r * c.bin_seconds for r in c.rate_per_bin) == pytest.approx(c.requests)
    assert c.mean_rate == pytest.approx(10.0, rel=0.05)
    assert c.gap_cv == pytest.approx(1.0, abs=0.05)
    assert c.length_correlation is None  # fixed lengths


def test_lengths_are_the_traces_own() -> None:
    trace = RequestTrace.from_requests(
        [RequestSpec(float(t), p, o) for t, p, o in ((0, 10, 1), (1, 20, 2), (2, 30, 3))]
    )
    c = characterize_requests(trace)
    assert (c.prompt.minimum, c.prompt.maximum, c.prompt.mean) == (10, 30, 20.0)
    assert c.length_correlation == pytest.approx(1.0)
    assert c.gap_cv == pytest.approx(0.0)


def test_analyze_writes_a_request_report_and_refuses_cluster(tmp_path: Path) -> None:
    out = tmp_path / "report"
    trace = bundled_requests_path("azure_code_3000")
    result = CliRunner().invoke(app, ["analyze", str(trace), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "3,000 requests" in result.output
    assert {p.name for p in out.iterdir()} == {
        "index.html",
        "stats.json",
        "rate.png",
        "lengths.png",
    }
    stats = json.loads((out / "stats.json").read_text())
    assert stats["requests"] == 3000 and stats["format"] == "azure-llm"
    assert stats["prompt"]["maximum"] == 7437
    assert "Arrival rate" in (out / "index.html").read_text()
    again = CliRunner().invoke(app, ["analyze", str(trace), "--out", str(out), "--cluster", "8x8"])
    assert again.exit_code == 2 and "--cluster does not apply" in again.output
