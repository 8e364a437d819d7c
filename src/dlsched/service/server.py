"""The service's composition root: store, back end, controller, control loop, API, server.

Stopping the service (Ctrl-C or SIGTERM, the same way) stops the loop and the HTTP server and
closes the back end and the store, but leaves job processes running: a service started again
on the same store adopts them (crash recovery and a clean restart are the same path). A service
fenced by another (its lease taken over) stops the same way, and :func:`serve` then raises
:class:`~dlsched.service.store.database.Fenced`.

The service holds its work directory's lock for its whole life
(:func:`~dlsched.service.store.service_id.lock_work_dir`): one service per directory. The HTTP
server runs under :mod:`dlsched.service.http_limits` and logs through
:mod:`dlsched.service.log_limits`.
"""

from __future__ import annotations

import dataclasses
import errno
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from dlsched.backends.base import Backend
from dlsched.backends.confinement import JobLimits
from dlsched.backends.factory import BACKENDS, create_backend
from dlsched.backends.job_env import check_extra_names
from dlsched.backends.jobfiles import private_dir
from dlsched.backends.sandbox import resolve_mode
from dlsched.cluster.parse import resolve_cluster
from dlsched.service.api.app import DASHBOARD_DIR, ServiceContext, create_app
from dlsched.service.api.auth import load_or_create_token
from dlsched.service.api.guard import DEFAULT_ALLOWED_HOSTS, Guard
from dlsched.service.api.tenants import read_tokens
from dlsched.service.control.controller import (
    DEFAULT_GRACE_S,
    DEFAULT_LEASE_S,
    check_lease,
    check_placement,
)
from dlsched.service.control.elastic_setup import build_controller, create_service_policy
from dlsched.service.control.live_admission import LiveAdmission
from dlsched.service.control.loop import ControlLoop
from dlsched.service.http_limits import HttpLimits, server_config
from dlsched.service.log_limits import install as install_log_limits
from dlsched.service.store.database import Fenced, Store, StoreError
from dlsched.service.store.password import with_password
from dlsched.service.store.service_id import WorkDirLock, lock_work_dir, resolve_service_id
from dlsched.service.store.url import SqliteTarget, StoreTarget, parse_store_url

DEFAULT_PORT = 8765


@dataclass(frozen=True)
class ServiceConfig:
    """How to run one service. ``db`` is a SQLite file or a ``postgresql://`` URL (see
    :mod:`dlsched.service.store.url`). ``token_file`` and ``work_dir`` default to siblings of
    a SQLite store (``<db>.token``, ``<db>.jobs/``), and for PostgreSQL to ``<dbname>.token``
    and ``<dbname>.jobs/`` in the current directory; ``round_s`` is the longest time between cycles;
    ``grace_s`` the time a preempted job has to checkpoint before SIGKILL; ``policy_options``
    the policy's text options (checked when the service is built); ``ray_address`` the Ray
    cluster of the ``ray`` back end (None: ``$RAY_ADDRESS``, else a local Ray instance; an
    error with any other back end); ``service_id`` this service's id among those sharing the
    store (None: kept in ``<work_dir>/service-id``, see :mod:`dlsched.service.store.service_id`);
    ``lease_s`` how long its jobs stay its own after it stops renewing its lease;
    ``allowed_hosts`` the ``Host`` names the API answers besides the loopback ones and ``host``
    itself (``*``: any; see :mod:`dlsched.service.api.guard`); ``tokens_file`` the tenants'
    token file (None: the single token of ``token_file``; see
    :mod:`dlsched.service.api.tenants`); ``queues`` Kueue manifests (a file, directory or
    bundled name, as ``simulate --queues``) whose quotas admit jobs before the policy sees
    them (None: no queues; see :mod:`dlsched.service.control.live_admission`);
    ``placement_options`` the placer's text options (``--placement-opt``, as ``simulate``'s;
    checked when the service is built); ``sandbox`` how the local back end isolates jobs
    (``auto``, ``users`` or ``none``, see :func:`dlsched.backends.sandbox.resolve_mode`),
    ``job_memory_bytes``/``job_cpus`` each sandboxed job's cgroup limits (None: unlimited),
    ``job_env`` names of the service's variables jobs get besides the allow-list (see
    :mod:`dlsched.backends.job_env`); ``db_password_file`` the PostgreSQL password's file
    (see :mod:`dlsched.service.store.password`); ``http_limits`` the API server's bounds."""

    cluster: str = "2x4"
    policy: str = "fifo"
    policy_options: dict[str, str] = field(default_factory=dict)
    placement: str = "consolidate"
    placement_options: dict[str, str] = field(default_factory=dict)
    backend: str = "local"
    db: str | Path = Path("state.db")
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token_file: Path | None = None
    work_dir: Path | None = None
    round_s: float = 5.0
    poll_s: float = 0.25
    grace_s: float = DEFAULT_GRACE_S
    ray_address: str | None = None
    service_id: str | None = None
    lease_s: float = DEFAULT_LEASE_S
    allowed_hosts: tuple[str, ...] = ()
    tokens_file: Path | None = None
    queues: str | None = None
    sandbox: str = "none"
    job_memory_bytes: int | None = None
    job_cpus: float | None = None
    job_env: tuple[str, ...] = ()
    db_password_file: Path | None = None
    http_limits: HttpLimits = field(default_factory=HttpLimits)

    @property
    def api_hosts(self) -> tuple[str, ...]:
        """Every ``Host`` name the API answers: loopback, the address it listens on (unless a
        wildcard) and :attr:`allowed_hosts`."""
        own = () if self.host in ("0.0.0.0", "::", "") else (self.host,)
        return (*DEFAULT_ALLOWED_HOSTS, *own, *self.allowed_hosts)

    def resolved(self, cwd: Path | None = None) -> ServiceConfig:
        """This config with every path absolute (relative ones taken from ``cwd``, default the
        current directory): the token file, the work directory and a SQLite store. Resolved
        once at start-up, because jobs run in their own directories and the back ends hand
        these paths to them."""
        base = Path.cwd() if cwd is None else cwd
        target = self.store_target
        db: str | Path = self.db
        if isinstance(target, SqliteTarget):
            db = base / target.path
        return dataclasses.replace(
            self,
            db=db,
            tokens_file=None if self.tokens_file is None else base / self.tokens_file,
            token_file=base / self.token_path,
            work_dir=base / self.jobs_root,
        )

    @property
    def store_target(self) -> StoreTarget:
        """The store ``db`` names; :class:`StoreUrlError` (a ValueError) if none."""
        return parse_store_url(self.db)

    def _beside_store(self, suffix: str) -> Path:
        target = self.store_target
        if isinstance(target, SqliteTarget):
            return target.path.with_name(target.path.name + suffix)
        return Path(target.dbname + suffix)

    @property
    def token_path(self) -> Path:
        return self.token_file or self._beside_store(".token")

    @property
    def jobs_root(self) -> Path:
        return self.work_dir or self._beside_store(".jobs")


