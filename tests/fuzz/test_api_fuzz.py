"""Property-based fuzzing of the live service's API, driven by its own OpenAPI schema.

A real service (SQLite store, fake back end, its control loop running) gets requests generated
from every operation of ``/openapi.json``: path and query parameters of hostile text, bodies
near the schema (values just out of bounds, wrong types, NUL bytes, lone surrogates, unknown
keys), arbitrary JSON and raw bytes, with or without the token, and sometimes a foreign
``Host``. Every answer must be a 4xx or 2xx with a JSON ``detail`` for errors (never a 5xx, never
a traceback); afterwards the control loop must still be alive and schedule a new job, and every
job acknowledged with a 201 must be in the store.

``DLSCHED_FUZZ_EXAMPLES=N`` runs N examples instead of the CI default.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from dlsched.service.server import Service, ServiceConfig
from tests.fuzz.strategies import fuzz, json_values, nasty_text, object_for, value_for

Operation = tuple[str, str, dict[str, Any]]


def operations(schema: dict[str, Any]) -> list[Operation]:
    """(method, path, operation) for every operation of the OpenAPI document."""
    return [
        (method.upper(), path, op)
        for path, item in schema["paths"].items()
        for method, op in item.items()
    ]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Service, TestClient]]:
    root = tmp_path_factory.mktemp("fuzz")
    config = ServiceConfig(
        cluster="2x4", backend="fake", db=root / "state.db", round_s=0.2, poll_s=0.05
    )
    svc = Service(config)
    svc.start()
    client = TestClient(svc.app, base_url="http://localhost", raise_server_exceptions=False)
    try:
        yield svc, client
    finally:
        client.close()
        svc.stop()


job_ids = st.one_of(
    st.sampled_from(["j1", "j2", "j3"]),
    st.from_regex(r"j[0-9]{1,40}", fullmatch=True),
    st.text(st.characters(categories=["Nd"]), min_size=1, max_size=3).map(lambda d: "j" + d),
    nasty_text,
)
"""Job ids: real ones, numbers of any length, other scripts' digits, anything."""

submissions = st.fixed_dictionaries(
    {
        "name": st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,20}", fullmatch=True),
        "gpus": st.integers(1, 8),
        "command": st.lists(
            st.text(st.characters(exclude_characters="\x00"), min_size=1), min_size=1, max_size=4
        ),
    },
    optional={
        "expected_duration_s": st.floats(1, 1e5),
        "user": st.from_regex(r"[a-z]{1,8}", fullmatch=True),
        "batch_size": st.integers(1, 512),
    },
)
"""Submissions the service must accept (when the cluster can hold them)."""


@st.composite
def requests(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    """One request to one operation of ``schema``."""
    ops = operations(schema)
    # Submissions weigh more: they are the requests that change the store.
    method, path, op = draw(st.sampled_from(ops + [o for o in ops if o[0] == "POST"] * 4))
    definitions = schema.get("components", {}).get("schemas", {})
    params: dict[str, Any] = {}
    asked: dict[str, str] = {}
    for p in op.get("parameters", []):
        if p["in"] == "path":
            value = draw(job_ids)
            asked[p["name"]] = value
            text = quote(value.encode("utf-8", "surrogatepass"), safe="")
            path = path.replace("{" + p["name"] + "}", text or "%20")
        elif p["in"] == "query" and draw(st.booleans()):
            params[p["name"]] = draw(value_for(p.get("schema", {}), definitions))
    request: dict[str, Any] = {"method": method, "url": path, "job_id": asked.get("job_id")}
    if params:
        request["url"] += "?" + "&".join(
            f"{quote(str(k))}={quote(str(v).encode('utf-8', 'surrogatepass'))}"
            for k, v in params.items()
        )
    body_ref = (
        op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    )
    if body_ref is not None:
        body = value_for(body_ref, definitions)
        if "$ref" in body_ref:
            body = object_for(definitions[body_ref["$ref"].rsplit("/", 1)[-1]], definitions)
        kind = draw(st.integers(0, 9))
        if kind < 3 and method == "POST":
            request["content"] = json.dumps(draw(submissions)).encode()
        elif kind < 7:
            request["content"] = json.dumps(draw(body), ensure_ascii=draw(st.booleans())).encode(
                "utf-8", "surrogatepass"
            )
        elif kind < 9:
            request["content"] = json.dumps(draw(json_values)).encode("utf-8", "surrogatepass")
        else:
            request["content"] = draw(st.binary(max_size=200))
        request["headers"] = {"content-type": "application/json"}
    return request


def test_no_request_gets_a_5xx_or_loses_an_acknowledged_job(
    service: tuple[Service, TestClient],
) -> None:
    svc, client = service
    fastapi_app = svc.app.app
    assert isinstance(fastapi_app, FastAPI)
    schema = fastapi_app.openapi()
    assert {p for _, p, _ in operations(schema)} >= {"/jobs", "/jobs/{job_id}", "/cluster"}
    auth = {"Authorization": f"Bearer {svc.token}"}
    acknowledged: list[str] = []
    statuses: dict[int, int] = {}

    # One request in twenty comes from a page that rebinds its DNS name to this address.
    foreign_hosts = st.integers(0, 19).map(lambda n: n == 13)

    @fuzz(400)
    @given(request=requests(schema), with_token=st.booleans(), foreign=foreign_hosts)
    def one(request: dict[str, Any], with_token: bool, foreign: bool) -> None:
        headers = dict(request.pop("headers", {}))
        job_id = request.pop("job_id")
        if with_token:
            headers.update(auth)
        if foreign:
            headers["host"] = "rebind.example"
        r = client.request(headers=headers, **request)
        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
        assert r.status_code < 500, (request, r.status_code, r.text[:500])
        assert "Traceback" not in r.text
        if r.status_code >= 400 and request["method"] != "HEAD":
            assert isinstance(r.json().get("detail"), str | list), r.text[:500]
        if foreign:
            assert r.status_code == 421
        if r.status_code == 201:
            acknowledged.append(r.json()["id"])
        if job_id is not None and r.status_code in (200, 202) and request["method"] != "HEAD":
            body = r.json()
            # The job answered is the job asked for (never another one the id resembles).
            assert isinstance(body, list) or body["id"] == job_id, (job_id, body)

    one()
    print(f"API fuzz: {sum(statuses.values())} requests, statuses {sorted(statuses.items())}")
    assert acknowledged, "no request was a valid submission: the generator is broken"
    stored = {row.id for row in svc.store.jobs()}
    assert set(acknowledged) <= stored
    assert svc.loop.alive and svc.loop.error is None
    # The loop still schedules: cancel what the fuzzing left active, then run one more job.
    for row in svc.store.active():
        assert client.delete(f"/jobs/{row.id}", headers=auth).status_code in (202, 409)
    r = client.post(
        "/jobs",
        json={"name": "after-fuzz", "gpus": 1, "command": ["sleep", "0.1"]},
        headers=auth,
    )
    assert r.status_code == 201, r.text
    job = r.json()["id"]
    deadline = time.monotonic() + 30
    while client.get(f"/jobs/{job}").json()["state"] != "COMPLETED":
        assert time.monotonic() < deadline, client.get(f"/jobs/{job}").json()
        time.sleep(0.05)
    assert svc.loop.error is None


def test_openapi_document_is_served(service: tuple[Service, TestClient]) -> None:
    _, client = service
    doc = client.get("/openapi.json").json()
    assert "/jobs" in doc["paths"] and Path(doc["info"]["title"]).name
