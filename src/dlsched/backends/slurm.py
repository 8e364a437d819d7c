"""Jobs run by Slurm: dlsched decides where, Slurm executes.

Each request becomes one batch job, submitted with ``sbatch --parsable`` and pinned to the
planned nodes (``--nodelist``, ``-N`` for several nodes) with a GPU request per node
(``--gres=gpu:<type>:<n>``, typed when every planned node has the same known GPU type; a
multi-node plan with unequal per-node counts asks for ``--gpus=<total>`` instead). Slurm picks
the GPU indices within a node and sets ``CUDA_VISIBLE_DEVICES`` to them; dlsched's plan fixes the
node and the count, so no two jobs ever share a GPU (Slurm enforces it) and dlsched's accounting
stays right.

The job's name is ``dlsched-<instance>-<request id>``: :meth:`SlurmBackend.launch` never submits
a name already in the queue (idempotency across driver restarts), and :meth:`SlurmBackend.recover`
finds the jobs of an earlier run of the same driver by that prefix, adopting the known ones and
cancelling the others (orphans). Jobs are submitted with ``--no-requeue``: rescheduling is
dlsched's decision.

The batch script follows the same job contract as :mod:`dlsched.backends.local` (environment
``DLSCHED_JOB_ID``, ``DLSCHED_WORKDIR`` = ``<root>/jobs/<job id>``, ``DLSCHED_CHECKPOINT_DIR``,
``DLSCHED_STATUS_FILE``, ``DLSCHED_NUM_GPUS``, ``DLSCHED_BATCH_SIZE``, ``DLSCHED_NODE`` = the node
Slurm runs the script on, ``DLSCHED_GPU_IDS`` = the planned nodes and counts; output appended to
``log.txt`` with ``--open-mode=append``). The job's environment is an allow-list, not the
service's: ``sbatch --export`` names only the variables :mod:`dlsched.backends.job_env` lets
through (Slurm adds its own ``SLURM_*``), and the script sets ``HOME`` to the working
directory and the contract's variables. Jobs run as the user ``sbatch`` runs as (the
service's); running each tenant's jobs as a mapped user (``sbatch --uid``, root only) is not
done: the wrapper writes the exit code into the service's private ``<root>/exits``. Its shell
wrapper survives SIGTERM and records the
job's exit code in ``<root>/exits/<request id>``: Slurm here keeps no accounting database, so the
code must outlive the job's stay in ``squeue`` and a restart of the driver. ``root`` must
therefore be on a file system the Slurm nodes share with the driver.

Observation is one ``squeue --json`` call: pending and configuring jobs are ``STARTING``, running
and completing ones ``RUNNING`` (a completing job still holds its GPUs), and a job gone from the
queue or in a final state is ``EXITED`` with the recorded code. Termination is ``scancel --full
--signal=TERM`` (the job checkpoints and exits 75), then ``scancel --full --signal=KILL`` once the
grace period has passed; a job that has not started is simply cancelled (``scancel`` with a
signal would wait for it to start). What Slurm does on its own
is reported as :class:`~dlsched.backends.base.BackendError` records (kinds in
:data:`ERROR_KINDS`): a job failed, timed out, lost its node or was cancelled by someone else
without recording an exit code; a job Slurm requeued (cancelled here, reported once); a pending
job whose planned node is drained or down (cancelled, so the driver can place it elsewhere). A
requeued or interrupted job that recorded exit 75 checkpointed and is reported only by its code
(resumable). The ``pid`` of an observation is the Slurm job id and ``start_time`` Slurm's start
time.

Node loss: a job Slurm ends ``NODE_FAIL`` is reported ``node_lost`` (resumable: the driver
queues it again), whatever its wrapper recorded. A node's death can also reach the driver
before Slurm notices it (the job killed first, its exit recorded and reported as ``FAILED``,
the node flagged not responding only at its next ping), so a job that ran and ended
``FAILED`` (or left the queue) killed by a signal this back end did not send, or without an
exit code, stays as it was until Slurm judges its nodes: ``node_lost`` as soon as one is down,
not responding or failing; the recorded exit once :attr:`SlurmBackend.node_loss_wait_s` has
passed with every planned node alive.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from dlsched.backends.base import (
    EXIT_PREEMPTED,
    AttemptCheck,
    AttemptFate,
    BackendError,
    KnownRequest,
    LaunchRequest,
    Observation,
    PriorAttempt,
    ProcState,
)
from dlsched.backends.job_env import DEFAULT_PATH, allowed
from dlsched.backends.jobfiles import (
    CHECKPOINT_NAME,
    INSTANCE_VAR,
    LOG_NAME,
    REQUEST_VAR,
    STATUS_NAME,
    FileBackedBackend,
    private_dir,
    write_private,
)
from dlsched.backends.slurm_cli import (
    QueuedJob,
    SlurmCommandError,
    SlurmCommands,
    SlurmNode,
    read_inventory,
    read_queue,
)

NAME_PREFIX = "dlsched"

STARTING_STATES = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "RESIZING"})
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING"})
NODE_REASONS = frozenset({"ReqNodeNotAvail", "NodeDown", "PartitionNodeLimit", "BadConstraints"})
"""Pending reasons that may mean a planned node cannot run the job (checked with sinfo)."""
ERROR_KINDS = (
    "launch_failed",
    "slurm_unreachable",
    "node_unavailable",
    "node_lost",
    "requeued",
    "slurm_failed",
)
MAYBE_NODE_STATES = frozenset({"FAILED", "COMPLETED", "NODE_FAIL", "BOOT_FAIL"})
"""Final job states that a node's death can produce (a job Slurm or a user cancelled, timed
out or preempted ended for that reason, not its node's)."""
INVENTORY_TTL_S = 1.0
DEFAULT_SLURMD_TIMEOUT_S = 300.0
"""Slurm's default ``SlurmdTimeout``, used when ``scontrol show config`` does not answer."""
NODE_LOSS_MARGIN_S = 10.0

