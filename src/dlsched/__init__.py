"""dlsched: scheduling deep-learning workloads in GPU datacenters.

The public API: read traces (:func:`read_trace`; mixed workloads with :func:`merge_traces`,
parameter-server workloads with :func:`build_workload` and :func:`workload_trace`), describe
clusters (:func:`resolve_cluster`), simulate every job kind on the one simulator
(:func:`simulate`, or :func:`run_experiment` for a whole run directory), look up policies and
placers by name (:func:`policy_catalog` lists every policy with the job kinds it schedules),
write elastic policies (:class:`ElasticPolicy`, :class:`Allocation`, :class:`JobInfo`,
:class:`ClusterView`, :class:`PerfBook`), read decisions (:class:`Plan`), and run the live
service (:class:`ServiceConfig`, :func:`serve`, :class:`ServiceClient`). Everything else is
reachable through the subpackages.

The names are imported on first use, so ``import dlsched`` (and every ``dlsched`` command that
needs none of them, such as ``dlsched --help``) stays fast.
"""

import typing as _typing

from dlsched._lazy import lazy_exports as _lazy_exports

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:
    from dlsched.cluster.parse import resolve_cluster
    from dlsched.cluster.spec import ClusterSpec, NodeSpec
    from dlsched.elastic.policy import ElasticPolicy
    from dlsched.elastic.types import Allocation, ClusterView, JobInfo
    from dlsched.perf.perfbook import PerfBook
    from dlsched.placement.registry import create_placer, placers
    from dlsched.policy.registry import create_policy, policies
    from dlsched.ps.job import PsJob
    from dlsched.ps.workload import build_workload, workload_trace
    from dlsched.runner import Experiment, Selection, run_experiment
    from dlsched.scheduler.plan import Plan, Resize, Start
    from dlsched.service.api.client import ServiceClient
    from dlsched.service.server import ServiceConfig, serve
    from dlsched.sim.config import (
        CheckpointConfig,
        FaultConfig,
        PowerConfig,
        RestartCost,
        SimConfig,
    )
    from dlsched.sim.groups import policy_catalog
    from dlsched.sim.simulator import RunResult, Simulator, simulate
    from dlsched.trace.io import read_parquet, write_parquet
    from dlsched.trace.read import read_trace
    from dlsched.trace.schema import JobSpec, Trace
    from dlsched.trace.transforms import merge_traces

_EXPORTS = {
    "merge_traces": "dlsched.trace.transforms",
    "Plan": "dlsched.scheduler.plan",
    "Start": "dlsched.scheduler.plan",
    "Resize": "dlsched.scheduler.plan",
    "RestartCost": "dlsched.sim.config",
    "PowerConfig": "dlsched.sim.config",
    "policy_catalog": "dlsched.sim.groups",
    "ElasticPolicy": "dlsched.elastic.policy",
    "Allocation": "dlsched.elastic.types",
    "JobInfo": "dlsched.elastic.types",
    "ClusterView": "dlsched.elastic.types",
    "PerfBook": "dlsched.perf.perfbook",
    "PsJob": "dlsched.ps.job",
    "build_workload": "dlsched.ps.workload",
    "workload_trace": "dlsched.ps.workload",
    "ServiceConfig": "dlsched.service.server",
    "serve": "dlsched.service.server",
    "ServiceClient": "dlsched.service.api.client",
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
    "Allocation",
    "CheckpointConfig",
    "ClusterSpec",
    "ClusterView",
    "ElasticPolicy",
    "Experiment",
    "FaultConfig",
    "JobInfo",
    "JobSpec",
    "NodeSpec",
    "PerfBook",
    "Plan",
    "PowerConfig",
    "PsJob",
    "Resize",
    "RestartCost",
    "RunResult",
    "Selection",
    "ServiceClient",
    "ServiceConfig",
    "SimConfig",
    "Simulator",
    "Start",
    "Trace",
    "__version__",
    "build_workload",
    "create_placer",
    "create_policy",
    "merge_traces",
    "placers",
    "policies",
    "policy_catalog",
    "read_parquet",
    "read_trace",
    "resolve_cluster",
    "run_experiment",
    "serve",
    "simulate",
    "workload_trace",
    "write_parquet",
]


def __getattr__(name: str) -> _typing.Any:
    return _lazy_exports(__name__, _EXPORTS, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