class Service:
    """One running service (see the module docstring). :meth:`start` recovers and starts the
    control loop; :attr:`app` is the ASGI application to serve."""

    def __init__(self, config: ServiceConfig, clock: Callable[[], float] = time.time) -> None:
        config = config.resolved()
        self.config = config
        spec = resolve_cluster(config.cluster)
        policy = create_service_policy(config.policy, config.policy_options)
        if config.backend not in BACKENDS:
            raise ValueError(
                f"unknown backend {config.backend!r}; available: {', '.join(BACKENDS)}"
            )
        if config.ray_address is not None:
            if config.backend != "ray":
                raise ValueError(
                    f"ray_address (--ray-address) applies only to backend 'ray', "
                    f"not {config.backend!r}"
                )
            if not config.ray_address.strip():
                raise ValueError("ray_address (--ray-address) is empty")
        check_lease(config.lease_s)
        check_placement(policy, config.placement, config.placement_options)
        target = with_password(config.store_target, config.db_password_file)
        if isinstance(target, SqliteTarget):
            _private_dir(target.path.parent, "--db")
        tokens = None if config.tokens_file is None else read_tokens(config.tokens_file)
        extra_env = check_extra_names(config.job_env)
        limits = _job_limits(config.job_memory_bytes, config.job_cpus)
        self.sandbox = "none"
        self.sandbox_warning: str | None = None
        if config.backend == "local":
            self.sandbox, self.sandbox_warning = resolve_mode(
                config.sandbox, multi_tenant=tokens is not None
            )
        elif config.sandbox == "users":
            raise ValueError(
                f"--sandbox users applies only to backend 'local', not {config.backend!r}"
            )
        admission = None if config.queues is None else LiveAdmission(config.queues, spec)
        if admission is not None and tokens is not None:
            admission.check_queues(tokens.tenant_queues(), str(config.tokens_file))
        self.token = (
            tokens.admin_token if tokens is not None else load_or_create_token(config.token_path)
        )
        self.store = Store(target)
        backend: Backend | None = None
        self._lock: WorkDirLock | None = None
        try:
            self._lock = lock_work_dir(config.jobs_root)
            self.service_id = resolve_service_id(
                config.service_id, config.jobs_root, self.store, clock(), config.lease_s
            )
            backend = create_backend(
                config.backend,
                config.jobs_root,
                self.service_id,
                clock,
                ray_address=config.ray_address,
                nodes=spec.nodes,
                sandbox=self.sandbox,
                limits=limits,
                extra_env=extra_env,
            )
            self.controller = build_controller(
                policy,
                self.store,
                backend,
                spec,
                placement=config.placement,
                placement_options=config.placement_options,
                clock=clock,
                grace_s=config.grace_s,
                round_s=config.round_s,
                service_id=self.service_id,
                lease_s=config.lease_s,
                admission=admission,
            )
        except BaseException:
            if backend is not None:
                backend.close()
            self.store.close()
            if self._lock is not None:
                self._lock.release()
            raise
        self.backend: Backend = backend
        self.fenced: Fenced | None = None
        """Set when the control loop found this service fenced (it then stopped)."""
        self._on_stop: Callable[[], None] | None = None
        self.loop = ControlLoop(
            self.controller, config.round_s, config.poll_s, on_fenced=self._fenced
        )
        self.app: Guard = create_app(
            ServiceContext(
                self.store, self.controller, self.loop.poke, clock, self.token, policy.name, tokens
            ),
            DASHBOARD_DIR,
            allowed_hosts=config.api_hosts,
        )

    def _fenced(self, exc: Fenced) -> None:
        self.fenced = exc
        if self._on_stop is not None:
            self._on_stop()

    def start(self, on_stop: Callable[[], None] | None = None) -> None:
        """Adopt the back end's processes, step once and start the control loop;
        ``on_stop`` is called (from the loop's thread) if the loop stops by itself (fenced)."""
        self._on_stop = on_stop
        self.controller.recover()
        self.controller.step()
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()
        self.backend.close()
        self.store.close()
        if self._lock is not None:
            self._lock.release()