# $1: exit-code file; the rest: the job's command. The trap only keeps the wrapper alive to
# record the code; the job gets the default dispositions back when the shell runs it.
# umask 077 only after the job: the exit file is private (0600), the job's own files are not
# the wrapper's to decide.
_WRAPPER = (
    'trap : TERM INT; f=$1; shift; "$@"; rc=$?; umask 077; '
    'printf "%s\\n" "$rc" > "$f.tmp" && mv "$f.tmp" "$f"; exit "$rc"'
)


@dataclass(slots=True)
class SlurmJob:
    """What this driver knows of one request: its Slurm job id (None until submitted or when
    the submission failed), the last state seen, and when a termination turns forced."""

    request: LaunchRequest
    slurm_id: int | None
    state: str = "PENDING"
    start_time: float | None = None
    ran: bool = False
    stopping: bool = False
    kill_at: float | None = None
    exited: bool = False
    exit_code: int | None = None
    suspect_since: float | None = None
    """When an exit that may be its node's death was first seen (see ``_settle``)."""


class SlurmBackend(FileBackedBackend):
    """Runs requests as Slurm batch jobs (see the module docstring). ``env`` is the
    environment of the Slurm commands (``SLURM_CONF`` selects a cluster); ``partition`` the
    partition to submit to (Slurm's default when None); ``gpu_types`` maps node name to GPU
    type for typed ``--gres`` requests (read from ``sinfo`` on first use when None);
    ``node_loss_wait_s`` how long an exit that may be a node's death waits for Slurm's verdict
    on the node (None: Slurm's ``SlurmdTimeout`` plus :data:`NODE_LOSS_MARGIN_S`)."""

    name = "slurm"

    def __init__(
        self,
        root: Path,
        instance: str,
        clock: Callable[[], float] = time.time,
        env: Mapping[str, str] | None = None,
        partition: str | None = None,
        gpu_types: Mapping[str, str] | None = None,
        node_loss_wait_s: float | None = None,
        extra_env: tuple[str, ...] = (),
    ) -> None:
        self.root = Path(root)
        self.extra_env = extra_env
        self.instance = instance
        self.clock = clock
        self.commands = SlurmCommands(env)
        self.partition = partition
        self._gpu_types = dict(gpu_types) if gpu_types is not None else None
        self.jobs: dict[str, SlurmJob] = {}
        self._errors: list[BackendError] = []
        self._unreachable = False
        self._node_loss_wait_s = node_loss_wait_s
        self._nodes_read: tuple[float, dict[str, SlurmNode]] | None = None
        self._make_dirs()
        private_dir(self.root / "scripts")

    # ---- names and paths -----------------------------------------------------------------
    @property
    def name_prefix(self) -> str:
        """The prefix of every Slurm job name of this driver."""
        return f"{NAME_PREFIX}-{self.instance}-"

    def job_name(self, request_id: str) -> str:
        return self.name_prefix + request_id

    def _error(self, request_id: str, kind: str, message: str) -> None:
        self._errors.append(BackendError(request_id, kind, message, self.clock()))

    # ---- Slurm queries -------------------------------------------------------------------
    def _queue(self) -> dict[str, QueuedJob] | None:
        """This driver's jobs in the queue by request id (the newest per name), or None when
        Slurm does not answer (reported once per outage)."""
        try:
            jobs = read_queue(self.commands)
        except SlurmCommandError as exc:
            if not self._unreachable:
                self._error("", "slurm_unreachable", str(exc))
            self._unreachable = True
            return None
        self._unreachable = False
        prefix = self.name_prefix
        out: dict[str, QueuedJob] = {}
        for job in sorted(jobs, key=lambda j: j.job_id):
            if job.name.startswith(prefix):
                out[job.name[len(prefix) :]] = job
        return out

    def inventory(self) -> list[SlurmNode]:
        """The nodes Slurm reports now (see :func:`~dlsched.backends.slurm_cli.read_inventory`)."""
        return read_inventory(self.commands)

    def unavailable_nodes(self) -> frozenset[str]:
        """The nodes Slurm starts no new job on now (drained, down, ...), for a driver that
        keeps them out of its plans; empty when Slurm does not answer."""
        try:
            return frozenset(n.name for n in self.inventory() if not n.available)
        except SlurmCommandError:
            return frozenset()

    def _node_types(self) -> dict[str, str]:
        if self._gpu_types is None:
            try:
                self._gpu_types = {n.name: n.gpu_type for n in self.inventory() if n.gpus}
            except SlurmCommandError:
                return {}
        return self._gpu_types

    # ---- launching -----------------------------------------------------------------------
    def launch(self, request: LaunchRequest) -> None:
        rid = request.request_id
        if rid in self.jobs:
            return
        found, code = self._read_exit(rid)
        if found:
            self.jobs[rid] = SlurmJob(request, None, "COMPLETED", exited=True, exit_code=code)
            return
        queue = self._queue()
        if queue is None:
            return  # Slurm is down: the driver launches again on a later step.
        queued = queue.get(rid)
        if queued is not None:
            self.jobs[rid] = self._adopted(request, queued)
            return
        self._submit(request)

    def _adopted(self, request: LaunchRequest, queued: QueuedJob) -> SlurmJob:
        job = SlurmJob(request, queued.job_id, queued.state, queued.start_time)
        job.ran = queued.state in RUNNING_STATES or queued.restarts > 0
        return job

    def sbatch_args(self, request: LaunchRequest, script: Path) -> list[str]:
        """The ``sbatch`` command line of ``request`` (its batch script at ``script``)."""
        workdir = self.workdir(request.job_id)
        nodes = [n for n, gpus in request.gpu_ids.items()]
        args = [
            "sbatch",
            "--parsable",
            f"--job-name={self.job_name(request.request_id)}",
            f"--comment=dlsched job {request.job_id} request {request.request_id}",
            f"--chdir={workdir}",
            f"--output={workdir / LOG_NAME}",
            "--open-mode=append",
            "--no-requeue",
            f"--export={','.join(self.exported_names())}",
        ]
        if self.partition:
            args.append(f"--partition={self.partition}")
        if nodes:
            args += [f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}"]
        counts = {len(g) for g in request.gpu_ids.values()}
        types = self._node_types()
        kinds = {types.get(n) for n in nodes}
        kind = next(iter(kinds)) if len(kinds) == 1 else None
        typed = f"{kind}:" if kind else ""
        if request.num_gpus and len(counts) == 1:
            args.append(f"--gres=gpu:{typed}{counts.pop()}")
        elif request.num_gpus:
            args.append(f"--gpus={typed}{request.num_gpus}")
        args.append(str(script))
        return args

    def exported_names(self) -> list[str]:
        """The variables of the Slurm commands' environment that ``sbatch --export`` passes
        on to jobs (see :mod:`dlsched.backends.job_env`); never empty, since ``--export`` with
        nothing would mean ``ALL``."""
        names = {n for n in self.commands.env if allowed(n, self.extra_env)}
        return sorted(names) or ["PATH"]

    def _script(self, request: LaunchRequest) -> str:
        workdir = self.workdir(request.job_id)
        exports = {
            "HOME": str(workdir),
            "DLSCHED_JOB_ID": request.job_id,
            "DLSCHED_WORKDIR": str(workdir),
            "DLSCHED_CHECKPOINT_DIR": str(workdir / CHECKPOINT_NAME),
            "DLSCHED_STATUS_FILE": str(workdir / STATUS_NAME),
            "DLSCHED_NUM_GPUS": str(request.num_gpus),
            "DLSCHED_GPU_IDS": ";".join(
                f"{n}:{','.join(str(g) for g in gs)}" for n, gs in request.gpu_ids.items()
            ),
            INSTANCE_VAR: self.instance,
            REQUEST_VAR: request.request_id,
        }
        if request.batch_size is not None:
            exports["DLSCHED_BATCH_SIZE"] = str(request.batch_size)
        exports.update(request.env)
        lines = [
            "#!/bin/sh",
            "unset DLSCHED_BATCH_SIZE",
            f'export PATH="${{PATH:-{DEFAULT_PATH}}}"',
        ]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in exports.items()]
        lines.append('export DLSCHED_NODE="${SLURMD_NODENAME:-$(hostname)}"')
        if request.num_gpus == 0:
            lines.append("export CUDA_VISIBLE_DEVICES=")
        command = " ".join(shlex.quote(part) for part in request.command)
        wrapper = shlex.quote(_WRAPPER)
        exit_file = shlex.quote(str(self.exit_file(request.request_id)))
        lines.append(f"exec sh -c {wrapper} dlsched-job {exit_file} {command}")
        return "\n".join(lines) + "\n"

    def _submit(self, request: LaunchRequest) -> None:
        rid = request.request_id
        workdir = self.workdir(request.job_id)
        script = self.root / "scripts" / f"{rid}.sh"
        try:
            private_dir(workdir / CHECKPOINT_NAME)
            write_private(script, self._script(request))
        except OSError as exc:
            self._failed_launch(request, str(exc))
            return
        try:
            done = self.commands.run(self.sbatch_args(request, script))
        except SlurmCommandError as exc:
            # sbatch may have submitted the job before timing out: the request stays unknown,
            # so the driver launches it again and the queue check then finds it.
            self._error("", "slurm_unreachable", str(exc))
            return
        first = done.stdout.strip().split(";")[0]
        if done.returncode != 0 or not first.isdigit():
            self._failed_launch(
                request, f"sbatch exited with code {done.returncode}: {done.stderr.strip()}"
            )
            return
        self.jobs[rid] = SlurmJob(request, int(first))

    def _failed_launch(self, request: LaunchRequest, message: str) -> None:
        self._error(request.request_id, "launch_failed", message)
        self.jobs[request.request_id] = SlurmJob(request, None, "FAILED", exited=True)

    # ---- stopping ------------------------------------------------------------------------
    def terminate(self, request_id: str, grace_s: float) -> None:
        job = self.jobs.get(request_id)
        if job is None or job.exited or job.stopping or job.slurm_id is None:
            return
        job.stopping = True
        if not job.ran and not self._running_now(job.slurm_id):
            # Signalling a pending job makes scancel wait for it to start: cancel it instead.
            self._scancel(job.slurm_id)
            return
        job.ran = True
        if grace_s <= 0:
            self._force(job)
            return
        job.kill_at = self.clock() + grace_s
        self._scancel(job.slurm_id, "--full", "--signal=TERM")

    def _running_now(self, slurm_id: int) -> bool:
        """Whether Slurm runs the job now (the state of the last observation may be older)."""
        try:
            done = self.commands.run(["squeue", "--noheader", f"--jobs={slurm_id}", "--format=%T"])
        except SlurmCommandError:
            return False
        return done.stdout.strip() in RUNNING_STATES

    def _force(self, job: SlurmJob) -> None:
        assert job.slurm_id is not None
        job.kill_at = None
        self._scancel(job.slurm_id, "--full", "--signal=KILL")
        self._scancel(job.slurm_id)

    def _scancel(self, slurm_id: int, *options: str) -> None:
        try:
            self.commands.run(["scancel", *options, str(slurm_id)])
        except SlurmCommandError as exc:
            self._error("", "slurm_unreachable", str(exc))

    # ---- observing -----------------------------------------------------------------------
    def observe(self) -> dict[str, Observation]:
        live = [j for j in self.jobs.values() if not j.exited]
        queue = self._queue() if live else {}
        now = self.clock()
        blocked: list[tuple[SlurmJob, QueuedJob]] = []
        if queue is not None:
            for job in live:
                queued = queue.get(job.request.request_id)
                if queued is not None and queued.job_id != job.slurm_id:
                    queued = None  # an older submission of the same request
                self._refresh(job, queued, now)
                if queued is not None and not job.exited and queued.reason in NODE_REASONS:
                    blocked.append((job, queued))
        if blocked:
            self._check_nodes(blocked)
        return {rid: self._observation(job) for rid, job in self.jobs.items()}

    def _observation(self, job: SlurmJob) -> Observation:
        rid = job.request.request_id
        if job.exited:
            return Observation(rid, ProcState.EXITED, job.exit_code, job.slurm_id, job.start_time)
        if job.state in RUNNING_STATES:
            return Observation(
                rid,
                ProcState.RUNNING,
                None,
                job.slurm_id,
                job.start_time,
                self._status(job.request.job_id),
            )
        return Observation(rid, ProcState.STARTING, None, job.slurm_id, job.start_time)

    def _refresh(self, job: SlurmJob, queued: QueuedJob | None, now: float) -> None:
        rid = job.request.request_id
        if queued is None:
            self._settle(job, None, now)
            return
        if queued.start_time is not None and queued.state in RUNNING_STATES:
            job.start_time = queued.start_time
        if queued.state in RUNNING_STATES:
            job.state = queued.state
            job.ran = True
            if job.kill_at is not None and now >= job.kill_at:
                self._force(job)
            return
        if queued.state in STARTING_STATES:
            job.state = queued.state
            if job.ran or queued.restarts > 0:
                assert job.slurm_id is not None
                self._scancel(job.slurm_id)
                self._finish(job, "requeued", f"Slurm requeued job {job.slurm_id} ({rid})")
            return
        self._settle(job, queued, now)

    def _settle(self, job: SlurmJob, queued: QueuedJob | None, now: float) -> None:
        """The job ended (or left the queue). When it may have died with its node (Slurm says
        NODE_FAIL; or it failed, killed by a signal not sent here or without an exit code) and
        a planned node is lost, it is reported ``node_lost``; while every planned node still
        looks alive the verdict waits up to :attr:`node_loss_wait_s` (a dead node's jobs can
        end before Slurm notices the node), the job showing as it was."""
        rid = job.request.request_id
        if queued is not None and queued.state == "NODE_FAIL":
            self._finish(job, "node_lost", f"Slurm job {queued.job_id} ended NODE_FAIL")
            return
        found, code = self._read_exit(rid)
        unexplained = not found or (code is not None and code > 128)
        suspect = (
            not job.stopping
            and (job.ran or found)
            and unexplained
            and (queued is None or queued.state in MAYBE_NODE_STATES)
        )
        if not suspect:
            self._finish(job, queued)
            return
        lost = self._lost_nodes(job)
        if lost:
            self._finish(
                job,
                "node_lost",
                f"Slurm node {', '.join(lost)} was lost "
                f"({'exit code ' + str(code) if found else 'no exit code'})",
            )
            return
        if job.suspect_since is None:
            job.suspect_since = now
        if now - job.suspect_since >= self.node_loss_wait_s:
            self._finish(job, queued)

    def _lost_nodes(self, job: SlurmJob) -> list[str]:
        """The job's planned nodes Slurm reports lost (down, not responding, failing)."""
        nodes = self._nodes_now()
        return sorted(n for n in job.request.gpu_ids if n in nodes and nodes[n].lost)

    def _nodes_now(self) -> dict[str, SlurmNode]:
        """The inventory, read at most once per :data:`INVENTORY_TTL_S` (empty when Slurm
        does not answer)."""
        wall = time.monotonic()
        if self._nodes_read is None or wall - self._nodes_read[0] >= INVENTORY_TTL_S:
            try:
                self._nodes_read = (wall, {n.name: n for n in self.inventory()})
            except SlurmCommandError:
                return {}
        return self._nodes_read[1]

    @property
    def node_loss_wait_s(self) -> float:
        """How long an exit that may be a node's death waits for Slurm's verdict on the node:
        the given value, else Slurm's ``SlurmdTimeout`` (after which an unresponsive node is
        DOWN) plus :data:`NODE_LOSS_MARGIN_S`."""
        if self._node_loss_wait_s is None:
            self._node_loss_wait_s = self._slurmd_timeout() + NODE_LOSS_MARGIN_S
        return self._node_loss_wait_s

    def _slurmd_timeout(self) -> float:
        try:
            done = self.commands.run(["scontrol", "show", "config"])
        except SlurmCommandError:
            return DEFAULT_SLURMD_TIMEOUT_S
        for line in done.stdout.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "SlurmdTimeout":
                number = value.split()[0] if value.split() else ""
                if number.isdigit():
                    return float(number)
        return DEFAULT_SLURMD_TIMEOUT_S

    def _finish(
        self, job: SlurmJob, queued: QueuedJob | str | None, message: str | None = None
    ) -> None:
        """Mark ``job`` exited with its recorded exit code; without one (or when Slurm
        requeued it and it did not checkpoint), report why as an error."""
        rid = job.request.request_id
        found, code = self._read_exit(rid)
        job.exited = True
        job.exit_code = code if found else None
        job.kill_at = None
        if found and (not isinstance(queued, str) or code in (0, EXIT_PREEMPTED)):
            return  # the recorded code tells (a finished or checkpointed job needs no error)
        if isinstance(queued, str):
            self._error(rid, queued, message or queued)
        elif queued is not None and not job.stopping:
            detail = f"reason {queued.reason}" if queued.reason not in ("", "None") else ""
            self._error(
                rid,
                "slurm_failed",
                f"Slurm job {queued.job_id} ended {queued.state} without an exit code"
                + (f" ({detail})" if detail else ""),
            )
        elif queued is None and not job.stopping and job.slurm_id is not None:
            self._error(
                rid,
                "slurm_failed",
                f"Slurm job {job.slurm_id} left the queue without an exit code",
            )

    def _check_nodes(self, blocked: list[tuple[SlurmJob, QueuedJob]]) -> None:
        """Cancel pending jobs whose planned nodes Slurm will not run jobs on."""
        try:
            nodes = {n.name: n for n in self.inventory()}
        except SlurmCommandError:
            return
        for job, queued in blocked:
            bad = [
                name
                for name in job.request.gpu_ids
                if name not in nodes or not nodes[name].available
            ]
            if not bad:
                continue
            self._scancel(queued.job_id)
            states = ", ".join(_describe(name, nodes.get(name)) for name in bad)
            job.stopping = True
            self._finish(
                job,
                "node_unavailable",
                f"Slurm job {queued.job_id} cannot start: planned node {states}",
            )

    def forget(self, request_id: str) -> None:
        job = self.jobs.get(request_id)
        if job is not None and job.exited:
            del self.jobs[request_id]

    def errors(self) -> list[BackendError]:
        out, self._errors = self._errors, []
        return out

    # ---- recovery ------------------------------------------------------------------------
    def recover(self, known: Mapping[str, KnownRequest]) -> None:
        """Adopt this driver's queued or running Slurm jobs of ``known`` requests, record the
        exit code of those that ended while the driver was down, and cancel every other job
        of this driver (orphans). A known request found nowhere is left for the driver to
        launch again."""
        queue = self._queue()
        if queue is None:
            return
        for rid, queued in queue.items():
            final = queued.state not in STARTING_STATES | RUNNING_STATES
            entry = known.get(rid)
            if entry is None:
                if not final:
                    self._scancel(queued.job_id)
                continue
            if rid not in self.jobs:
                self.jobs[rid] = self._adopted(entry.request, queued)
        for rid, entry in known.items():
            if rid in self.jobs:
                continue
            found, code = self._read_exit(rid)
            if found:
                self.jobs[rid] = SlurmJob(
                    entry.request, None, "COMPLETED", exited=True, exit_code=code
                )

    def probe(self, attempt: PriorAttempt) -> AttemptCheck:
        """Alive while Slurm lists the owner's job of that request (by its job name) as pending
        or running; else exited with the code the job's wrapper wrote under the owner's home;
        else gone once its launch deadline has passed. Unknown while Slurm does not answer."""
        try:
            jobs = read_queue(self.commands)
        except SlurmCommandError:
            return AttemptCheck(AttemptFate.UNKNOWN)
        name = f"{NAME_PREFIX}-{attempt.owner}-{attempt.request.request_id}"
        if any(j.name == name and j.state in STARTING_STATES | RUNNING_STATES for j in jobs):
            return AttemptCheck(AttemptFate.ALIVE)
        return self._fate_of_stopped(attempt, self.clock())

    def cancel_all(self) -> None:
        """Cancel every live job of this back end (Slurm's SIGTERM, then SIGKILL after its
        ``KillWait``), for tests and shutdown."""
        for job in self.jobs.values():
            if not job.exited and job.slurm_id is not None:
                self._scancel(job.slurm_id)


def _describe(name: str, node: SlurmNode | None) -> str:
    if node is None:
        return f"{name} (unknown to Slurm)"
    state = "+".join((node.state, *node.flags))
    return f"{name} ({state}{': ' + node.reason if node.reason else ''})"
