"""Tenants in the live service: token file, who sees and cancels what, 401/403, constant-time
token checks, the tenant in the event log, and the store's upgrade to tenant columns."""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dlsched.cli.main import app as cli
from dlsched.service.api.app import ServiceContext, create_app
from dlsched.service.api.auth import TokenFileError
from dlsched.service.api.tenants import read_tokens
from dlsched.service.server import ServiceConfig
from dlsched.service.store.database import SCHEMA_VERSION, Store
from dlsched.service.store.records import NewJob
from tests.service.helpers import Harness, make_harness, run_beside, serving

ADMIN = "admin-token-0123456789abcdef"
TEAM_A = "team-a-token-0123456789abcdef"
TEAM_B = "team-b-token-0123456789abcdef"
TOKENS = f"""
admin_token = "{ADMIN}"

[tenants.team-a]
token = "{TEAM_A}"
queues = ["qa"]

[tenants.team-b]
token = "{TEAM_B}"
queues = ["qb", "qb-low"]
"""


def job(name: str, queue: str | None = None) -> dict[str, object]:
    body: dict[str, object] = {"name": name, "gpus": 1, "command": ["sleep", "5"]}
    if queue is not None:
        body["queue"] = queue
    return body


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def write_tokens(path: Path, text: str = TOKENS, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[TestClient, Harness]]:
    h = make_harness(tmp_path)
    tokens = read_tokens(write_tokens(tmp_path / "tokens.toml"))
    ctx = ServiceContext(
        h.store, h.controller, lambda: None, h.clock, tokens.admin_token, "fifo", tokens
    )
    with TestClient(create_app(ctx, None), base_url="http://localhost") as client:
        yield client, h
    h.store.close()


def test_a_tenant_reads_and_cancels_only_its_own_jobs(api: tuple[TestClient, Harness]) -> None:
    client, h = api
    a = client.post("/jobs", json=job("a1"), headers=bearer(TEAM_A))
    b = client.post("/jobs", json=job("b1", "qb"), headers=bearer(TEAM_B))
    assert (a.status_code, b.status_code) == (201, 201), (a.text, b.text)
    assert (a.json()["tenant"], a.json()["queue"]) == ("team-a", "qa")
    assert (b.json()["tenant"], b.json()["queue"]) == ("team-b", "qb")
    assert [j["id"] for j in client.get("/jobs", headers=bearer(TEAM_A)).json()] == ["j1"]
    assert [j["id"] for j in client.get("/jobs", headers=bearer(TEAM_B)).json()] == ["j2"]
    assert [j["id"] for j in client.get("/jobs", headers=bearer(ADMIN)).json()] == ["j1", "j2"]
    assert client.get("/jobs/j1", headers=bearer(TEAM_A)).status_code == 200
    for method, path in (("GET", "/jobs/j2"), ("GET", "/jobs/j2/events"), ("DELETE", "/jobs/j2")):
        r = client.request(method, path, headers=bearer(TEAM_A))
        assert r.status_code == 403 and "another tenant" in r.json()["detail"], (method, path)
    assert h.store.get(2).state == "PENDING"  # type: ignore[union-attr]
    assert client.get("/jobs/j2", headers=bearer(ADMIN)).json()["state"] == "PENDING"
    assert client.delete("/jobs/j1", headers=bearer(TEAM_A)).status_code == 202
    assert client.delete("/jobs/j2", headers=bearer(ADMIN)).status_code == 202


def test_a_tenant_submits_only_to_its_own_queues(api: tuple[TestClient, Harness]) -> None:
    client, h = api
    r = client.post("/jobs", json=job("x", "qb"), headers=bearer(TEAM_A))
    assert r.status_code == 403 and "may not submit to queue qb" in r.json()["detail"]
    r = client.post("/jobs", json=job("x"), headers=bearer(TEAM_B))
    assert r.status_code == 422 and "queue: required" in r.json()["detail"]
    assert "qb, qb-low" in r.json()["detail"]
    assert h.store.jobs() == []
    assert client.post("/jobs", json=job("x", "qb-low"), headers=bearer(TEAM_B)).status_code == 201


def test_unknown_or_missing_tokens_are_401(api: tuple[TestClient, Harness]) -> None:
    client, h = api
    client.post("/jobs", json=job("a1"), headers=bearer(TEAM_A))
    for headers in ({}, bearer("not-a-token-0123456789abcdef"), {"Authorization": TEAM_A}):
        for method, path in (("GET", "/jobs"), ("GET", "/jobs/j1"), ("POST", "/jobs")):
            r = client.request(method, path, headers=headers, json=job("y"))
            assert r.status_code == 401, (headers, method, path)
            assert r.headers["www-authenticate"] == "Bearer"
    assert len(h.store.jobs()) == 1
    # The cluster view and metrics name no job's owner: open as before.
    assert client.get("/cluster").status_code == 200


