"""``dlsched serve --queues``: jobs are admitted against their ClusterQueue's quota (the tenancy
admission stage) before the policy sees them; fake back end, real store and controller."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dlsched.backends.fake import FakeBackend
from dlsched.cluster.parse import resolve_cluster
from dlsched.policy.registry import create_policy
from dlsched.service.api.app import ServiceContext, create_app
from dlsched.service.control.controller import Controller
from dlsched.service.control.elastic_setup import build_controller
from dlsched.service.control.live_admission import LiveAdmission
from dlsched.service.store.database import Store
from dlsched.service.store.records import NewJob
from tests.service.helpers import Clock
from tests.tenancy.kueue_manifests import documents, write

DURATION_S = 100.0


class Live:
    """A controller with admission over a real store and the fake back end, on 2x4."""

    def __init__(self, tmp: Path, queues: dict[str, dict[str, Any]], policy: str = "fifo"):
        self.clock = Clock()
        self.store = Store(tmp / "state.db")
        self.backend = FakeBackend(self.clock)
        self.manifests = write(tmp / "queues.yaml", documents(queues))
        self.ctl = self.controller(policy)

    def controller(self, policy: str = "fifo") -> Controller:
        """A new controller on this store and back end (a service started again)."""
        cluster = resolve_cluster("2x4")
        return Controller(
            self.store,
            self.backend,
            cluster,
            create_policy(policy),
            clock=self.clock,
            admission=LiveAdmission(str(self.manifests), cluster),
        )

    def submit(self, name: str, queue: str | None, gpus: int = 2) -> int:
        job = NewJob(name, "u", gpus, ("sleep", "1"), None, DURATION_S, queue=queue)
        return self.store.submit(job, self.clock()).seq

    def states(self) -> dict[str, str]:
        return {r.name: r.state for r in self.store.jobs()}

    def usage(self) -> dict[str, tuple[float, float, float, int]]:
        assert self.ctl.admission is not None
        return {
            q["name"]: (q["nominal_gpus"], q["used_gpus"], q["borrowed_gpus"], q["waiting"])
            for q in self.ctl.admission.usage()
        }


def test_a_queue_over_its_quota_waits_while_another_queue_runs(tmp_path: Path) -> None:
    live = Live(tmp_path, {"a": {"gpu": 2}, "b": {"gpu": 4}})
    live.submit("a1", "a")
    live.submit("a2", "a")
    live.submit("b1", "b")
    live.ctl.step()
    # 8 GPUs, 4 in use: a2 fits the cluster but not queue a's quota of 2.
    assert live.states() == {"a1": "RUNNING", "a2": "PENDING", "b1": "RUNNING"}
    assert live.usage() == {"a": (2.0, 2.0, 0.0, 1), "b": (4.0, 2.0, 0.0, 0)}
    assert live.ctl.queue_ranks() == {}  # a2 is not yet its policy's
    live.clock.now += DURATION_S + 1
    live.ctl.step()  # a1 and b1 finish: a2 is admitted and starts
    live.ctl.step()
    assert live.states() == {"a1": "COMPLETED", "a2": "RUNNING", "b1": "COMPLETED"}
    assert live.usage()["a"] == (2.0, 2.0, 0.0, 0)


def test_a_queue_borrows_idle_quota_of_its_cohort_and_gives_it_back(tmp_path: Path) -> None:
    live = Live(
        tmp_path,
        {"a": {"gpu": 2, "cohort": "pool"}, "b": {"gpu": 4, "cohort": "pool", "reclaim": "Any"}},
    )
    live.submit("a1", "a")
    live.submit("a2", "a")
    live.ctl.step()
    assert live.states() == {"a1": "RUNNING", "a2": "RUNNING"}
    assert live.usage()["a"] == (2.0, 4.0, 2.0, 0)
    # b reclaims its lent quota: the borrowing job of a is stopped, and b1 is admitted once
    # it has stopped (Kueue admits a preemptor after its victims terminated); the stopped
    # job waits for admission again.
    live.submit("b1", "b", gpus=4)
    live.ctl.step()
    states = live.states()
    assert states["b1"] == "PENDING" and sorted([states["a1"], states["a2"]]) == [
        "PREEMPTING",
        "RUNNING",
    ]
    for _ in range(3):
        live.ctl.step()
    states = live.states()
    assert states["b1"] == "RUNNING" and sorted([states["a1"], states["a2"]]) == [
        "PENDING",
        "RUNNING",
    ]
    assert live.usage() == {"a": (2.0, 2.0, 0.0, 1), "b": (4.0, 4.0, 0.0, 0)}


def test_cancelling_a_job_waiting_for_admission_frees_its_place(tmp_path: Path) -> None:
    live = Live(tmp_path, {"a": {"gpu": 2}})
    live.submit("a1", "a")
    seq = live.submit("a2", "a")
    live.ctl.step()
    live.store.request_cancel(seq, live.clock())
    live.ctl.step()
    assert live.states() == {"a1": "RUNNING", "a2": "CANCELLED"}
    assert live.usage()["a"] == (2.0, 2.0, 0.0, 0)


def test_a_job_that_no_queue_can_admit_fails_with_the_reason(tmp_path: Path) -> None:
    live = Live(tmp_path, {"a": {"gpu": 2}})
    live.submit("big", "a", gpus=4)
    live.submit("lost", "nope")
    live.submit("none", None)
    live.ctl.step()
    live.ctl.step()
    rows = {r.name: r for r in live.store.jobs()}
    assert {n: r.state for n, r in rows.items()} == dict.fromkeys(["big", "lost", "none"], "FAILED")
    assert "more than ClusterQueue 'a' can ever get" in (rows["big"].reason or "")
    assert "no LocalQueue 'nope'" in (rows["lost"].reason or "")
    assert "names no queue" in (rows["none"].reason or "")


def test_a_restarted_service_charges_running_jobs_to_their_queue(tmp_path: Path) -> None:
    live = Live(tmp_path, {"a": {"gpu": 2}})
    live.submit("a1", "a")
    live.ctl.step()
    live.ctl = live.controller()
    live.ctl.recover()
    live.submit("a2", "a")
    live.ctl.step()
    assert live.states() == {"a1": "RUNNING", "a2": "PENDING"}
    assert live.usage()["a"] == (2.0, 2.0, 0.0, 1)


def test_the_api_requires_a_queue_and_shows_queue_usage(tmp_path: Path) -> None:
    live = Live(tmp_path, {"a": {"gpu": 2, "cohort": "pool"}, "b": {"gpu": 4, "cohort": "pool"}})
    ctx = ServiceContext(live.store, live.ctl, lambda: None, live.clock, "t" * 32, "fifo")
    auth = {"Authorization": "Bearer " + "t" * 32}
    body = {"name": "x", "gpus": 4, "command": ["true"], "expected_duration_s": DURATION_S}
    with TestClient(create_app(ctx, None), base_url="http://localhost") as client:
        r = client.post("/jobs", json=body, headers=auth)
        assert r.status_code == 422 and "queue: required" in r.json()["detail"]
        r = client.post("/jobs", json={**body, "queue": "a"}, headers=auth)
        assert r.status_code == 201 and r.json()["queue"] == "a"
        live.ctl.step()
        queues = {q["name"]: q for q in client.get("/metrics").json()["queues"]}
    assert queues["a"] == {
        "name": "a",
        "cohort": "pool",
        "nominal_gpus": 2.0,
        "used_gpus": 4.0,
        "borrowed_gpus": 2.0,
        "waiting": 0,
    }
    assert queues["b"]["used_gpus"] == 0.0
    live.store.close()


def test_the_api_serves_kueue_metrics_by_kueues_names(tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    live = Live(tmp_path, {"a": {"gpu": 2, "cohort": "pool"}, "b": {"gpu": 4, "cohort": "pool"}})
    ctx = ServiceContext(live.store, live.ctl, lambda: None, live.clock, "t" * 32, "fifo")
    auth = {"Authorization": "Bearer " + "t" * 32}
    body = {"name": "x", "gpus": 4, "command": ["true"], "expected_duration_s": DURATION_S}
    with TestClient(create_app(ctx, None), base_url="http://localhost") as client:
        assert client.post("/jobs", json={**body, "queue": "a"}, headers=auth).status_code == 201
        live.ctl.step()
        r = client.get("/metrics", params={"format": "prometheus"}, headers=auth)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        assert client.get("/metrics", params={"format": "xml"}, headers=auth).status_code == 422
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }
    usage = ("cluster_queue", "a"), ("cohort", "pool"), ("flavor", "default-flavor")
    key = tuple(sorted((*usage, ("resource", "nvidia.com/gpu"))))
    # a's job holds 4 GPUs: 2 nominal, 2 borrowed from b.
    assert samples[("kueue_cluster_queue_resource_usage", key)] == 4.0
    assert samples[("kueue_admitted_active_workloads", (("cluster_queue", "a"),))] == 1
    assert samples[("kueue_admitted_workloads_total", (("cluster_queue", "a"),))] == 1
    live.store.close()


def test_queues_are_refused_with_an_elastic_policy(tmp_path: Path) -> None:
    live = Live(tmp_path, {"a": {"gpu": 2}})
    from dlsched.elastic.registry import create_elastic_policy

    with pytest.raises(ValueError, match="--queues: policy 'pollux' allocates GPUs"):
        build_controller(
            create_elastic_policy("pollux", {}),
            live.store,
            live.backend,
            resolve_cluster("2x4"),
            placement="pollux",
            admission=live.ctl.admission,
        )


def test_serve_refuses_bad_queues_with_exit_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dlsched.cli.main import app
    from tests.service.test_tenants import write_tokens

    runner = CliRunner()
    db = str(tmp_path / "s.db")
    r = runner.invoke(app, ["serve", "--port", "0", "--db", db, "--queues", "missing.yaml"])
    assert r.exit_code == 2 and "missing.yaml" in r.output and "Traceback" not in r.output
    manifests = write(tmp_path / "queues.yaml", documents({"qa": {"gpu": 2}}))
    tokens = write_tokens(tmp_path / "tokens.toml")  # team-b's queues are not in the manifests
    r = runner.invoke(
        app,
        ["serve", "--port", "0", "--db", db, "--queues", str(manifests), "--tokens", str(tokens)],
    )
    assert r.exit_code == 2 and "tenants.team-b.queues: 'qb' is no LocalQueue" in r.output
    assert not (tmp_path / "s.db").exists()


def test_dlsched_submit_queue_against_a_real_server(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dlsched.cli.main import app
    from dlsched.service.server import ServiceConfig
    from tests.service.helpers import serving

    manifests = write(tmp_path / "queues.yaml", documents({"a": {"gpu": 2}}))
    config = ServiceConfig(
        backend="fake", db=tmp_path / "state.db", queues=str(manifests), round_s=0.2, poll_s=0.05
    )
    runner = CliRunner()
    with serving(config) as (url, service):
        opts = ["--url", url, "--token-file", str(config.token_path)]
        for name in ("a1", "a2"):
            r = runner.invoke(
                app,
                [
                    "submit",
                    "--gpus",
                    "2",
                    "--name",
                    name,
                    "--queue",
                    "a",
                    "--expected-duration",
                    "900",
                    *opts,
                    "--",
                    "x",
                ],
            )
            assert r.exit_code == 0, r.output
        r = runner.invoke(app, ["submit", "--gpus", "2", *opts, "--", "x"])
        assert r.exit_code != 0 and "queue: required" in r.output
        deadline = time.monotonic() + 30
        while service.store.get(1).state != "RUNNING" and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.05)
        rows = {row.name: row for row in service.store.jobs()}
    assert {n: (r.state, r.queue) for n, r in rows.items()} == {
        "a1": ("RUNNING", "a"),
        "a2": ("PENDING", "a"),
    }


def test_a_dry_run_answers_without_changing_anything(tmp_path: Path) -> None:
    queues = {
        "a": {"gpu": 4, "cohort": "pool", "reclaim": "Any"},
        "b": {"gpu": 4, "cohort": "pool", "reclaim": "Any"},
    }
    live = Live(tmp_path, queues)
    ctx = ServiceContext(live.store, live.ctl, lambda: None, live.clock, "t" * 32, "fifo")
    auth = {"Authorization": "Bearer " + "t" * 32}
    body = {"name": "x", "command": ["true"], "expected_duration_s": DURATION_S}
    with TestClient(create_app(ctx, None), base_url="http://localhost") as client:
        # a's job borrows b's whole quota: the cluster (2x4) is full.
        r = client.post("/jobs", json={**body, "gpus": 8, "queue": "a"}, headers=auth)
        assert r.status_code == 201
        live.ctl.step()
        before = (live.states(), live.usage())
        answer = client.post(
            "/jobs/dry-run", json={**body, "gpus": 4, "queue": "b"}, headers=auth
        ).json()
        # b takes back its nominal quota from the borrower.
        assert answer["admitted"] is True and answer["cluster_queue"] == "b"
        assert answer["preempts"] == [{"job_id": "j1", "reason": "InCohortReclamation"}]
        assert answer["flavors"] == ["default-flavor"] and answer["borrows"] is False
        # Beyond its nominal quota b looks for no preemption (no borrowWithinCohort).
        more = client.post("/jobs/dry-run", json={**body, "gpus": 6, "queue": "b"}, headers=auth)
        assert more.json()["admitted"] is False and "quota" in more.json()["reason"]
        lost = client.post("/jobs/dry-run", json={**body, "gpus": 1, "queue": "c"}, headers=auth)
        assert lost.json() == {"admitted": False, "reason": lost.json()["reason"]}
        assert "no LocalQueue 'c'" in lost.json()["reason"]
        assert (
            client.post("/jobs/dry-run", json={**body, "gpus": 1}, headers=auth).status_code == 422
        )
        assert (live.states(), live.usage()) == before
        assert [r.name for r in live.store.jobs()] == ["x"]
    live.store.close()


def test_submit_dry_run_prints_the_answer() -> None:
    from dlsched.cli.service_cmd import _dry_run_text

    admitted = {
        "cluster_queue": "b",
        "admitted": True,
        "flavors": ["default-flavor"],
        "borrows": False,
        "preempts": [{"job_id": "j1", "reason": "InCohortReclamation"}],
        "reason": None,
        "waiting_ahead": 2,
    }
    assert _dry_run_text(admitted).splitlines() == [
        "would be admitted in ClusterQueue b on default-flavor",
        "  preempting j1 (InCohortReclamation)",
        "  (were it first: 2 waiting jobs of its queue come before it)",
    ]
    refused = {"admitted": False, "reason": "queue c: no LocalQueue 'c'"}
    assert _dry_run_text(refused) == "would wait: queue c: no LocalQueue 'c'"
