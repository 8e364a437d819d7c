"""The REST API (FastAPI): jobs, cluster, metrics; the dashboard's static files at ``/``.

Endpoints (JSON; OpenAPI at ``/openapi.json``, rendered offline at ``/docs/``):
``GET /jobs?state=&user=``, ``GET /jobs/{id}``, ``GET /jobs/{id}/events``, ``POST /jobs`` (201),
``DELETE /jobs/{id}`` (202; 409 if already finished), ``GET /cluster``, ``GET /metrics`` (with
``--queues`` also each ClusterQueue's GPU quota, use and borrowing under ``queues``); every
``GET`` answers ``HEAD`` too.
Mutations need ``Authorization: Bearer <token>`` (see :mod:`dlsched.service.api.guard`). With
tenants (:mod:`dlsched.service.api.tenants`) every ``/jobs`` request needs a token; a tenant
lists only its own jobs, and reading, cancelling another tenant's job or submitting to a queue
not its own is a 403 (nothing is changed). A bad body
is a 422 whose ``detail`` names each bad field; a job that could never fit the cluster is a 422
saying why, and nothing is stored. A job id is ``j`` and its number in ASCII digits (no leading
zero); anything else is 404. When the store cannot take a write the answer is 507 (its disk is
full) or 503 (deleted, replaced, read-only or unreachable), with the reason in ``detail``, and
nothing was stored: a 201 means the job is in the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles

from dlsched.service.api.guard import DEFAULT_ALLOWED_HOSTS, DEFAULT_MAX_BODY, PRINCIPAL, Guard
from dlsched.service.api.models import NAME_PATTERN, JobSubmission
from dlsched.service.api.tenants import ADMIN, Principal, Tokens
from dlsched.service.control.controller import Controller
from dlsched.service.store.database import Store, StoreError, StoreFullError
from dlsched.service.store.records import FINAL, HOLDING, PENDING, STATES, JobRow, seq_of

DASHBOARD_DIR = Path(__file__).parent / "dashboard"


@dataclass(frozen=True)
class ServiceContext:
    """What the API needs: the store, the controller (admission, ranks, metrics), a way to
    wake the control loop, the clock and the token; ``tokens``, for a service with tenants,
    replaces the single ``token``."""

    store: Store
    controller: Controller
    poke: Callable[[], None]
    clock: Callable[[], float]
    token: str
    policy: str
    tokens: Tokens | None = None

    @property
    def accepted(self) -> Tokens:
        """The tokens the API accepts."""
        return self.tokens if self.tokens is not None else Tokens.single(self.token)


def sender(request: Request) -> Principal:
    """The request's sender; the admin for a token-less read of a service without tenants
    (the guard refuses such reads when there are tenants)."""
    found = request.scope.get(PRINCIPAL)
    return found if isinstance(found, Principal) else ADMIN


def queue_for(principal: Principal, queue: str | None, tenanted: bool, queued: bool) -> str | None:
    """The queue a submission by ``principal`` goes to, on a service with tenants
    (``tenanted``) and/or Kueue queues (``queued``); HTTPException 403 for a queue not the
    tenant's, 422 when it names none and needs one (queues, or a tenant with several), or names
    one on a service with neither (which could not honour it)."""
    if not (tenanted or queued):
        if queue is not None:
            raise HTTPException(422, "queue: this service has no queues (dlsched serve --queues)")
        return None
    if not principal.admin:
        if queue is None and len(principal.queues) == 1:
            queue = next(iter(principal.queues))
        elif queue is None:
            raise HTTPException(
                422,
                f"queue: required; tenant {principal.tenant} may submit to "
                + (", ".join(sorted(principal.queues)) or "no queue"),
            )
        elif queue not in principal.queues:
            raise HTTPException(403, f"tenant {principal.tenant} may not submit to queue {queue}")
    if queue is None and queued:
        raise HTTPException(422, "queue: required (this service admits jobs through its queues)")
    return queue


def _field(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path")]
    return ".".join(parts) or "body"


def create_app(
    ctx: ServiceContext,
    dashboard: Path | None = DASHBOARD_DIR,
    max_body: int = DEFAULT_MAX_BODY,
    allowed_hosts: tuple[str, ...] = DEFAULT_ALLOWED_HOSTS,
) -> Guard:
    """The ASGI application: the FastAPI app behind the :class:`Guard` (which answers only
    requests whose ``Host`` is one of ``allowed_hosts``)."""
    app = FastAPI(
        title="dlsched service",
        description="Submit, list and cancel deep-learning jobs; cluster state and metrics.",
        version="1",
        # Served by the dashboard's own docs/ page instead: FastAPI's pages load their
        # scripts from a CDN, which leaves them blank on a machine without internet.
        docs_url=None,
        redoc_url=None,
    )
    store, controller = ctx.store, ctx.controller

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"field": _field(tuple(e.get("loc", ()))), "message": str(e.get("msg", ""))}
            for e in exc.errors()
        ]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return JSONResponse({"detail": detail, "errors": errors}, status_code=422)

    @app.exception_handler(StoreError)
    async def store_failed(_: Request, exc: StoreError) -> JSONResponse:
        status = 507 if isinstance(exc, StoreFullError) else 503
        return JSONResponse({"detail": f"{exc}; nothing was changed"}, status_code=status)

    def get(path: str, summary: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """``GET path``, answered for ``HEAD`` too (the server sends no body for a HEAD)."""

        def register(endpoint: Callable[..., Any]) -> Callable[..., Any]:
            app.head(path, include_in_schema=False)(endpoint)
            return app.get(path, summary=summary)(endpoint)

        return register

    def find(job_id: str, request: Request) -> JobRow:
        seq = seq_of(job_id)
        row = store.get(seq) if seq is not None else None
        if row is None:
            raise HTTPException(404, f"no job {job_id[:64]!a}")
        if not sender(request).may_see(row.tenant):
            raise HTTPException(403, f"job {row.id} belongs to another tenant")
        return row

    def record(
        row: JobRow,
        ranks: dict[int, int] | None = None,
        live: dict[int, tuple[float | None, float | None]] | None = None,
    ) -> dict[str, Any]:
        out = row.to_api((ranks or {}).get(row.seq) if row.state == PENDING else None)
        if row.state in HOLDING:
            reported = (live if live is not None else controller.live_progress()).get(row.seq)
            if reported is not None:
                out["progress"], out["samples_per_s"] = reported
        return out

    @get("/jobs", "List jobs, optionally by state and user")
    def list_jobs(
        request: Request,
        state: str | None = Query(None, description="one of " + ", ".join(STATES)),
        user: str | None = Query(None, max_length=64, pattern=NAME_PATTERN),
    ) -> list[dict[str, Any]]:
        if state is not None and state.upper() not in STATES:
            raise HTTPException(422, f"state: expected one of {', '.join(STATES)}; got {state!r}")
        principal = sender(request)
        rows = store.jobs(state.upper() if state else None, user, principal.tenant)
        ranks = controller.queue_ranks() if any(r.state == PENDING for r in rows) else {}
        live = controller.live_progress()
        return [record(r, ranks, live) for r in rows]

    @get("/jobs/{job_id}", "One job")
    def get_job(job_id: str, request: Request) -> dict[str, Any]:
        row = find(job_id, request)
        return record(row, controller.queue_ranks() if row.state == PENDING else None)

    @get("/jobs/{job_id}/events", "A job's event log")
    def job_events(job_id: str, request: Request) -> list[dict[str, Any]]:
        row = find(job_id, request)
        return [{"time": t, "kind": k, "detail": d} for t, k, d in store.events(row.seq)]

    @app.post("/jobs", status_code=201, summary="Submit a job")
    def submit(body: JobSubmission, request: Request) -> dict[str, Any]:
        principal = sender(request)
        queued = controller.admission is not None
        queue = queue_for(principal, body.queue, ctx.accepted.tenanted, queued)
        elastic = body.elastic_spec()
        reason = controller.submission_problem(body.gpus, elastic)
        if reason is not None:
            raise HTTPException(422, reason)
        row = store.submit(
            body.to_new_job(principal.tenant, queue), ctx.clock(), by=principal.label
        )
        controller.submitted(row.seq, elastic)
        ctx.poke()
        return record(row)

    @app.post("/jobs/dry-run", summary="Would a job be admitted now? (submits nothing)")
    def dry_run(body: JobSubmission, request: Request) -> dict[str, Any]:
        """Kueue's ``kueuectl simulate`` question for a service with ``--queues``: would this
        job be admitted now, were it its queue's head; if not, why (quota); which admitted
        jobs it would preempt, with Kueue's reasons. Nothing is stored or changed."""
        if controller.admission is None:
            raise HTTPException(
                409,
                "a dry run needs a service with --queues (without, every job goes to the policy)",
            )
        principal = sender(request)
        queue = queue_for(principal, body.queue, ctx.accepted.tenanted, True)
        reason = controller.submission_problem(body.gpus, body.elastic_spec())
        if reason is not None:
            raise HTTPException(422, reason)
        assert queue is not None
        return controller.admission.dry_run(queue, controller.demand(body.gpus))

    @app.delete("/jobs/{job_id}", status_code=202, summary="Cancel a job")
    def cancel(job_id: str, request: Request) -> dict[str, Any]:
        row = find(job_id, request)
        if row.state in FINAL:
            raise HTTPException(409, f"job {job_id} already {row.state}")
        updated = store.request_cancel(row.seq, ctx.clock(), by=sender(request).label)
        assert updated is not None
        ctx.poke()
        return record(updated)

    @get("/cluster", "Nodes, GPUs and the job holding each GPU")
    def cluster() -> dict[str, Any]:
        holder: dict[tuple[str, int], str] = {}
        for row in store.holding():
            if row.owner != controller.service_id:
                continue  # runs on another service's cluster (one store, several services)
            for node, gpus in (row.gpu_ids or {}).items():
                for g in gpus:
                    holder[(node, g)] = row.id
        down = controller.down_nodes()
        return {
            "policy": ctx.policy,
            "nodes": [
                {
                    "name": n.name,
                    "gpu_type": n.gpu_type,
                    "gpus": [
                        {"index": g, "job_id": holder.get((n.name, g))} for g in range(n.gpus)
                    ],
                    "up": n.name not in down,
                }
                for n in controller.cluster.nodes
            ],
        }

    @get("/metrics", "Job counts, utilization and queue series, cycle times")
    def metrics(format: Literal["json", "prometheus"] = "json") -> Any:
        """JSON by default; ``?format=prometheus``: Kueue's metrics by Kueue's names (with
        ``--queues``; 404 without), as a Prometheus scrape reads them."""
        if format == "prometheus":
            if controller.admission is None:
                raise HTTPException(404, "no Kueue metrics: this service runs without --queues")
            return PlainTextResponse(
                controller.admission.kueue_metrics(), media_type="text/plain; version=0.0.4"
            )
        out: dict[str, Any] = {"counts": store.counts()}
        out.update(controller.metrics.snapshot())
        if controller.admission is not None:
            out["queues"] = controller.admission.usage()
        return out

    if dashboard is not None and dashboard.is_dir():
        app.mount("/", StaticFiles(directory=dashboard, html=True), name="dashboard")
    return Guard(app, ctx.accepted, max_body, allowed_hosts)
