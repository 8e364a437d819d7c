"""``dlsched serve --placement topology --placement-opt``: the live planner places with the same
topology placer and options as the simulator (racks kept, a job larger than the required tier
refused at submission), options the service cannot honour are refused before anything is
created, and ``--comm-model`` (a simulation option: live jobs run for real) is a usage error."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.backends.fake import FakeBackend
from dlsched.cli.main import app
from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy
from dlsched.service.control.controller import Controller
from dlsched.service.server import ServiceConfig
from dlsched.service.store.database import Store
from tests.service.helpers import Clock, Harness, serving

runner = CliRunner()
# Two racks of two 4-GPU nodes: node-000 and node-001 in rack0, node-002 and node-003 in rack1.
RACKED = "2x4,2x4"


def harness(tmp_path: Path, placement: str, options: dict[str, str]) -> Harness:
    clock = Clock()
    store = Store(tmp_path / "state.db")
    backend = FakeBackend(clock)
    controller = Controller(
        store,
        backend,
        resolve_cluster(RACKED),
        create_policy("fifo"),
        placement=placement,
        clock=clock,
        placement_options=options,
    )
    return Harness(clock, store, backend, controller)


@pytest.mark.parametrize(
    ("placement", "options", "nodes"),
    [
        # consolidate takes the wholly free nodes lowest first, across the racks' boundary.
        ("consolidate", {}, ["node-001", "node-002"]),
        ("topology", {}, ["node-002", "node-003"]),
        ("topology", {"required": "rack"}, ["node-002", "node-003"]),
    ],
)
def test_the_live_planner_places_with_the_placers_options(
    tmp_path: Path, placement: str, options: dict[str, str], nodes: list[str]
) -> None:
    h = harness(tmp_path, placement, options)
    h.submit("small", 4, 100.0)
    h.controller.step()
    h.submit("wide", 8, 100.0)
    h.controller.step()
    held = {row.name: sorted(row.gpu_ids or {}) for row in h.store.jobs()}
    assert held == {"small": ["node-000"], "wide": nodes}
    big = h.controller.submission_problem(12, None)
    if options:
        assert big is not None and "placement 'topology' finds no room for 12 GPUs" in big
    else:
        assert big is None


def test_serve_refuses_a_job_larger_than_the_required_tier(tmp_path: Path) -> None:
    config = ServiceConfig(
        cluster=RACKED,
        placement="topology",
        placement_options={"required": "rack"},
        backend="fake",
        db=tmp_path / "state.db",
        round_s=0.2,
        poll_s=0.05,
    )
    with serving(config) as (url, _):
        opts = ["--url", url, "--token-file", str(config.token_path)]
        r = runner.invoke(app, ["submit", "--gpus", "12", "--name", "big", *opts, "--", "true"])
        assert r.exit_code == 1 and "infeasible: gpus=12" in r.output
        r = runner.invoke(app, ["submit", "--gpus", "4", "--name", "a", *opts, "--", "sleep", "60"])
        assert r.exit_code == 0, r.output
        r = runner.invoke(app, ["submit", "--gpus", "8", "--name", "b", *opts, "--", "sleep", "60"])
        assert r.exit_code == 0, r.output
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            jobs = json.loads(runner.invoke(app, ["jobs", "--json", *opts]).output)
            if all(j["state"] == "RUNNING" for j in jobs):
                break
            time.sleep(0.05)
    assert {j["name"]: j["nodes"] for j in jobs} == {
        "a": ["node-000"],
        "b": ["node-002", "node-003"],
    }


def test_serve_passes_placement_options_to_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dlsched.service.server as server_module

    seen: list[ServiceConfig] = []
    monkeypatch.setattr(server_module, "serve", lambda config, announce: seen.append(config))
    args = [
        "serve",
        "--port",
        "0",
        "--backend",
        "fake",
        "--db",
        str(tmp_path / "s.db"),
        "--cluster",
        RACKED,
    ]
    r = runner.invoke(app, [*args, "--placement", "topology", "--placement-opt", "required=rack"])
    assert r.exit_code == 0, r.output
    assert (seen[0].placement, seen[0].placement_options) == ("topology", {"required": "rack"})
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert seen[1].placement_options == {}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--placement-opt", "required=rack"], "placement 'consolidate' takes no options"),
        (
            ["--placement", "topology", "--placement-opt", "required=shelf"],
            "--placement-opt required: expected one of node, rack, block, got 'shelf'",
        ),
        (["--placement", "topology", "--placement-opt", "rack"], "--placement-opt expects KEY="),
        (
            ["--policy", "pollux", "--placement-opt", "required=rack"],
            "(--placement-opt) required: elastic policy 'pollux' places its jobs itself",
        ),
        (["--placement", "bogus"], "unknown placement 'bogus'"),
        (["--comm-model", "tiers"], "No such option: --comm-model"),
    ],
)
def test_serve_refuses_what_it_cannot_honour_before_creating_anything(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    db = tmp_path / "s.db"
    r = runner.invoke(app, ["serve", "--port", "0", "--backend", "fake", "--db", str(db), *extra])
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert list(tmp_path.iterdir()) == []
