"""The dashboard in a real headless Chromium, against the real service (fake back end).

Needs the system Chromium (``apt-get install -y chromium``) and the ``playwright`` package
(never ``playwright install``: the test drives the system browser).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.workloads.browser import MARKS, dashboard_page, launch, sync_api
from tests.workloads.service_helpers import Service, running_service

pytestmark = MARKS


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    with running_service(tmp_path, backend="fake", cluster="2x4", policy="fifo") as svc:
        yield svc


def _duration(seconds: float) -> str:
    """The dashboard's duration format (app.js ``duration``)."""
    s = max(0, math.floor(seconds + 0.5))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {(s % 3600) // 60:02d}m"


def _rows(page: Any, table: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = page.eval_on_selector_all(
        f"#{table} tbody tr[data-job-id]",
        "rows => rows.map(r => ({id: r.dataset.jobId, state: r.dataset.state,"
        " cells: [...r.cells].map(c => c.textContent.trim())}))",
    )
    return rows


def test_dashboard_shows_what_the_api_reports(service: Service, tmp_path: Path) -> None:
    short = [service.submit("warmup-a", 1, 0.5), service.submit("warmup-b", 2, 1.0)]
    service.wait(lambda js: all(j["state"] == "COMPLETED" for j in js if j["id"] in short))
    running = [service.submit(n, g, 900) for n, g in (("big", 4), ("mid", 2), ("one", 1))]
    running.append(service.submit("two", 1, 900))
    waiting = [service.submit(n, g, 60) for n, g in (("wait-4", 4), ("wait-1", 1))]
    waiting.append(service.submit("wait-2", 2, 60))
    cancelled = service.submit("cancel-me", 1, 60)
    service.send("DELETE", f"/jobs/{cancelled}")
    service.wait(
        lambda js: (
            all(
                j["state"] == ("RUNNING" if j["id"] in running else "PENDING")
                for j in js
                if j["id"] in running + waiting
            )
            and any(j["id"] == cancelled and j["state"] == "CANCELLED" for j in js)
        )
    )

    with sync_api.sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(60_000)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(service.url + "/?refresh=500")
            page.wait_for_function("Number(document.body.dataset.loaded || 0) >= 2")
            jobs = {j["id"]: j for j in service.get("/jobs")}
            cluster = service.get("/cluster")
            metrics = service.get("/metrics")
            page.wait_for_function("Number(document.body.dataset.loaded || 0) >= 3")
            page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)

            # Cluster map: every GPU shows the job the API says holds it.
            cells = page.eval_on_selector_all(
                ".gpu", "cs => cs.map(c => [c.dataset.node, +c.dataset.gpu, c.dataset.jobId])"
            )
            expected = [
                [n["name"], g["index"], g["job_id"] or ""]
                for n in cluster["nodes"]
                for g in n["gpus"]
            ]
            assert cells == expected
            assert sum(1 for c in cells if c[2]) == 8
            assert page.text_content("#policy") == f"policy: {cluster['policy']}"

            # Running jobs with their GPUs and placement.
            shown = {r["id"]: r["cells"] for r in _rows(page, "running")}
            assert set(shown) == set(running)
            for job_id, cells_ in shown.items():
                job = jobs[job_id]
                assert cells_[1:4] == [job["name"], job["user"], str(job["gpus"])]
                for node, gpus in job["gpu_ids"].items():
                    assert f"{node}[{','.join(map(str, gpus))}]" in cells_[4]

            # The queue in priority order, with the API's priorities.
            queue = _rows(page, "queue")
            pending = sorted((jobs[j] for j in waiting), key=lambda j: j["priority"])
            assert [r["id"] for r in queue] == [j["id"] for j in pending]
            assert [r["cells"][0] for r in queue] == [str(j["priority"]) for j in pending]

            # Finished jobs with their JCT (end - submit).
            finished = {r["id"]: r["cells"] for r in _rows(page, "finished")}
            assert set(finished) == {*short, cancelled}
            for job_id in short:
                job = jobs[job_id]
                assert finished[job_id][3] == "COMPLETED"
                assert finished[job_id][5] == _duration(job["end_time"] - job["submit_time"])
            assert finished[cancelled][3] == "CANCELLED"

            # Counts by state and both charts.
            counts = dict(
                page.eval_on_selector_all(
                    ".count",
                    "cs => cs.map(c => [c.dataset.state, +c.querySelector('.n').textContent])",
                )
            )
            assert {s: n for s, n in counts.items() if n} == {
                s: n for s, n in metrics["counts"].items() if n
            }
            for chart in ("#chart-utilization", "#chart-queue"):
                assert int(page.get_attribute(f"{chart} svg", "data-points") or 0) > 0
                assert page.locator(f"{chart} path.line").count() == 1
            assert errors == []
            assert not page.is_visible("#queues-section")  # no --queues, no queue panel

            # It refreshes itself: a job cancelled now moves from the queue to the finished.
            gone = waiting[-1]
            service.send("DELETE", f"/jobs/{gone}")
            page.wait_for_selector(f'#finished tr[data-job-id="{gone}"]')
            assert page.locator(f'#queue tr[data-job-id="{gone}"]').count() == 0

            # The page notices when the service goes away, and says so.
            service.stop()
            page.wait_for_function(
                "document.getElementById('updated').textContent.includes('cannot reach')"
            )
        finally:
            browser.close()
    assert (tmp_path / "dashboard.png").stat().st_size > 10_000


def test_dashboard_shows_queue_usage_against_quota(tmp_path: Path) -> None:
    from tests.tenancy.kueue_manifests import documents, write

    manifests = write(
        tmp_path / "queues.yaml",
        documents({"a": {"gpu": 2, "cohort": "pool"}, "b": {"gpu": 4, "cohort": "pool"}}),
    )
    with running_service(tmp_path, "fake", "2x4", "fifo", "--queues", str(manifests)) as service:
        for name in ("a1", "a2"):
            body = {"name": name, "gpus": 2, "command": ["sleep", "900"], "queue": "a"}
            body["expected_duration_s"] = 900
            service.send("POST", "/jobs", body)
        service.wait(lambda js: [j["state"] for j in js] == ["RUNNING", "RUNNING"])
        with dashboard_page(service.url + "/?refresh=500") as page:
            page.wait_for_selector('#queues tr[data-queue="a"]')
            page.wait_for_function(
                "document.querySelector('#queues tr[data-queue=\"a\"]').dataset.borrowing"
                " === 'true'"
            )
            rows = page.eval_on_selector_all(
                "#queues tbody tr",
                "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))",
            )
            assert page.is_visible("#queues-section")

    queues = {r[0]: r for r in rows}
    # a uses 4 GPUs on a nominal quota of 2, borrowing 2 from b's idle quota.
    assert queues["a"] == ["a", "pool", "4 / 2", "100%", "2", "0"]
    assert queues["b"] == ["b", "pool", "0 / 4", "0%", "0", "0"]


def test_dashboard_asks_a_tenant_for_its_token_and_lists_only_its_jobs(tmp_path: Path) -> None:
    from dlsched.testing.live_run import LiveService
    from tests.service.test_tenants import ADMIN, TEAM_A, TEAM_B, write_tokens
    from tests.tenancy.kueue_manifests import documents, write

    manifests = write(
        tmp_path / "queues.yaml",
        documents({"qa": {"gpu": 4}, "qb": {"gpu": 4}, "qb-low": {"gpu": 4}}),
    )
    tokens = write_tokens(tmp_path / "tokens.toml")
    args = ["--backend", "fake", "--cluster", "2x4", "--policy", "fifo", "--round", "0.5"]
    args += ["--queues", str(manifests), "--tokens", str(tokens)]
    with LiveService(tmp_path, args, token=ADMIN) as live:
        mine = live.call("POST", "/jobs", _sleeper("mine", "qa"), token=TEAM_A)["id"]
        theirs = live.call("POST", "/jobs", _sleeper("theirs", "qb"), token=TEAM_B)["id"]
        with dashboard_page(live.url + "/?refresh=500") as page:
            page.wait_for_selector("#token-form", state="visible")
            asked = page.text_content("#token-note") or ""
            page.fill("#token", "not-a-token-0123456789")
            page.click("#token-form button")
            page.wait_for_function(
                "document.getElementById('token-note').textContent.includes('did not accept')"
            )
            # The refreshes that follow (without a token) leave the rejection on show.
            loaded = int(page.evaluate("Number(document.body.dataset.loaded)"))
            page.wait_for_function(f"Number(document.body.dataset.loaded) >= {loaded + 2}")
            rejected = page.text_content("#token-note") or ""
            # A refresh sent without a token is still out when the tenant enters its token:
            # its late 401 must not throw the new token away.
            page.evaluate(_HOLD_TOKENLESS_JOBS)
            page.wait_for_function("window.heldJobs.length > 0")
            page.fill("#token", TEAM_A)
            page.click("#token-form button")
            page.wait_for_selector(f'tr[data-job-id="{mine}"]')
            loaded = int(page.evaluate("Number(document.body.dataset.loaded)"))
            page.evaluate("window.releaseJobs()")
            page.wait_for_function(f"Number(document.body.dataset.loaded) >= {loaded + 2}")
            shown = page.eval_on_selector_all(
                "tr[data-job-id]", "rows => rows.map(r => r.dataset.jobId)"
            )
            assert not page.is_visible("#token-form")

    assert "token" in asked
    assert "did not accept" in rejected
    assert mine in shown and theirs not in shown


# Holds the page's requests for /jobs sent without a token until releaseJobs() sends them.
_HOLD_TOKENLESS_JOBS = """() => {
  const send = window.fetch.bind(window);
  window.heldJobs = [];
  window.fetch = (path, options) => {
    if (path !== "jobs" || options.headers.Authorization || window.heldJobs === null) {
      return send(path, options);
    }
    return new Promise((resolve) => window.heldJobs.push(() => send(path, options).then(resolve)));
  };
  window.releaseJobs = () => {
    const held = window.heldJobs;
    window.heldJobs = null;
    held.forEach((go) => go());
  };
}"""


def _sleeper(name: str, queue: str) -> dict[str, Any]:
    return {"name": name, "gpus": 1, "command": ["sleep", "900"], "queue": queue}
