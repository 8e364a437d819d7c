"""The online evaluation: replay order, metrics on a hand-computed case, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from dlsched.cli.predict_cmd import predict_app
from dlsched.perf.duration.base import DurationEstimator
from dlsched.perf.duration.evaluate import accuracy, build_estimators, evaluate
from dlsched.perf.duration.named_jobs import named_trace
from dlsched.trace.io import write_parquet
from dlsched.trace.schema import Trace


class Scripted(DurationEstimator):
    """Answers from a table by job id and records every call."""

    name: ClassVar[str] = "test-scripted"

    def __init__(self, answers: dict[str, float], matched: set[str]) -> None:
        self.answers, self.matched = answers, matched
        self.calls: list[tuple[str, str, float]] = []
        self.last_source, self.last_matched = "none", False

    def bind(self, trace: Trace) -> None:
        self.ids: list[str] = trace.column("job_id").to_pylist()

    def observe(self, row: int, duration: float, now: float) -> None:
        self.calls.append(("observe", self.ids[row], now))

    def estimate(self, row: int, now: float) -> float:
        job = self.ids[row]
        self.calls.append(("estimate", job, now))
        self.last_matched = job in self.matched
        self.last_source = "mine" if self.last_matched else "global"
        return self.answers[job]


def tiny(end_b: float | None = None) -> Trace:
    # A(0, 10) B(5, 20) C(12, 4) D(30, 8) and E, which has no duration.
    return Trace.from_columns(
        {
            "job_id": ["A", "B", "C", "D", "E"],
            "submit_time": [0.0, 5.0, 12.0, 30.0, 31.0],
            "num_gpus": [1, 1, 1, 1, 1],
            "duration": [10.0, 20.0, 4.0, 8.0, None],
            "end_time": [None, end_b, None, None, None],
        },
        source="tiny",
    )


ANSWERS = {"A": 20.0, "B": 10.0, "C": 4.0, "D": 40.0}


def test_hand_computed_metrics_and_order() -> None:
    est = Scripted(ANSWERS, matched={"A", "C"})
    result = evaluate(tiny(), [est], warmup_fraction=0.0)
    assert (result.jobs, result.skipped_no_duration, result.warmup_jobs) == (5, 1, 0)
    (score,) = result.scores
    # Errors 10, 10, 0, 32; relative 100%, 50%, 0%, 400%; ratios 2, 0.5, 1, 5.
    assert score.queries == 4
    assert score.mae_s == pytest.approx(13.0)
    assert score.mdape_pct == pytest.approx(75.0)
    assert score.within_2x == pytest.approx(0.75)
    assert score.coverage == pytest.approx(0.5)
    assert score.sources == {"global": 2, "mine": 2}
    # A finishes at 10, C at 16, B at 25: C and B are known, in that order, before D at 30.
    assert est.calls == [
        ("estimate", "A", 0.0),
        ("estimate", "B", 5.0),
        ("observe", "A", 10.0),
        ("estimate", "C", 12.0),
        ("observe", "C", 16.0),
        ("observe", "B", 25.0),
        ("estimate", "D", 30.0),
    ]


def test_original_end_time_is_used() -> None:
    est = Scripted(ANSWERS, matched=set())
    evaluate(tiny(end_b=40.0), [est], warmup_fraction=0.0)
    assert ("observe", "B", 25.0) not in est.calls
    assert est.calls[-1] == ("estimate", "D", 30.0)


def test_warmup_jobs_are_observed_not_scored() -> None:
    est = Scripted(ANSWERS, matched=set())
    result = evaluate(tiny(), [est], warmup_fraction=0.5)
    assert result.warmup_jobs == 2
    assert result.eval_from_s == 12.0
    assert [c[1] for c in est.calls if c[0] == "estimate"] == ["C", "D"]
    assert result.scores[0].mae_s == pytest.approx(16.0)


def test_accuracy_of_nothing() -> None:
    acc = accuracy(np.empty(0), np.empty(0))
    assert (acc.mae_s, acc.mdape_pct, acc.within_2x) == (None, None, None)


def test_unknown_estimator_is_reported() -> None:
    with pytest.raises(ValueError, match="available"):
        build_estimators(["nope"])


def test_noisy_oracle_has_no_coverage() -> None:
    (oracle,) = build_estimators(["noisy-oracle"])
    result = evaluate(tiny(), [oracle])
    assert result.scores[0].coverage is None
    assert result.scores[0].queries == 3


@pytest.fixture()
def cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(predict_app, name="predict")
    return app


def test_cli_json(cli: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "named.parquet"
    write_parquet(named_trace(600, n_users=20, seed=2), path)
    names = "history,lgbm,combined,noisy-oracle"
    out = CliRunner().invoke(cli, ["predict", "eval", str(path), "--estimator", names, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert [s["estimator"] for s in data["scores"]] == names.split(",")
    assert data["warmup_jobs"] == 180
    assert all(s["queries"] == 420 for s in data["scores"])
    history = data["scores"][0]
    assert 0.0 < history["coverage"] <= 1.0 and history["queries_per_s"] > 0


def test_cli_table_and_errors(cli: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "named.parquet"
    write_parquet(named_trace(200, n_users=5, seed=2), path)
    out = CliRunner().invoke(cli, ["predict", "eval", str(path), "--estimator", "history"])
    assert out.exit_code == 0, out.output
    assert "history" in out.stdout and "MAE" in out.stdout
    bad = CliRunner().invoke(cli, ["predict", "eval", str(path), "--estimator", "nope"])
    assert bad.exit_code == 2
    assert "unknown estimator" in bad.output
