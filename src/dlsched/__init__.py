"""dlsched: scheduling deep-learning workloads in GPU datacenters.

The public API: read traces (:func:`read_trace`), describe clusters (:func:`resolve_cluster`),
simulate (:func:`simulate`, or :func:`run_experiment` for a whole run directory), and look up
policies and placers by name. Everything else is reachable through the subpackages.

The names are imported on first use, so ``import dlsched`` (and every ``dlsched`` command that
needs none of them, such as ``dlsched --help``) stays fast.
"""

import typing as _typing

from dlsched._lazy import lazy_exports as _lazy_exports

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:
    from dlsched.cluster.parse import resolve_cluster
    from dlsched.cluster.spec import ClusterSpec, NodeSpec
    from dlsched.placement.registry import create_placer, placers
    from dlsched.policy.registry import create_policy, policies
    from dlsched.runner import Experiment, Selection, run_experiment
    from dlsched.sim.config import CheckpointConfig, FaultConfig, SimConfig
    from dlsched.sim.simulator import RunResult, Simulator, simulate
    from dlsched.trace.io import read_parquet, write_parquet
    from dlsched.trace.read import read_trace
    from dlsched.trace.schema import JobSpec, Trace

_EXPORTS = {
    "resolve_cluster": "dlsched.cluster.parse",
    "ClusterSpec": "dlsched.cluster.spec",
    "NodeSpec": "dlsched.cluster.spec",
    "create_placer": "dlsched.placement.registry",
    "placers": "dlsched.placement.registry",
    "create_policy": "dlsched.policy.registry",
    "policies": "dlsched.policy.registry",
    "Experiment": "dlsched.runner",
    "Selection": "dlsched.runner",
    "run_experiment": "dlsched.runner",
    "CheckpointConfig": "dlsched.sim.config",
    "FaultConfig": "dlsched.sim.config",
    "SimConfig": "dlsched.sim.config",
    "RunResult": "dlsched.sim.simulator",
    "Simulator": "dlsched.sim.simulator",
    "simulate": "dlsched.sim.simulator",
    "read_parquet": "dlsched.trace.io",
    "write_parquet": "dlsched.trace.io",
    "read_trace": "dlsched.trace.read",
    "JobSpec": "dlsched.trace.schema",
    "Trace": "dlsched.trace.schema",
}

__all__ = [
    "CheckpointConfig",
    "ClusterSpec",
    "Experiment",
    "FaultConfig",
    "JobSpec",
    "NodeSpec",
    "RunResult",
    "Selection",
    "SimConfig",
    "Simulator",
    "Trace",
    "__version__",
    "create_placer",
    "create_policy",
    "placers",
    "policies",
    "read_parquet",
    "read_trace",
    "resolve_cluster",
    "run_experiment",
    "simulate",
    "write_parquet",
]


def __getattr__(name: str) -> _typing.Any:
    return _lazy_exports(__name__, _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
