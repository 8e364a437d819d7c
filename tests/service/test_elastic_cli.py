"""``dlsched submit --elastic`` against a real service running an elastic policy (uvicorn on
127.0.0.1, fake back end), on a SQLite file and on PostgreSQL: the job's elastic fields reach
the store, bad ones are refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.service.control.elastic_book import ElasticSpec
from dlsched.service.control.elastic_planning import ElasticPlanning
from dlsched.service.server import Service, ServiceConfig
from tests.service.helpers import serving

runner = CliRunner()


@pytest.fixture
def server(tmp_path: Path, db_url: str) -> Iterator[tuple[list[str], Service]]:
    config = ServiceConfig(
        cluster="2x4",
        policy="ones",
        backend="fake",
        db=db_url,
        token_file=tmp_path / "token",
        work_dir=tmp_path / "jobs",
        round_s=0.2,
        poll_s=0.05,
    )
    with serving(config) as (url, service):
        yield ["--url", url, "--token-file", str(config.token_path)], service


def test_submit_elastic_job(server: tuple[list[str], Service]) -> None:
    opts, service = server
    planning = service.controller.planning
    assert isinstance(planning, ElasticPlanning)
    args = ["submit", "--elastic", "--application", "cifar10", "--gpus", "1", "--max-gpus", "4"]
    r = runner.invoke(app, [*args, "--batch-size", "32", *opts, "--", "sleep", "1"])
    assert r.exit_code == 0, r.output
    assert "submitted j1" in r.output
    assert planning.book.spec(1) == ElasticSpec("cifar10", 4, 32)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--elastic", "--batch-size", "32"], "application"),
        (["--elastic", "--application", "cifar10"], "batch_size"),
        (
            ["--elastic", "--application", "cifar10", "--batch-size", "8", "--max-gpus", "99"],
            "max_gpus",
        ),
        (["--batch-size", "32"], "elastic"),
        (["--application", "cifar10", "--batch-size", "32"], "application"),
    ],
)
def test_submit_refuses_bad_elastic_jobs(
    server: tuple[list[str], Service], args: list[str], field: str
) -> None:
    opts, service = server
    r = runner.invoke(app, ["submit", *args, *opts, "--", "sleep", "1"])
    assert r.exit_code != 0
    assert "422" in r.output and field in r.output, r.output
    assert service.store.jobs() == []
