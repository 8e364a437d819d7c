"""dlsched: scheduling deep-learning workloads in GPU datacenters.

The public API: read traces (:func:`read_trace`), describe clusters (:func:`resolve_cluster`),
simulate (:func:`simulate`, or :func:`run_experiment` for a whole run directory), and look up
policies and placers by name. Everything else is reachable through the subpackages.
"""

__version__ = "0.1.0"

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
