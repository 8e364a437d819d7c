"""Slurm's multifactor job priority as an ordering policy (``--policy slurm-multifactor``).

Weights and parameters come from a ``slurm.conf`` excerpt (``--policy-opt conf=PATH``, read by
:mod:`dlsched.policy.slurm_conf`); factors are those of :mod:`dlsched.policy.slurm_factors`.
Highest priority runs first, ties in submit order; non-preemptive, like Slurm's main scheduler.
Priorities are recomputed at every scheduling cycle, since the age factor grows (up to
``PriorityMaxAge``) while jobs wait.

A trace job names GPUs, not nodes, so for the job-size factor a job asks for
``ceil(gpus / node_gpus)`` nodes (at least 1) and its trace CPUs (at least one per node) out of
``cluster_nodes`` nodes and ``cluster_cpus`` CPUs; these three options are required when
``PriorityWeightJobSize`` is not 0. Fair share, partition and QOS factors need per-user usage,
Slurm partitions and QOS that simulated jobs do not carry: a non-zero weight for any of them is
refused (naming the key) rather than ignored. Without ``conf`` every weight is Slurm's default 0
and jobs run in submit order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dlsched.policy.base import Key, NonPreemptivePolicy
from dlsched.policy.slurm_conf import PriorityConf, read_priority_conf
from dlsched.policy.slurm_factors import job_priority
from dlsched.scheduler.view import JobView

_NOT_MODELLED = (
    ("PriorityWeightFairshare", "weight_fairshare"),
    ("PriorityWeightPartition", "weight_partition"),
    ("PriorityWeightQOS", "weight_qos"),
)


@dataclass(frozen=True)
class SlurmMultifactor(NonPreemptivePolicy):
    name = "slurm-multifactor"
    description = (
        "Slurm multifactor priority (age, job size) from conf=slurm.conf excerpt; "
        "non-preemptive, highest priority first"
    )
    waiting_key_fixed = False
    conf: str = ""
    cluster_nodes: int = 0
    cluster_cpus: float = 0.0
    node_gpus: int = 0
    settings: PriorityConf = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        settings = read_priority_conf(self.conf) if self.conf else PriorityConf()
        for key, attr in _NOT_MODELLED:
            if getattr(settings, attr):
                raise ValueError(
                    f"{settings.source}: {key}: not modelled by the simulator (jobs carry no "
                    "user usage, Slurm partition or QOS); set it to 0"
                )
        if (
            settings.weight_job_size
            and min(self.cluster_nodes, self.cluster_cpus, self.node_gpus) <= 0
        ):
            raise ValueError(
                f"{settings.source}: PriorityWeightJobSize needs the policy options "
                "cluster_nodes, cluster_cpus and node_gpus (all positive)"
            )
        object.__setattr__(self, "settings", settings)

    def key(self, job: JobView, now: float) -> Key:
        """(-priority, submit time, seq): highest Slurm priority first."""
        nodes = max(1, math.ceil(job.gpus / self.node_gpus)) if self.node_gpus > 0 else 1
        value = job_priority(
            self.settings,
            now - job.submit_time,
            nodes,
            max(job.demand.cpus, float(nodes)),
            self.cluster_nodes,
            self.cluster_cpus,
        )
        return (-value, job.submit_time, job.seq)
