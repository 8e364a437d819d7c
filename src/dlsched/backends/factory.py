"""Back ends by name, for the service's ``--backend`` option."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from dlsched.backends.base import Backend
from dlsched.backends.confinement import JobLimits
from dlsched.backends.fake import FakeBackend
from dlsched.backends.local import LocalBackend
from dlsched.backends.sandbox import SandboxPool, pool_users
from dlsched.backends.slurm import SlurmBackend
from dlsched.cluster.spec import NodeSpec

BACKENDS = ("local", "fake", "slurm", "ray")


def create_backend(
    name: str,
    root: Path,
    instance: str,
    clock: Callable[[], float],
    ray_address: str | None = None,
    nodes: Sequence[NodeSpec] = (),
    sandbox: str = "none",
    limits: JobLimits | None = None,
    extra_env: tuple[str, ...] = (),
) -> Backend:
    """``local``: processes under ``root``; ``fake``: in memory on ``clock``; ``slurm``: batch
    jobs of the Slurm cluster that ``$SLURM_CONF`` (or the system's configuration) names, with
    working directories under ``root`` (see :mod:`dlsched.backends.slurm`). ``instance`` names
    this service's processes (see :mod:`dlsched.backends.local`). ``ray``: the Ray cluster at
    ``ray_address``, else ``$RAY_ADDRESS`` (neither: a one-machine Ray instance started here
    that declares the identity resources of ``nodes``), with working directories under
    ``root`` (see :mod:`dlsched.backends.ray_backend`; needs ``dlsched[ray]``). ``sandbox``
    (``users`` or ``none``, already resolved) and ``limits`` apply to ``local`` only;
    ``extra_env`` names the service's variables jobs get besides the allow-list of
    :mod:`dlsched.backends.job_env` (every back end)."""
    if name == "local":
        pool = SandboxPool(pool_users()) if sandbox == "users" else None
        return LocalBackend(root, instance, clock, sandbox=pool, limits=limits, extra_env=extra_env)
    if name == "fake":
        return FakeBackend(clock)
    if name == "slurm":
        return SlurmBackend(root, instance, clock, extra_env=extra_env)
    if name == "ray":
        from dlsched.backends.ray_backend import RayBackend  # ray is an optional extra

        return RayBackend(
            root, instance, clock, address=ray_address, local_nodes=nodes, extra_env=extra_env
        )
    raise ValueError(f"unknown backend {name!r}; available: {', '.join(BACKENDS)}")
