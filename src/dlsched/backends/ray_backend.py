"""Jobs on a Ray cluster: dlsched decides, Ray executes.

Every node of the cluster declares its dlsched identity as custom resources at ``ray start``:
``dlsched-node:<name>`` (see :data:`~dlsched.backends.ray_runner.NODE_RESOURCE_PREFIX`) and
``dlsched-gpu:<type>``, next to ``--num-gpus``. :meth:`RayBackend.inventory` reads nodes, GPU
counts and types back from ``ray.nodes()``.

A request becomes a placement group with one bundle per planned node, each bundle asking for the
node's GPU count and a sliver of that node's identity resource (so Ray places it on exactly that
node), then a detached named :class:`~dlsched.backends.ray_runner.JobRunner` actor in the first
bundle (plus a :class:`~dlsched.backends.ray_runner.GpuHolder` in each further one). The runner
runs the job's command as a subprocess with the same contract as the local back end
(:mod:`dlsched.backends.local`: ``DLSCHED_JOB_ID``, ``DLSCHED_WORKDIR`` = ``<root>/jobs/<job>``,
``DLSCHED_CHECKPOINT_DIR``, ``DLSCHED_STATUS_FILE``, ``DLSCHED_NUM_GPUS``, ``DLSCHED_BATCH_SIZE``,
``DLSCHED_NODE``, ``DLSCHED_GPU_IDS``), except that ``CUDA_VISIBLE_DEVICES`` holds the GPUs *Ray
assigned* on the planned node (Ray never hands one GPU to two actors), and records the exit code
in ``<root>/exits/<request_id>``. ``root`` must therefore be on a file system every node shares
(on one machine, any directory).

- Idempotent launch: actors and placement groups are named ``dlsched:<instance>:<request_id>``
  in the Ray namespace ``dlsched-<instance>`` and detached (they outlive the driver); a request
  with a live actor or an exit file is not started again.
- Observe: the exit file, then the actor's ``wait`` call (ready when the job exits, an error when
  the actor died). A request whose placement group is not yet placed is ``STARTING``.
- Terminate: SIGTERM to the job's process group now (the job checkpoints and exits 75), SIGKILL
  after ``grace_s``, and ``ray.kill`` of the actor if it has not answered
  :data:`FORCE_AFTER_S` later (also how a request still waiting for its placement is withdrawn).
- Node loss: a request with a planned node Ray no longer lists as alive (running, still waiting
  for its placement, or with its job killed by a signal this back end did not send) is reported
  as a ``node_lost`` :class:`~dlsched.backends.base.BackendError` and ``EXITED`` (no exit code);
  an actor or job that dies unasked while Ray still lists its nodes is judged once Ray declares
  a node dead or after :data:`NODE_LOSS_WAIT_S` (whatever the actor itself reported
  meanwhile). A request planned on a node the cluster does not have fails at once with
  ``launch_failed`` (``node_lost`` when the node was alive once: planned before it died).
- Recover: adopts the named actors of ``known`` requests and kills every other actor and
  placement group of this instance (orphans).

An exited request's actors and placement group are released when it is first observed exited.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.backends.base import (
    AttemptCheck,
    AttemptFate,
    BackendError,
    KnownRequest,
    LaunchRequest,
    Observation,
    PriorAttempt,
    ProcState,
)
from dlsched.backends.jobfiles import (
    CHECKPOINT_NAME,
    INSTANCE_VAR,
    LOG_NAME,
    REQUEST_VAR,
    STATUS_NAME,
    FileBackedBackend,
    private_dir,
)
from dlsched.backends.ray_runner import (
    GPU_TYPE_RESOURCE_PREFIX,
    NODE_RESOURCE_AMOUNT,
    NODE_RESOURCE_PREFIX,
    GpuHolder,
    JobRunner,
    ray_nodes,
)
from dlsched.cluster.spec import ClusterSpec, NodeSpec

FORCE_AFTER_S = 5.0
"""How long after the SIGKILL an unresponsive actor is killed through Ray."""
NODE_LOSS_WAIT_S = 60.0
"""How long after an actor's unexplained death, or a job's death by a signal this back end did
not send, the back end waits for Ray to declare one of the request's nodes dead
(``node_lost``) before reporting ``actor_died`` or the exit code: a raylet's workers die at
once, the head notices the node only after its health checks fail (about 15 s with Ray's
defaults; longer on a loaded head)."""
INVENTORY_TTL_S = 1.0
"""How long a read of ``ray.nodes()`` is reused."""
_SLIVER = 0.001


@dataclass(slots=True)
class RayProc:
    """What the driver holds of one request."""

    request: LaunchRequest
    name: str
    actor: Any = None
    holders: list[Any] = field(default_factory=list)
    pg: Any = None
    info_ref: Any = None
    wait_ref: Any = None
    pid: int | None = None
    start_time: float | None = None
    kill_at: float | None = None
    force_at: float | None = None
    died_at: float | None = None
    death: str = ""
    killed_code: int | None = None
    """The exit code of a job killed by a signal not sent here, while its verdict is pending."""
    exited: bool = False
    exit_code: int | None = None


class RayBackend(FileBackedBackend):
    """Runs requests on the Ray cluster at ``address`` (see the module docstring).

    ``address`` None: ``RAY_ADDRESS`` if set, else a single-node Ray instance is started for
    this driver; it declares the identity resources of every node in ``local_nodes`` (all on
    this one machine, with their GPUs in one pool) so the same plans run unchanged."""

    name = "ray"

    def __init__(
        self,
        root: Path,
        instance: str,
        clock: Callable[[], float] = time.time,
        address: str | None = None,
        local_nodes: Sequence[NodeSpec] = (),
        extra_env: tuple[str, ...] = (),
    ) -> None:
        import ray

        self.root = Path(root)
        self.extra_env = extra_env
        self.instance = instance
        self.clock = clock
        self.namespace = f"dlsched-{instance}"
        self.prefix = f"dlsched:{instance}:"
        self.procs: dict[str, RayProc] = {}
        self._errors: list[BackendError] = []
        self._nodes: list[dict[str, Any]] = []
        self._nodes_at = -INVENTORY_TTL_S
        self._seen_nodes: set[str] = set()
        self._make_dirs()
        # A local ray.init() may otherwise write ~/.ray/auth_token, which other nodes and
        # drivers then cannot match (backends.md).
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        address = address or os.environ.get("RAY_ADDRESS") or None
        self.started_local = address is None
        self.pinned = not self.started_local or bool(local_nodes)
        """Whether bundles ask for their node's identity resource (a one-machine instance
        started without ``local_nodes`` declares none)."""
        if address is not None:
            ray.init(address=address, namespace=self.namespace, log_to_driver=False)
        else:
            resources: dict[str, float] = {}
            for node in local_nodes:
                resources[NODE_RESOURCE_PREFIX + node.name] = NODE_RESOURCE_AMOUNT
                if node.gpus:
                    key = GPU_TYPE_RESOURCE_PREFIX + node.gpu_type
                    resources[key] = resources.get(key, 0) + node.gpus
            ray.init(
                address="local",
                namespace=self.namespace,
                num_gpus=sum(n.gpus for n in local_nodes) if local_nodes else None,
                resources=resources or None,
                include_dashboard=False,
                log_to_driver=False,
            )
        self._ray = ray

    # ---- paths ---------------------------------------------------------------------------
    # ---- inventory -----------------------------------------------------------------------
    def _alive_nodes(self) -> list[dict[str, Any]]:
        wall = time.monotonic()
        if wall - self._nodes_at >= INVENTORY_TTL_S:
            self._nodes = [n for n in ray_nodes() if n.get("Alive")]
            self._nodes_at = wall
        return self._nodes

    def node_names(self) -> set[str]:
        """The dlsched names of the cluster's live nodes (remembered as seen)."""
        alive = {name for n in self._alive_nodes() if (name := _node_name(n))}
        self._seen_nodes |= alive
        return alive

    def unavailable_nodes(self) -> frozenset[str]:
        """Nodes this back end saw alive before and that are gone now."""
        alive = self.node_names()
        return frozenset(self._seen_nodes - alive)

    def inventory(self) -> ClusterSpec:
        """The live nodes that declare a dlsched name (see :func:`inventory_of`)."""
        return inventory_of(self._alive_nodes())

    # ---- the interface -------------------------------------------------------------------
    def launch(self, request: LaunchRequest) -> None:
        rid = request.request_id
        if rid in self.procs:
            return
        name = self.prefix + rid
        found, code = self._read_exit(rid)
        if found:
            self.procs[rid] = RayProc(request, name, exited=True, exit_code=code)
            return
        proc = RayProc(request, name)
        self.procs[rid] = proc
        if self._adopt(proc):
            return
        if not self.started_local:
            missing = sorted(set(request.gpu_ids) - self.node_names())
            lost = [n for n in missing if n in self._seen_nodes]
            if lost:
                # Planned while the node was alive, launched just after it died: the node's
                # fault, not the job's (it is queued again).
                self._fail(proc, "node_lost", f"Ray node {', '.join(lost)} was lost")
                return
            if missing:
                self._fail(proc, "launch_failed", f"no live Ray node is named {missing}")
                return
        try:
            self._create(proc)
        except Exception as exc:  # any Ray failure is reported, never raised
            self._fail(proc, "launch_failed", f"{type(exc).__name__}: {exc}")

    def _create(self, proc: RayProc) -> None:
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        ray = self._ray
        request = proc.request
        nodes = list(request.gpu_ids.items()) or [("", ())]
        bundles = []
        for node, gpus in nodes:
            bundle: dict[str, float] = {}
            if gpus:
                bundle["GPU"] = len(gpus)
            if node and self.pinned:
                bundle[NODE_RESOURCE_PREFIX + node] = _SLIVER
            bundles.append(bundle or {"CPU": _SLIVER})
        proc.pg = placement_group(bundles, strategy="PACK", name=proc.name, lifetime="detached")
        workdir = self.workdir(request.job_id)
        private_dir(workdir / CHECKPOINT_NAME)
        common = {"namespace": self.namespace, "lifetime": "detached", "num_cpus": 0}
        for i, (node, gpus) in enumerate(nodes[1:], start=1):
            proc.holders.append(
                ray.remote(GpuHolder)
                .options(
                    name=f"{proc.name}:{i}",
                    num_gpus=len(gpus),
                    scheduling_strategy=PlacementGroupSchedulingStrategy(proc.pg, i),
                    **common,
                )
                .remote(node)
            )
        spec = {
            "command": list(request.command),
            "env": self._environment(request, workdir),
            "extra_env": list(self.extra_env),
            "workdir": str(workdir),
            "log": str(workdir / LOG_NAME),
            "exit_file": str(self.exit_file(request.request_id)),
            "planned_node": nodes[0][0],
        }
        proc.actor = (
            ray.remote(JobRunner)
            .options(
                name=proc.name,
                num_gpus=len(nodes[0][1]),
                max_concurrency=4,
                scheduling_strategy=PlacementGroupSchedulingStrategy(proc.pg, 0),
                **common,
            )
            .remote(spec, proc.holders)
        )
        self._watch(proc)

    def _environment(self, request: LaunchRequest, workdir: Path) -> dict[str, str]:
        env = {
            "HOME": str(workdir),
            "DLSCHED_JOB_ID": request.job_id,
            "DLSCHED_WORKDIR": str(workdir),
            "DLSCHED_CHECKPOINT_DIR": str(workdir / CHECKPOINT_NAME),
            "DLSCHED_STATUS_FILE": str(workdir / STATUS_NAME),
            "DLSCHED_NUM_GPUS": str(request.num_gpus),
            INSTANCE_VAR: self.instance,
            REQUEST_VAR: request.request_id,
        }
        if request.batch_size is not None:
            env["DLSCHED_BATCH_SIZE"] = str(request.batch_size)
        env.update(request.env)
        return env

    def _watch(self, proc: RayProc) -> None:
        proc.info_ref = proc.actor.info.remote()
        proc.wait_ref = proc.actor.wait.remote()

    def _adopt(self, proc: RayProc) -> bool:
        """Attach to the request's live actor, if there is one."""
        from ray.util import get_placement_group

        try:
            proc.actor = self._ray.get_actor(proc.name, namespace=self.namespace)
        except ValueError:
            return False
        for i in range(1, len(proc.request.gpu_ids)):
            with contextlib.suppress(ValueError):
                proc.holders.append(
                    self._ray.get_actor(f"{proc.name}:{i}", namespace=self.namespace)
                )
        with contextlib.suppress(Exception):
            proc.pg = get_placement_group(proc.name)
        self._watch(proc)
        return True

    def _fail(self, proc: RayProc, kind: str, message: str) -> None:
        self._errors.append(BackendError(proc.request.request_id, kind, message, self.clock()))
        self._finish(proc, None)

    def _finish(self, proc: RayProc, code: int | None) -> None:
        proc.exited = True
        proc.exit_code = code
        self._release(proc)

    def _release(self, proc: RayProc) -> None:
        from ray.util import remove_placement_group

        for actor in (proc.actor, *proc.holders):
            if actor is not None:
                with contextlib.suppress(Exception):
                    self._ray.kill(actor, no_restart=True)
        if proc.pg is not None:
            with contextlib.suppress(Exception):
                remove_placement_group(proc.pg)
        proc.actor, proc.holders, proc.pg = None, [], None
        proc.info_ref = proc.wait_ref = None

    def terminate(self, request_id: str, grace_s: float) -> None:
        proc = self.procs.get(request_id)
        if proc is None or proc.exited or proc.kill_at is not None or proc.actor is None:
            return
        proc.kill_at = self.clock() + grace_s
        proc.actor.signal.remote(int(signal.SIGTERM))

    def observe(self) -> dict[str, Observation]:
        now = self.clock()
        live = [p for p in self.procs.values() if not p.exited]
        refs = [r for p in live for r in (p.info_ref, p.wait_ref) if r is not None]
        ready = set()
        if refs:
            done, _ = self._ray.wait(refs, num_returns=len(refs), timeout=0)
            ready = set(done)
        for proc in live:
            self._refresh(proc, ready, now)
        out: dict[str, Observation] = {}
        for rid, proc in self.procs.items():
            if proc.exited:
                state = ProcState.EXITED
            elif proc.pid is None:
                state = ProcState.STARTING
            else:
                state = ProcState.RUNNING
            status = self._status(proc.request.job_id) if state is ProcState.RUNNING else None
            out[rid] = Observation(rid, state, proc.exit_code, proc.pid, proc.start_time, status)
        return out

    def _refresh(self, proc: RayProc, ready: set[Any], now: float) -> None:
        rid = proc.request.request_id
        found, code = self._read_exit(rid)
        if found and not self._killed_unasked(proc, code):
            self._finish(proc, code)
            return
        gone = self._gone_nodes(proc)
        if gone:
            detail = f" ({proc.death})" if proc.death else ""
            self._fail(proc, "node_lost", f"Ray node {', '.join(gone)} was lost{detail}")
            return
        if found:
            self._judge_kill(proc, code, now)
            return
        if proc.info_ref is not None and proc.info_ref in ready:
            ref, proc.info_ref = proc.info_ref, None
            try:
                info = self._ray.get(ref)
                proc.pid, proc.start_time = info["pid"], info["start_time"]
                if info["error"]:
                    self._errors.append(BackendError(rid, "launch_failed", info["error"], now))
            except Exception:  # the wait ref reports the actor's death
                pass
        if proc.killed_code is not None:
            self._judge_kill(proc, proc.killed_code, now)
            return
        if proc.died_at is not None:
            self._judge_death(proc, now)
            return
        if proc.wait_ref is not None and proc.wait_ref in ready:
            try:
                code = self._ray.get(proc.wait_ref)
            except Exception as exc:  # an actor's death, in any form
                found, code = self._read_exit(rid)
                if not found:
                    text = str(exc).strip()
                    proc.died_at = now
                    proc.death = text.splitlines()[0] if text else type(exc).__name__
                    self._judge_death(proc, now)
                    return
            if self._killed_unasked(proc, code):
                self._judge_kill(proc, code, now)
                return
            self._finish(proc, code)
            return
        if proc.kill_at is not None and proc.force_at is None and now >= proc.kill_at:
            proc.force_at = now + FORCE_AFTER_S
            if proc.actor is not None:
                proc.actor.signal.remote(int(signal.SIGKILL))
        if proc.force_at is not None and now >= proc.force_at:
            self._finish(proc, None)

    def _gone_nodes(self, proc: RayProc) -> list[str]:
        """The request's planned nodes that were alive once and are gone now (a node loss
        fails every request with a share on it, waiting, running or exited by a signal)."""
        if self.started_local:
            return []
        return sorted(set(proc.request.gpu_ids) - self.node_names())

    def _killed_unasked(self, proc: RayProc, code: int | None) -> bool:
        """Whether the recorded exit is a signal's that this back end did not send: the job
        may have died with its node (Ray kills a dying worker's children, and the actor can
        record that before it dies too)."""
        return code is not None and code > 128 and proc.kill_at is None and not self.started_local

    def _judge_kill(self, proc: RayProc, code: int | None, now: float) -> None:
        """A job killed by a signal not sent here, on nodes Ray still lists: the exit stands
        only once Ray still lists every node :data:`NODE_LOSS_WAIT_S` after it; until then the
        request stays as it was, and :meth:`_refresh` reports ``node_lost`` as soon as Ray
        drops a node. The actor's answer proves nothing: when a raylet dies, Ray kills its
        workers' children first, and the actor can record and report the kill before it dies
        too (seen under CPU load)."""
        if proc.died_at is None:
            proc.died_at = now
            proc.death = f"the job was killed, exit code {code}"
        proc.killed_code = code
        proc.wait_ref = None
        if now - proc.died_at >= NODE_LOSS_WAIT_S:
            self._finish(proc, code)

    def _judge_death(self, proc: RayProc, now: float) -> None:
        """The actor died unasked (this back end kills actors only after a request ended) on
        nodes Ray still lists. A lost node is reported as ``node_lost`` by :meth:`_refresh` as
        soon as Ray drops it; until then a request being stopped ends as stopped once its
        forced stop would have ended it, any other as ``actor_died`` after
        :data:`NODE_LOSS_WAIT_S`."""
        assert proc.died_at is not None
        if proc.kill_at is not None:
            if now >= proc.kill_at + FORCE_AFTER_S:
                self._finish(proc, None)
            return
        if now - proc.died_at >= NODE_LOSS_WAIT_S:
            self._fail(proc, "actor_died", f"the job's Ray actor died: {proc.death}")

    def forget(self, request_id: str) -> None:
        proc = self.procs.get(request_id)
        if proc is not None and proc.exited:
            del self.procs[request_id]

    def errors(self) -> list[BackendError]:
        out, self._errors = self._errors, []
        return out

    def recover(self, known: Mapping[str, KnownRequest]) -> None:
        """Adopt the live actors of ``known`` requests, record the exit code of those that
        ended while the driver was down, and kill every other actor and placement group this
        instance started (orphans)."""
        from ray.util import (
            get_placement_group,
            list_named_actors,
            placement_group_table,
            remove_placement_group,
        )

        for rid, entry in known.items():
            if rid in self.procs:
                continue
            proc = RayProc(entry.request, self.prefix + rid)
            found, code = self._read_exit(rid)
            if found:
                proc.exited, proc.exit_code = True, code
                self.procs[rid] = proc
                with contextlib.suppress(ValueError):
                    proc.actor = self._ray.get_actor(proc.name, namespace=self.namespace)
                self._release(proc)
            elif self._adopt(proc):
                self.procs[rid] = proc
        ours = {p.name for p in self.procs.values() if not p.exited}
        for name in list_named_actors():
            owner = name.rsplit(":", 1)[0] if name.count(":") > 2 else name
            if name.startswith(self.prefix) and owner not in ours:
                with contextlib.suppress(Exception):
                    self._ray.kill(self._ray.get_actor(name, namespace=self.namespace))
        for entry in placement_group_table().values():
            pg_name = str(entry.get("name", ""))
            if pg_name.startswith(self.prefix) and pg_name not in ours:
                pg = get_placement_group(pg_name) if entry.get("state") != "REMOVED" else None
                if pg is not None:
                    with contextlib.suppress(Exception):
                        remove_placement_group(pg)

    def probe(self, attempt: PriorAttempt) -> AttemptCheck:
        """Alive while the owner's detached actor of that request is registered under its name
        in the owner's namespace (Ray frees the name of an actor that died); else exited with
        the code its runner wrote under the owner's home; else gone once its launch deadline
        has passed. Unknown while Ray does not answer."""
        name = f"dlsched:{attempt.owner}:{attempt.request.request_id}"
        try:
            self._ray.get_actor(name, namespace=f"dlsched-{attempt.owner}")
            return AttemptCheck(AttemptFate.ALIVE)
        except ValueError:
            pass  # no live actor of that name
        except Exception:  # Ray is unreachable: not known now
            return AttemptCheck(AttemptFate.UNKNOWN)
        return self._fate_of_stopped(attempt, self.clock())

    def close(self) -> None:
        """Disconnect from Ray. Jobs keep running (their actors are detached) for a restarted
        driver to adopt; a Ray instance this back end started itself stops with it."""
        self._ray.shutdown()

    def kill_all(self) -> None:
        """Kill every live request's job, actors and placement group (tests and shutdown)."""
        for proc in self.procs.values():
            if not proc.exited:
                if proc.actor is not None:
                    with contextlib.suppress(Exception):
                        self._ray.get(proc.actor.signal.remote(int(signal.SIGKILL)), timeout=10)
                self._finish(proc, None)


def inventory_of(nodes: Sequence[Mapping[str, Any]], name: str = "ray") -> ClusterSpec:
    """The nodes of ``ray.nodes()`` that are alive and declare a dlsched name, with their GPU
    counts and types (``dlsched-gpu:<type>``; ``gpu`` when none is declared), sorted by name."""
    specs = []
    for node in nodes:
        node_name = _node_name(node)
        if not node_name or not node.get("Alive", True):
            continue
        res = node.get("Resources", {})
        types = [
            k[len(GPU_TYPE_RESOURCE_PREFIX) :]
            for k in res
            if k.startswith(GPU_TYPE_RESOURCE_PREFIX)
        ]
        specs.append(NodeSpec(node_name, int(res.get("GPU", 0)), types[0] if types else "gpu"))
    return ClusterSpec(name, tuple(sorted(specs, key=lambda s: s.name)))


def _node_name(node: Mapping[str, Any]) -> str:
    for key in node.get("Resources", {}):
        if key.startswith(NODE_RESOURCE_PREFIX):
            return str(key[len(NODE_RESOURCE_PREFIX) :])
    return ""