def _job_limits(memory_bytes: int | None, cpus: float | None) -> JobLimits:
    """The jobs' limits; ValueError (naming the option) for one that is not positive."""
    if memory_bytes is not None and memory_bytes <= 0:
        raise ValueError(f"--job-memory {memory_bytes}: expected a positive size")
    if cpus is not None and not cpus > 0:
        raise ValueError(f"--job-cpus {cpus}: expected a positive number of CPUs")
    return JobLimits(memory_bytes, cpus)


class PortInUse(RuntimeError):
    """Another process listens on the service's address (``str()`` names it)."""


def _private_dir(path: Path, option: str) -> None:
    """Make directory ``path`` (mode 0700) unless it exists; StoreError, one line naming
    ``option``, when that fails (a read-only or missing parent)."""
    try:
        private_dir(path)
    except OSError as exc:
        raise StoreError(f"{option} {path}: cannot create the directory: {exc.strerror}") from None


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port); :class:`PortInUse` if the
    address is taken. Created with an explicit IPPROTO_TCP: asyncio turns Nagle off
    (TCP_NODELAY) only on connections of such sockets, and with Nagle on a keep-alive
    response's body waits ~40 ms for the ACK of its headers."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortInUse(f"{host}:{port} is already in use (another dlsched serve?)") from None
        raise
    return sock


class _StopRequested(Exception):
    """SIGTERM reached the service after the HTTP server shut down (see :func:`serve`)."""


def _stop_requested(signum: int, frame: FrameType | None) -> None:
    raise _StopRequested


def serve(config: ServiceConfig, announce: Callable[[str], None] = print) -> None:
    """Run the service until interrupted (Ctrl-C or SIGTERM: it then stops its loop and its
    server, closes the store and back end, and returns); ``announce`` receives the startup
    lines (URL, token file). The address is taken first: if it is in use
    (:class:`PortInUse`), nothing (store, token file, work directory) has been created."""
    import uvicorn

    sock = bind(config.host, config.port)
    try:
        service = Service(config)
    except BaseException:
        sock.close()
        raise
    config = service.config
    port = sock.getsockname()[1]
    host = f"[{config.host}]" if ":" in config.host else config.host
    server: uvicorn.Server | None = None

    def fenced() -> None:
        if server is not None:
            server.should_exit = True

    try:
        service.start(on_stop=fenced)
        announce(f"dlsched service at http://{host}:{port}/")
        announce(f"token file: {config.tokens_file or config.token_path}")
        if service.sandbox_warning:
            announce(service.sandbox_warning)
        announce(
            f"policy {config.policy}, cluster {config.cluster}, backend {config.backend}, "
            f"store {service.store.label}, service id {service.service_id}"
        )
        server = uvicorn.Server(server_config(service.app, config.http_limits.fitted()))
        install_log_limits()
        if service.fenced is not None:  # fenced before the server existed
            server.should_exit = True
        # uvicorn shuts down gracefully on SIGINT/SIGTERM and then raises the signal again:
        # turn that into a normal return, so the clean-up below runs and the exit status is 0.
        previous = signal.signal(signal.SIGTERM, _stop_requested)
        try:
            server.run(sockets=[sock])
        except (KeyboardInterrupt, _StopRequested):
            announce("dlsched service stopped")
        finally:
            signal.signal(signal.SIGTERM, previous)
    finally:
        service.stop()
        sock.close()
    if service.fenced is not None:
        raise service.fenced
