"""``dlsched serve | submit | jobs | cancel``: run the live service and talk to it.

The service needs the ``service`` extra (``pip install 'dlsched[service]'``); ``serve`` checks
for it first and imports it only when run, so the rest of the CLI works without it. The client
commands (``submit``, ``jobs``, ``cancel``) need only the core: their client
(:mod:`dlsched.service.api.client`) is built on the standard library, and they import nothing
of the simulator, so they start in a fraction of a second on any machine with ``pip install
dlsched``.
"""

from __future__ import annotations

import getpass
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dlsched.cli.errors import USER_ERROR, print_error, user_errors
from dlsched.cli.options import parse_options, single
from dlsched.cli.run_options import with_run_options
from dlsched.extras import require, require_components

if TYPE_CHECKING:
    from dlsched.service.api.client import ServiceClient

UrlOpt = Annotated[
    str | None, typer.Option("--url", help="Service URL (default: $DLSCHED_URL or :8765).")
]
TokenOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file", help="Token file (default: $DLSCHED_TOKEN[_FILE] or ./state.db.token)."
    ),
]


@contextmanager
def _client(url: str | None, token_file: Path | None) -> Iterator[ServiceClient]:
    """A client of the service; a :class:`~dlsched.service.api.client.ClientError` (the
    service cannot be reached, or refused the request) is printed as one line, exit status 1."""
    from dlsched.service.api.client import ClientError, ServiceClient, resolve_endpoint

    try:
        end = resolve_endpoint(url, token_file)
        with ServiceClient(end.url, end.token, token_from=end.token_from) as client:
            yield client
    except ClientError as exc:
        print_error(str(exc))
        raise typer.Exit(1) from exc


