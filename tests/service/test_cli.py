"""``dlsched submit | jobs | cancel`` against a real server (uvicorn on 127.0.0.1, fake back end),
and ``dlsched serve``'s errors for bad options."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.service.server import Service, ServiceConfig
from tests.service.helpers import serving

runner = CliRunner()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path, Service]]:
    config = ServiceConfig(
        cluster="2x4",
        policy="fifo",
        backend="fake",
        db=tmp_path / "state.db",
        round_s=0.2,
        poll_s=0.05,
    )
    with serving(config) as (url, service):
        yield url, config.token_path, service


def test_submit_jobs_cancel(server: tuple[str, Path, Service], monkeypatch) -> None:  # type: ignore[no-untyped-def]
    url, token_file, _ = server
    opts = ["--url", url, "--token-file", str(token_file)]
    r = runner.invoke(
        app,
        [
            "submit",
            "--gpus",
            "2",
            "--name",
            "resnet-a",
            "--user",
            "ann",
            *opts,
            "--",
            "sleep",
            "600",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "submitted j1" in r.output
    monkeypatch.setenv("DLSCHED_URL", url)
    monkeypatch.setenv("DLSCHED_TOKEN", token_file.read_text().strip())
    r = runner.invoke(app, ["submit", "--gpus", "8", "--name", "big", "--", "sleep", "5"])
    assert r.exit_code == 0, r.output
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        records = json.loads(runner.invoke(app, ["jobs", "--json"]).output)
        # j2's priority is set by the first cycle after its submission, maybe a later one.
        if records[0]["state"] == "RUNNING" and records[1]["priority"] is not None:
            break
        time.sleep(0.05)
    assert [(j["id"], j["name"], j["user"], j["gpus"]) for j in records] == [
        ("j1", "resnet-a", "ann", 2),
        ("j2", "big", records[1]["user"], 8),
    ]
    assert records[0]["state"] == "RUNNING" and records[0]["nodes"] == ["node-000"]
    assert records[1]["state"] == "PENDING" and records[1]["priority"] == 1
    table = runner.invoke(app, ["jobs"])
    assert table.exit_code == 0 and "resnet-a" in table.output and "node-000:0,1" in table.output
    r = runner.invoke(app, ["cancel", "j1"])
    assert r.exit_code == 0 and "j1: PREEMPTING" in r.output
    r = runner.invoke(app, ["cancel", "j9"])
    assert r.exit_code == 1 and "no job 'j9'" in r.output


def test_client_errors_are_clear(server: tuple[str, Path, Service], tmp_path: Path) -> None:
    url, _, _ = server
    wrong = tmp_path / "wrong-token"
    wrong.write_text("nope")
    r = runner.invoke(app, ["submit", "--url", url, "--token-file", str(wrong), "--", "true"])
    assert r.exit_code == 1 and "401" in r.output
    r = runner.invoke(app, ["jobs", "--url", "http://127.0.0.1:9"])
    assert r.exit_code == 1 and "cannot reach the service" in r.output


def test_serve_rejects_bad_options(tmp_path: Path) -> None:
    r = runner.invoke(
        app, ["serve", "--port", "0", "--cluster", "bogus!", "--db", str(tmp_path / "s.db")]
    )
    assert r.exit_code == 2 and "cannot resolve cluster" in r.output
    r = runner.invoke(
        app, ["serve", "--port", "0", "--policy", "nope", "--db", str(tmp_path / "s.db")]
    )
    assert r.exit_code == 2 and "unknown policy" in r.output
    r = runner.invoke(
        app, ["serve", "--port", "0", "--backend", "k8s", "--db", str(tmp_path / "s.db")]
    )
    assert r.exit_code == 2 and "unknown backend" in r.output


def test_serve_rejects_bad_policy_options_and_a_misplaced_ray_address(tmp_path: Path) -> None:
    db = ["--db", str(tmp_path / "s.db")]
    r = runner.invoke(
        app, ["serve", "--port", "0", "--policy", "tiresias", "--policy-opt", "thresholds", *db]
    )
    assert r.exit_code == 2 and "--policy-opt expects KEY=VALUE, got 'thresholds'" in r.output
    r = runner.invoke(
        app, ["serve", "--port", "0", "--policy", "tiresias", "--policy-opt", "bogus=1", *db]
    )
    assert r.exit_code == 2 and "unknown option(s) bogus of 'tiresias'; its options:" in r.output
    assert "thresholds" in r.output  # the known options are listed
    r = runner.invoke(
        app, ["serve", "--port", "0", "--policy", "tiresias", "--policy-opt", "thresholds=x", *db]
    )
    assert r.exit_code == 2 and "option thresholds: expected a number, got 'x'" in r.output
    r = runner.invoke(app, ["serve", "--port", "0", "--ray-address", "127.0.0.1:6379", *db])
    assert r.exit_code == 2
    assert "--ray-address) applies only to backend 'ray', not 'local'" in r.output
    r = runner.invoke(app, ["serve", "--port", "0", "--backend", "ray", "--ray-address", " ", *db])
    assert r.exit_code == 2 and "--ray-address) is empty" in r.output
    assert not (tmp_path / "s.db").exists()  # nothing was started


def test_serve_passes_policy_options_and_ray_address_to_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dlsched.service.server as server_module

    seen: list[ServiceConfig] = []
    monkeypatch.setattr(server_module, "serve", lambda config, announce: seen.append(config))
    args = [
        "serve",
        "--port",
        "0",
        "--policy",
        "tiresias",
        "--backend",
        "ray",
        "--db",
        str(tmp_path / "s.db"),
    ]
    args += ["--policy-opt", "thresholds=15,60", "--policy-opt", " round_s = 30"]
    r = runner.invoke(app, [*args, "--ray-address", "10.0.0.1:6379"])
    assert r.exit_code == 0, r.output
    assert seen[0].policy_options == {"thresholds": "15,60", "round_s": "30"}
    assert seen[0].ray_address == "10.0.0.1:6379"
    r = runner.invoke(app, args[:-4])
    assert r.exit_code == 0, r.output
    assert seen[1].policy_options == {} and seen[1].ray_address is None
