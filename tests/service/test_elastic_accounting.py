"""What the store, the API and ``dlsched jobs`` say of a job an elastic policy resized: attained
GPU-seconds count the GPUs each attempt held, and the record shows the GPUs held now beside the
requested count."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import dlsched.cli.service_cmd as service_cmd
from dlsched.cli.main import app
from dlsched.service.api.app import ServiceContext, create_app
from dlsched.service.api.auth import load_or_create_token
from dlsched.service.store.database import Store
from dlsched.service.store.records import COMPLETED, PREEMPTING, RUNNING, NewJob
from tests.service.test_elastic_live import Live, runs_of


def test_attained_gpu_seconds_count_the_gpus_each_attempt_held(tmp_path: Path, db_url: str) -> None:
    live = Live(tmp_path, "pollux", db=db_url)
    seq = live.submit("grow", gpus=1, max_gpus=4)
    live.run()
    runs = runs_of(live, f"j{seq}")
    sizes = [r.request.num_gpus for r in runs]
    assert sizes[:3] == [1, 2, 4], sizes
    held = [sum(len(g) for g in r.request.gpu_ids.values()) for r in runs]
    assert held == sizes
    expected = sum(n * (r.end - r.begin) for n, r in zip(held, runs, strict=True))
    requested_only = sum(1 * (r.end - r.begin) for r in runs)
    row = live.store.get(seq)
    assert row is not None and row.state == COMPLETED
    assert row.attained_gpu_s == pytest.approx(expected)
    assert expected > requested_only * 1.5
    live.store.close()


def _step_until_held(live: Live, seq: int, gpus: int) -> None:
    for _ in range(100):
        live.ctl.step()
        for _ in range(10):
            if not any(r.state == PREEMPTING for r in live.store.holding()):
                break
            live.ctl.step()
        row = live.store.get(seq)
        assert row is not None
        if row.state == RUNNING and sum(len(g) for g in (row.gpu_ids or {}).values()) == gpus:
            return
        live.clock.now += 60.0
    raise AssertionError(f"job {seq} never held {gpus} GPUs")


@pytest.fixture
def grown(tmp_path: Path) -> Iterator[tuple[Live, int]]:
    live = Live(tmp_path, "pollux")
    seq = live.submit("grow", gpus=1, max_gpus=4)
    _step_until_held(live, seq, 4)
    yield live, seq
    live.store.close()


def test_the_api_shows_the_gpus_a_resized_job_holds(
    grown: tuple[Live, int], tmp_path: Path
) -> None:
    live, seq = grown
    token = load_or_create_token(tmp_path / "token")
    ctx = ServiceContext(live.store, live.ctl, lambda: None, live.clock, token, "pollux")
    with TestClient(create_app(ctx, None), base_url="http://localhost") as client:
        record = client.get(f"/jobs/j{seq}").json()
    assert record["state"] == RUNNING
    assert (record["gpus"], record["gpus_requested"]) == (4, 1)
    assert sum(len(g) for g in record["gpu_ids"].values()) == 4


def test_dlsched_jobs_shows_held_and_requested_gpus(
    grown: tuple[Live, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    live, seq = grown
    pending = live.submit("waiting", gpus=2, max_gpus=2)
    records = [r.to_api() for r in live.store.jobs()]

    class Stub:
        def jobs(self, state: str | None, user: str | None) -> list[dict[str, Any]]:
            return records

    @contextmanager
    def client(url: str | None, token_file: Path | None) -> Iterator[Stub]:
        yield Stub()

    monkeypatch.setattr(service_cmd, "_client", client)
    runner = CliRunner()
    out = runner.invoke(app, ["jobs", "--json"])
    assert out.exit_code == 0, out.output
    shown = {r["id"]: (r["gpus"], r["gpus_requested"]) for r in json.loads(out.output)}
    assert shown == {f"j{seq}": (4, 1), f"j{pending}": (2, 2)}
    table = runner.invoke(app, ["jobs"])
    assert table.exit_code == 0, table.output
    line = next(x for x in table.output.splitlines() if f"j{seq} " in x)
    assert "4 (asked 1)" in line
    other = next(x for x in table.output.splitlines() if f"j{pending} " in x)
    assert "asked" not in other


def test_a_run_taken_over_after_a_lapsed_lease_counts_the_gpus_it_held(
    tmp_path: Path, db_url: str
) -> None:
    store = Store(db_url)
    row = store.submit(NewJob("e", "u", 1, ("sleep", "5")), 100.0)
    assert store.mark_started(row.seq, {"node-000": [0, 1, 2]}, 100.0, "gone") is not None
    # Service "gone" never renewed a lease: another service takes the job over at t=140.
    assert store.claim_lapsed("taker", 140.0) == [row.seq]
    # Its attempt is checked first; once known dead, the job is queued with its GPU time.
    assert store.settle_orphan(row.seq, 1, "PENDING", 140.0, None, "gone")
    taken = store.get(row.seq)
    assert taken is not None and taken.state == "PENDING"
    assert taken.attained_gpu_s == pytest.approx(3 * 40.0)
    store.close()