@with_run_options(
    names=("cluster", "policy", "policy_opt", "placement", "placement_opt", "queues"),
    defaults={"cluster": "2x4"},
)
def serve(
    values: dict[str, Any],
    *,
    backend: Annotated[
        str, typer.Option(help="Where jobs run: local, fake, slurm or ray.")
    ] = "local",
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="With --backend ray: the Ray cluster (HOST:PORT or ray://HOST:PORT; default "
            "$RAY_ADDRESS; neither: a Ray instance is started on this machine)."
        ),
    ] = None,
    db: Annotated[
        str,
        typer.Option(
            help="Job store: a SQLite file (created if missing) or "
            "postgresql://USER@HOST:PORT/DBNAME (needs the 'postgres' extra; no password "
            "here: see --db-password-file)."
        ),
    ] = "state.db",
    db_password_file: Annotated[
        Path | None,
        typer.Option(
            help="File (mode 0600) whose first line is the PostgreSQL password (else "
            "$DLSCHED_DB_PASSWORD, else libpq's $PGPASSWORD or ~/.pgpass)."
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0: any free port).")] = 8765,
    token_file: Annotated[
        Path | None, typer.Option(help="Bearer token file (default <db>.token; made 0600).")
    ] = None,
    tokens: Annotated[
        Path | None,
        typer.Option(
            help="Tenants' token file (TOML, mode 0600: admin_token and [tenants.NAME] token, "
            "queues); replaces --token-file. Tenants see and cancel only their own jobs."
        ),
    ] = None,
    work_dir: Annotated[
        Path | None, typer.Option(help="Jobs' working directories (default <db>.jobs/).")
    ] = None,
    round_s: Annotated[
        float, typer.Option("--round", help="Longest time between scheduling cycles (s).")
    ] = 5.0,
    grace: Annotated[
        float, typer.Option(help="Seconds a preempted job has to checkpoint before SIGKILL.")
    ] = 30.0,
    service_id: Annotated[
        str | None,
        typer.Option(
            help="This service's id among services sharing the --db (default: kept in "
            "<work-dir>/service-id)."
        ),
    ] = None,
    lease: Annotated[
        float,
        typer.Option(
            help="Seconds after its last heartbeat before other services take over "
            "this service's jobs."
        ),
    ] = 60.0,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            help="A Host name the API answers besides loopback and --host (repeatable; '*': "
            "any). Guards against DNS rebinding."
        ),
    ] = None,
    sandbox: Annotated[
        str,
        typer.Option(
            envvar="DLSCHED_SANDBOX",
            help="How local jobs are isolated: users (each tenant's jobs run as a sandbox "
            "user of 'make sandbox-users'; needs root), none (as this service's user) or "
            "auto (users when possible; refuses to run tenants' jobs as root). Default none "
            "in this version (docs/service.md, Isolation).",
        ),
    ] = "none",
    job_memory: Annotated[
        str | None,
        typer.Option(
            help="Memory limit of each sandboxed local job (bytes, or with K, M, G, T), "
            "where the kernel allows cgroups."
        ),
    ] = None,
    job_cpus: Annotated[
        float | None,
        typer.Option(help="CPU quota of each sandboxed local job (CPUs, e.g. 1.5).", min=0.001),
    ] = None,
    job_env: Annotated[
        list[str] | None,
        typer.Option(
            help="A variable of this service's environment that jobs get besides PATH, LANG, "
            "LC_* and TZ (repeatable; never DLSCHED_* or PG*)."
        ),
    ] = None,
) -> None:
    """Run the live scheduler service (REST API, dashboard, control loop). Bad options (an
    unknown policy option, a placement option the placement does not take, --ray-address
    without --backend ray, a port in use) are reported before anything is created. Relative
    paths (--db, --token-file, --work-dir) are relative to the directory serve starts in.

    There is no --comm-model: the service runs real jobs, whose run times are measured, not
    modelled (it is an option of simulate and sweep)."""
    require("dlsched serve", "service")
    cluster, policy, queues = values["cluster"], values["policy"], values["queues"]
    placement = values["placement"] or "consolidate"
    policy_opt, placement_opt = values["policy_opt"], values["placement_opt"]
    with user_errors():
        single(policy, "--policy", "a service runs one policy")
        if tokens is not None and token_file is not None:
            raise ValueError("--token-file and --tokens: give one (--tokens holds the admin token)")
        require_components([("--policy", policy), ("--backend", backend)])
        from dlsched.service.store.password import check_no_url_password
        from dlsched.service.store.url import parse_store_url

        check_no_url_password(parse_store_url(db))
        if db.startswith(("postgresql://", "postgres://")):
            require("--db postgresql://...", "postgres")
        if queues is not None:
            require("--queues", "tenancy")
    from dlsched.service.server import PortInUse, ServiceConfig
    from dlsched.service.server import serve as run_service
    from dlsched.service.store.database import Fenced

    with user_errors():
        config = ServiceConfig(
            cluster=cluster,
            policy=policy,
            policy_options=parse_options(policy_opt or []),
            placement=placement,
            placement_options=parse_options(placement_opt or [], "--placement-opt"),
            backend=backend,
            ray_address=ray_address,
            db=db,
            db_password_file=db_password_file,
            host=host,
            port=port,
            token_file=token_file,
            tokens_file=tokens,
            queues=queues,
            work_dir=work_dir,
            round_s=round_s,
            grace_s=grace,
            service_id=service_id,
            lease_s=lease,
            allowed_hosts=tuple(allow_host or ()),
            sandbox=sandbox,
            job_memory_bytes=None if job_memory is None else parse_size(job_memory),
            job_cpus=job_cpus,
            job_env=tuple(job_env or ()),
        )
        try:
            run_service(config, announce=lambda line: typer.echo(line))
        except PortInUse as exc:
            print_error(f"{exc}; choose another with --port (--port 0: any free port)")
            raise typer.Exit(USER_ERROR) from exc
        except Fenced as exc:
            print_error(f"{exc}; the service stopped (start it again to rejoin)")
            raise typer.Exit(1) from exc


_SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_size(text: str) -> int:
    """Bytes of ``--job-memory`` ``text`` (``512M``, ``4G``, ``1073741824``); ValueError
    (one line) for anything else."""
    value = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = value[-1:] if value[-1:] in _SIZE_UNITS else ""
    number = value[: len(value) - len(unit)]
    try:
        size = float(number) * _SIZE_UNITS[unit]
    except ValueError:
        raise ValueError(f"--job-memory {text!r}: expected a size such as 512M or 4G") from None
    if not size >= 1:
        raise ValueError(f"--job-memory {text!r}: expected a positive size")
    return int(size)


