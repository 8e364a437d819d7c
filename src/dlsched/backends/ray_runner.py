"""What runs inside the Ray cluster for the Ray back end (see
:mod:`dlsched.backends.ray_backend`): one :class:`JobRunner` actor per request, holding the GPUs
of the request's first node, and one :class:`GpuHolder` actor for each further node.

The runner starts the job's command as a subprocess in its own session (signals go to the whole
process group) with the contract's environment; ``CUDA_VISIBLE_DEVICES`` is the GPUs Ray assigned
to the actor, and ``DLSCHED_NODE`` the node it really runs on (read from the node's identity
resource). A thread waits for the job and writes its exit code to the request's exit file (temp
file, then rename) — ``128 + n`` for a job killed by signal ``n``, as a shell reports it — so the
outcome survives the driver and the actor. The job is started with ``PR_SET_PDEATHSIG`` =
SIGKILL: if the actor's process dies (its node is lost, or the driver force-kills it), the job
dies with it instead of running on unseen.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from dlsched.backends.job_env import base_environment
from dlsched.backends.jobfiles import open_log, private_dir, write_private

NODE_RESOURCE_PREFIX = "dlsched-node:"
"""A Ray node that dlsched knows as ``n`` declares the custom resource ``dlsched-node:n``
(amount :data:`NODE_RESOURCE_AMOUNT`, at ``ray start --resources``): a request's bundle for that
node asks for a sliver of it, which pins the bundle there."""
NODE_RESOURCE_AMOUNT = 1000
GPU_TYPE_RESOURCE_PREFIX = "dlsched-gpu:"
"""A Ray node whose GPUs are of type ``t`` declares ``dlsched-gpu:t`` (one unit per GPU)."""
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def own_gpu_ids() -> list[str]:
    """The GPU ids Ray assigned to the calling actor."""
    import ray

    ids = ray.get_runtime_context().get_accelerator_ids().get("GPU", [])
    return [str(i) for i in ids]


def ray_nodes() -> list[dict[str, Any]]:
    """``ray.nodes()``: every node the cluster knows (live or dead), as Ray describes it."""
    import ray

    nodes = cast(Callable[[], list[dict[str, Any]]], ray.nodes)
    return nodes()


def own_node_name(planned: str) -> str:
    """The dlsched name of the Ray node the caller runs on: ``planned`` if the node declares
    that name (a one-machine Ray instance declares every node's), else the one it declares,
    else ``planned``."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    names: list[str] = []
    for node in ray_nodes():
        if node.get("NodeID") == node_id:
            names = [
                key[len(NODE_RESOURCE_PREFIX) :]
                for key in node.get("Resources", {})
                if key.startswith(NODE_RESOURCE_PREFIX)
            ]
    if planned in names or not names:
        return planned
    return names[0]


def write_exit_code(path: Path, code: int) -> None:
    """Record ``code`` in ``path`` atomically (mode 0600)."""
    write_private(path, f"{code}\n")


class GpuHolder:
    """Holds one further node's share of a multi-node request and tells which GPUs it got."""

    def __init__(self, planned_node: str) -> None:
        self.node = own_node_name(planned_node)
        self.gpus = own_gpu_ids()

    def placement(self) -> tuple[str, list[str]]:
        """(node name, GPU ids) held."""
        return self.node, self.gpus


class JobRunner:
    """Runs one request's command (see the module docstring). ``spec`` holds ``command``,
    ``env`` (the contract's variables except the GPU and node ones), ``workdir``, ``log`` and
    ``exit_file`` (paths), and ``planned_node`` (used for ``DLSCHED_NODE`` when the node has no
    identity resource). ``holders`` are the request's :class:`GpuHolder` actors."""

    def __init__(self, spec: dict[str, Any], holders: list[Any]) -> None:
        import ray

        self.node = own_node_name(str(spec["planned_node"]))
        self.gpus = own_gpu_ids()
        placements = [(self.node, self.gpus)]
        placements += [tuple(p) for p in ray.get([h.placement.remote() for h in holders])]
        # The worker's environment is the Ray node's (for a Ray instance the service started,
        # the service's own): only the allow-list reaches the job.
        env = base_environment(os.environ, spec.get("extra_env", ()))
        env.update(spec["env"])
        env["CUDA_VISIBLE_DEVICES"] = ",".join(self.gpus)
        env["DLSCHED_NODE"] = self.node
        env["DLSCHED_GPU_IDS"] = ";".join(f"{n}:{','.join(g)}" for n, g in placements)
        self.exit_file = Path(spec["exit_file"])
        self.pid: int | None = None
        self.start_time = time.time()
        self.exit_code: int | None = None
        self.error: str | None = None
        self._done = threading.Event()
        started = threading.Event()
        # The job is forked from this thread, which lives exactly as long as the job: the
        # parent-death signal fires when the forking thread ends, not the process.
        thread = threading.Thread(
            target=self._run, args=(spec, env, started), daemon=True, name="dlsched-job"
        )
        thread.start()
        started.wait()

    def _run(self, spec: dict[str, Any], env: dict[str, str], started: threading.Event) -> None:
        workdir = Path(spec["workdir"])
        try:
            private_dir(workdir)
            with open(open_log(Path(spec["log"])), "ab") as log:
                popen = subprocess.Popen(
                    list(spec["command"]),
                    cwd=workdir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
        except (OSError, ValueError) as exc:
            self.error = f"cannot start {spec['command'][0]!r}: {exc}"
            self.exit_code = 127
            with contextlib.suppress(OSError):
                write_exit_code(self.exit_file, 127)
            started.set()
            self._done.set()
            return
        self.pid = popen.pid
        started.set()
        code = popen.wait()
        code = 128 - code if code < 0 else code
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)  # stragglers the job left in its group
        with contextlib.suppress(OSError):
            write_exit_code(self.exit_file, code)
        self.exit_code = code
        self._done.set()

    def info(self) -> dict[str, Any]:
        """pid, start time, node, GPU ids, and the start error if the command could not run."""
        return {
            "pid": self.pid,
            "start_time": self.start_time,
            "node": self.node,
            "gpus": self.gpus,
            "error": self.error,
        }

    def wait(self) -> int | None:
        """Block until the job exits; its exit code."""
        self._done.wait()
        return self.exit_code

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the job's process group (nothing if it has exited)."""
        if self.pid is not None and not self._done.is_set():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)
