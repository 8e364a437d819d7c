"""The REST API: authentication, validation, size limit, infeasible jobs, the endpoints."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dlsched.service.api.app import DASHBOARD_DIR, ServiceContext, create_app
from dlsched.service.api.auth import TokenFileError, load_or_create_token
from tests.service.helpers import Harness, make_harness

GOOD = {"name": "resnet-a", "user": "alice", "gpus": 2, "command": ["sleep", "5"]}


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[TestClient, Harness, dict[str, str], list[int]]]:
    h = make_harness(tmp_path, "tiresias")
    token = load_or_create_token(tmp_path / "token")
    pokes: list[int] = []
    ctx = ServiceContext(h.store, h.controller, lambda: pokes.append(1), h.clock, token, "tiresias")
    dash = tmp_path / "dash"
    dash.mkdir()
    (dash / "index.html").write_text("<html>dashboard here</html>")
    with TestClient(create_app(ctx, dash, max_body=4096), base_url="http://localhost") as client:
        yield client, h, {"Authorization": f"Bearer {token}"}, pokes
    h.store.close()


def test_token_file_is_private_and_stable(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "token"
    token = load_or_create_token(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_token(path) == token and len(token) >= 32
    path.chmod(0o644)
    with pytest.raises(TokenFileError, match="mode 644"):
        load_or_create_token(path)


def test_submit_list_get_cancel(setup: tuple[TestClient, Harness, dict[str, str], list[int]]):
    client, h, auth, pokes = setup
    r = client.post("/jobs", json=GOOD, headers=auth)
    assert r.status_code == 201, r.text
    job = r.json()
    assert (job["id"], job["state"], job["gpus"], job["command"]) == (
        "j1",
        "PENDING",
        2,
        ["sleep", "5"],
    )
    assert pokes == [1]
    assert [j["id"] for j in client.get("/jobs").json()] == ["j1"]
    assert client.get("/jobs", params={"state": "running"}).json() == []
    assert client.get("/jobs", params={"user": "bob"}).json() == []
    h.controller.step()
    got = client.get("/jobs/j1").json()
    assert got["state"] == "RUNNING" and got["nodes"] == ["node-000"]
    assert got["gpu_ids"] == {"node-000": [0, 1]}
    cluster = client.get("/cluster").json()
    held = [g["job_id"] for n in cluster["nodes"] for g in n["gpus"]]
    assert held.count("j1") == 2 and cluster["policy"] == "tiresias"
    r = client.delete("/jobs/j1", headers=auth)
    assert r.status_code == 202 and r.json()["state"] == "PREEMPTING"
    h.controller.step()  # the back end is asked to stop the job
    h.controller.step()  # and reports it gone
    assert client.get("/jobs/j1").json()["state"] == "CANCELLED"
    assert client.delete("/jobs/j1", headers=auth).status_code == 409
    assert client.delete("/jobs/j99", headers=auth).status_code == 404
    assert client.get("/jobs/nope").status_code == 404
    kinds = [e["kind"] for e in client.get("/jobs/j1/events").json()]
    assert kinds == ["submitted", "started", "cancel_requested", "cancelled"]
    metrics = client.get("/metrics").json()
    assert metrics["counts"]["CANCELLED"] == 1
    assert metrics["cycle_ms_p50"] is not None and metrics["utilization"]


def test_pending_jobs_get_queue_positions(setup):  # type: ignore[no-untyped-def]
    client, h, auth, _ = setup
    for gpus in (8, 4, 2):
        assert client.post("/jobs", json={**GOOD, "gpus": gpus}, headers=auth).status_code == 201
    h.controller.step()
    jobs = {j["id"]: j for j in client.get("/jobs").json()}
    assert jobs["j1"]["state"] == "RUNNING"
    assert (jobs["j2"]["priority"], jobs["j3"]["priority"]) == (1, 2)


def test_mutations_need_the_token(setup) -> None:  # type: ignore[no-untyped-def]
    client, h, _, _ = setup
    assert client.post("/jobs", json=GOOD).status_code == 401
    bad = {"Authorization": "Bearer wrong"}
    r = client.post("/jobs", json=GOOD, headers=bad)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert client.post("/jobs", content=b"{not json", headers=bad).status_code == 401
    assert client.delete("/jobs/j1").status_code == 401
    assert h.store.jobs() == []
    assert client.get("/jobs").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**GOOD, "gpus": 0}, "gpus"),
        ({**GOOD, "gpus": "2"}, "gpus"),
        ({**GOOD, "gpus": 1.5}, "gpus"),
        ({k: v for k, v in GOOD.items() if k != "command"}, "command"),
        ({**GOOD, "command": []}, "command"),
        ({**GOOD, "command": "sleep 5"}, "command"),
        ({**GOOD, "name": ""}, "name"),
        ({**GOOD, "name": "a b;rm"}, "name"),
        ({**GOOD, "batch_size": -1}, "batch_size"),
        ({**GOOD, "expected_duration_s": -3}, "expected_duration_s"),
        ({**GOOD, "colour": "red"}, "colour"),
    ],
)
def test_malformed_bodies_name_the_field_and_store_nothing(setup, body, field) -> None:  # type: ignore[no-untyped-def]
    client, h, auth, _ = setup
    r = client.post("/jobs", json=body, headers=auth)
    assert r.status_code == 422, r.text
    assert any(e["field"] == field for e in r.json()["errors"]), r.json()
    assert field in r.json()["detail"]
    assert h.store.jobs() == []


def test_not_json_and_oversized_bodies(setup) -> None:  # type: ignore[no-untyped-def]
    client, h, auth, _ = setup
    r = client.post(
        "/jobs", content=b"{not json", headers={**auth, "content-type": "application/json"}
    )
    assert r.status_code == 422
    big = {**GOOD, "command": ["x" * 1000] * 10}
    r = client.post("/jobs", json=big, headers=auth)
    assert r.status_code == 413 and "too large" in r.json()["detail"]

    def chunks() -> Iterator[bytes]:
        yield json.dumps({**GOOD, "command": ["y" * 3000]}).encode()
        yield b" " * 3000

    r = client.post("/jobs", content=chunks(), headers={**auth, "content-type": "application/json"})
    assert r.status_code == 413
    assert h.store.jobs() == []


def test_infeasible_jobs_are_rejected_with_the_reason(setup) -> None:  # type: ignore[no-untyped-def]
    client, h, auth, _ = setup
    r = client.post("/jobs", json={**GOOD, "gpus": 9}, headers=auth)
    assert r.status_code == 422
    assert "infeasible" in r.json()["detail"] and "8" in r.json()["detail"]
    assert h.store.jobs() == []


def test_bad_state_filter(setup) -> None:  # type: ignore[no-untyped-def]
    client, _, _, _ = setup
    r = client.get("/jobs", params={"state": "DONE"})
    assert r.status_code == 422 and "state" in r.json()["detail"]


def test_docs_and_dashboard_are_served(setup) -> None:  # type: ignore[no-untyped-def]
    client, h, _, _ = setup
    spec = client.get("/openapi.json").json()
    assert "/jobs" in spec["paths"] and "/metrics" in spec["paths"]
    assert "dashboard here" in client.get("/").text
    # FastAPI's own pages load their scripts from a CDN: the reference is the dashboard's.
    assert client.get("/docs").status_code == 404 and client.get("/redoc").status_code == 404
    ctx = ServiceContext(h.store, h.controller, lambda: None, h.clock, "t", "tiresias")
    with TestClient(create_app(ctx, DASHBOARD_DIR), base_url="http://localhost") as real:
        page = real.get("/docs", follow_redirects=True)
        assert page.status_code == 200 and "docs.js" in page.text
        for asset in ("/docs/docs.js", "/docs/docs.css", "/dom.js"):
            text = real.get(asset).text
            assert "http://" not in text.replace("http://www.w3.org", "")
            assert "https://" not in text


def test_cluster_marks_nodes_the_back_end_reports_down(setup) -> None:  # type: ignore[no-untyped-def]
    client, h, _, _ = setup
    h.controller.step()
    assert all(n["up"] for n in client.get("/cluster").json()["nodes"])
    h.backend.fail_node("node-001")
    h.controller.step()
    up = {n["name"]: n["up"] for n in client.get("/cluster").json()["nodes"]}
    assert up["node-001"] is False
    assert all(v for name, v in up.items() if name != "node-001")
    h.backend.restore_node("node-001")
    h.controller.step()
    assert all(n["up"] for n in client.get("/cluster").json()["nodes"])