def submit(
    command: Annotated[list[str], typer.Argument(help="The job's command (after --).")],
    gpus: Annotated[int, typer.Option(help="GPUs the job needs.")] = 1,
    name: Annotated[str, typer.Option(help="Job name.")] = "job",
    user: Annotated[str | None, typer.Option(help="Submitting user (default: you).")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Per-GPU batch size to pass on.")] = None,
    expected_duration: Annotated[
        float | None, typer.Option(help="Expected run time (s), for SJF/SRTF/QSSF.")
    ] = None,
    elastic: Annotated[
        bool, typer.Option("--elastic", help="An elastic job (for ones, pollux, optimus, ...).")
    ] = False,
    application: Annotated[
        str | None, typer.Option(help="Elastic: the profiled application it runs (cifar10, ...).")
    ] = None,
    max_gpus: Annotated[
        int | None, typer.Option(help="Elastic: the most GPUs it may get (default --gpus).")
    ] = None,
    queue: Annotated[
        str | None,
        typer.Option(help="The LocalQueue to submit to (a service with --queues or --tokens)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Submit nothing: say whether the job would be admitted now (a service with "
            "--queues), why not, and which running jobs it would preempt.",
        ),
    ] = False,
    url: UrlOpt = None,
    token_file: TokenOpt = None,
) -> None:
    """Submit a job: dlsched submit --gpus 2 --name x -- python train.py ...

    Elastic: dlsched submit --elastic --application cifar10 --gpus 1 --max-gpus 4
    --batch-size 32 -- python -m dlsched.workloads.train ..."""
    body: dict[str, Any] = {
        "name": name,
        "user": user or getpass.getuser(),
        "gpus": gpus,
        "command": command,
    }
    if batch_size is not None:
        body["batch_size"] = batch_size
    if expected_duration is not None:
        body["expected_duration_s"] = expected_duration
    if elastic:
        body["elastic"] = True
    if application is not None:
        body["application"] = application
    if max_gpus is not None:
        body["max_gpus"] = max_gpus
    if queue is not None:
        body["queue"] = queue
    with _client(url, token_file) as client:
        if dry_run:
            typer.echo(_dry_run_text(client.dry_run(body)))
            return
        job = client.submit(body)
    typer.echo(f"submitted {job['id']} ({job['name']}, {job['gpus']} GPUs)")


def _dry_run_text(answer: dict[str, Any]) -> str:
    """A dry run's answer (``POST /jobs/dry-run``) as lines for a terminal."""
    queue = answer.get("cluster_queue")
    where = f" in ClusterQueue {queue}" if queue else ""
    if not answer["admitted"]:
        lines = [f"would wait{where}: {answer['reason']}"]
    else:
        flavors = ", ".join(answer.get("flavors") or []) or "-"
        borrow = ", borrowing" if answer.get("borrows") else ""
        lines = [f"would be admitted{where} on {flavors}{borrow}"]
        lines += [f"  preempting {p['job_id']} ({p['reason']})" for p in answer.get("preempts", [])]
    ahead = answer.get("waiting_ahead")
    if ahead:
        lines.append(f"  (were it first: {ahead} waiting jobs of its queue come before it)")
    return "\n".join(lines)


def _when(t: float | None) -> str:
    return "" if t is None else time.strftime("%H:%M:%S", time.localtime(t))


def _gpus_cell(record: dict[str, Any]) -> str:
    """The GPUs a job holds now, and what it asked for when an elastic policy changed it."""
    now, asked = record["gpus"], record.get("gpus_requested", record["gpus"])
    return str(now) if now == asked else f"{now} (asked {asked})"


def jobs(
    state: Annotated[str | None, typer.Option(help="Only jobs in this state.")] = None,
    user: Annotated[str | None, typer.Option(help="Only this user's jobs.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable job records.")] = False,
    url: UrlOpt = None,
    token_file: TokenOpt = None,
) -> None:
    """List jobs: queue, running and finished, with the GPUs they hold (an elastic job: its
    current count, and the requested one beside it when they differ) and their nodes."""
    with _client(url, token_file) as client:
        records = client.jobs(state, user)
    if as_json:
        typer.echo(json.dumps(records, indent=1))
        return
    table = Table()
    for col in (
        "id",
        "name",
        "user",
        "state",
        "gpus",
        "where",
        "prio",
        "submit",
        "start",
        "end",
        "restarts",
        "progress",
    ):
        table.add_column(col)
    for r in records:
        where = " ".join(f"{n}:{','.join(map(str, g))}" for n, g in r["gpu_ids"].items())
        progress = r.get("progress")
        table.add_row(
            r["id"],
            r["name"],
            r["user"],
            r["state"],
            _gpus_cell(r),
            where,
            "" if r.get("priority") is None else str(r["priority"]),
            _when(r["submit_time"]),
            _when(r["start_time"]),
            _when(r["end_time"]),
            str(r["restarts"]),
            "" if progress is None else f"{100 * progress:.0f}%",
        )
    Console(width=140).print(table)


def cancel(
    job: Annotated[str, typer.Argument(help="Job id (e.g. j3).")],
    url: UrlOpt = None,
    token_file: TokenOpt = None,
) -> None:
    """Cancel a job (a running one is stopped first)."""
    with _client(url, token_file) as client:
        record = client.cancel(job)
    typer.echo(f"{record['id']}: {record['state']}")