def test_every_token_is_compared_in_constant_time(
    api: tuple[TestClient, Harness], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = api
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert client.get("/jobs", headers=bearer(TEAM_A)).status_code == 200
    # Against every known token, even after the first one matched.
    assert sorted(b for _, b in calls) == sorted(t.encode() for t in (ADMIN, TEAM_A, TEAM_B))
    assert {a for a, _ in calls} == {TEAM_A.encode()}


def test_the_event_log_records_who_asked(api: tuple[TestClient, Harness]) -> None:
    client, h = api
    client.post("/jobs", json=job("a1"), headers=bearer(TEAM_A))
    client.post("/jobs", json=job("a2"), headers=bearer(TEAM_A))
    client.post("/jobs", json=job("adm", "qa"), headers=bearer(ADMIN))
    client.delete("/jobs/j1", headers=bearer(TEAM_A))
    client.delete("/jobs/j2", headers=bearer(ADMIN))
    h.controller.step()
    client.delete("/jobs/j3", headers=bearer(ADMIN))
    events = {seq: h.store.events(seq) for seq in (1, 2, 3)}
    assert events[1][0][1:] == (
        "submitted",
        {"gpus": 1, "user": "anonymous", "tenant": "team-a", "queue": "qa"},
    )
    assert events[1][-1][1:] == ("cancelled", {"tenant": "team-a"})
    assert events[2][-1][1:] == ("cancelled", {"tenant": "admin"})
    assert events[3][0][2]["tenant"] == "admin" and h.store.get(3).tenant is None  # type: ignore[union-attr]
    assert events[3][-1][1:] == ("cancel_requested", {"tenant": "admin"})
    shown = client.get("/jobs/j1/events", headers=bearer(TEAM_A)).json()
    assert [e["detail"].get("tenant") for e in shown] == ["team-a", "team-a"]


@pytest.mark.parametrize(
    ("text", "mode", "expected"),
    [
        (TOKENS, 0o644, "mode 644; expected 600"),
        (TOKENS.replace("admin_token", "admin"), 0o600, "unknown key 'admin'"),
        (TOKENS.replace(f'admin_token = "{ADMIN}"', ""), 0o600, "admin_token: required"),
        (f'admin_token = "{ADMIN}"\n', 0o600, "tenants: expected at least one"),
        (TOKENS.replace(TEAM_B, TEAM_A), 0o600, "tenants.team-b.token: the same token as"),
        (TOKENS.replace(f'"{TEAM_A}"', '"short"'), 0o600, "tenants.team-a.token: expected a token"),
        (TOKENS.replace('["qa"]', '"qa"'), 0o600, "tenants.team-a.queues: expected a list"),
        (TOKENS.replace('queues = ["qa"]', ""), 0o600, "tenants.team-a.queues: required"),
        (TOKENS.replace('queues = ["qa"]', 'queue = ["qa"]'), 0o600, "team-a.queue: unknown key"),
        ("admin_token = ", 0o600, "not valid TOML"),
    ],
)
def test_bad_token_files_are_refused_naming_file_and_field(
    tmp_path: Path, text: str, mode: int, expected: str
) -> None:
    path = write_tokens(tmp_path / "tokens.toml", text, mode)
    with pytest.raises(TokenFileError, match=r"tokens\.toml: ") as err:
        read_tokens(path)
    assert expected in str(err.value)


def test_serve_refuses_a_bad_token_file_with_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = write_tokens(tmp_path / "tokens.toml", TOKENS, 0o640)
    r = runner.invoke(
        cli, ["serve", "--port", "0", "--db", str(tmp_path / "s.db"), "--tokens", str(bad)]
    )
    assert r.exit_code == 2 and "mode 640" in r.output and "Traceback" not in r.output
    r = runner.invoke(
        cli, ["serve", "--port", "0", "--db", str(tmp_path / "s.db"), "--tokens", "missing.toml"]
    )
    assert r.exit_code == 2 and "missing.toml: cannot read the token file" in r.output
    good = write_tokens(tmp_path / "good.toml")
    r = runner.invoke(
        cli,
        [
            "serve",
            "--port",
            "0",
            "--db",
            str(tmp_path / "s.db"),
            "--tokens",
            str(good),
            "--token-file",
            "t",
        ],
    )
    assert r.exit_code == 2 and "--token-file and --tokens: give one" in r.output
    assert not (tmp_path / "s.db").exists()


def test_a_real_server_answers_tenants_over_http(tmp_path: Path) -> None:
    config = ServiceConfig(
        cluster="1x2",
        backend="fake",
        db=tmp_path / "state.db",
        tokens_file=write_tokens(tmp_path / "tokens.toml"),
        round_s=0.2,
        poll_s=0.05,
    )
    with serving(config) as (url, service), httpx.Client(base_url=url) as http:
        assert http.post("/jobs", json=job("a1"), headers=bearer(TEAM_A)).status_code == 201
        assert http.get("/jobs/j1", headers=bearer(TEAM_B)).status_code == 403
        assert http.delete("/jobs/j1", headers=bearer(TEAM_B)).status_code == 403
        assert http.get("/jobs", headers=bearer("nobody-0123456789abcdef")).status_code == 401
        assert http.get("/jobs", headers=bearer(TEAM_B)).json() == []
        assert [j["id"] for j in http.get("/jobs", headers=bearer(ADMIN)).json()] == ["j1"]
        assert service.store.get(1).tenant == "team-a"  # type: ignore[union-attr]
    assert not config.token_path.exists()  # no single token was made beside the store


def test_a_version_2_store_is_upgraded_with_null_tenants(db_url: str) -> None:
    store = Store(db_url)
    row = store.submit(NewJob("old", "alice", 1, ("true",)), 5.0)
    store.close()
    run_beside(
        db_url,
        [
            ("ALTER TABLE jobs DROP COLUMN tenant", ()),
            ("ALTER TABLE jobs DROP COLUMN queue", ()),
            ("UPDATE meta SET value='2' WHERE key='schema_version'", ()),
        ],
    )
    store = Store(db_url)
    try:
        assert store.schema_version == SCHEMA_VERSION == 4
        old = store.get(row.seq)
        assert old is not None and (old.tenant, old.queue, old.name) == (None, None, "old")
        new = store.submit(NewJob("new", "bob", 1, ("true",), tenant="t", queue="q"), 6.0)
        assert [r.name for r in store.jobs(tenant="t")] == ["new"] and new.queue == "q"
    finally:
        store.close()
