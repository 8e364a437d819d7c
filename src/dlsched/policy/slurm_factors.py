"""The factors of Slurm's multifactor job priority, each in [0, 1], as SchedMD documents them
(``priority_multifactor`` and ``slurm.conf`` man pages, Slurm 22.05):

- age: ``min(age, PriorityMaxAge) / PriorityMaxAge``, age counted from when the job became
  eligible;
- job size: the mean of the job's share of the cluster's nodes and of its CPUs (checked
  against ``sprio`` of Slurm 22.05), inverted (``1 - f``) with ``PriorityFavorSmall=YES``;
- partition: the partition's ``PriorityJobFactor`` over the largest one of the cluster;
- fair share (classic): ``2 ** (-usage / shares)``, both normalised to the cluster, where usage
  decays by half every ``PriorityDecayHalfLife``.

The priority is the sum of weight × factor, truncated to a whole number as Slurm does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from dlsched.policy.slurm_conf import PriorityConf


def age_factor(age_s: float, max_age_s: float) -> float:
    """``min(age, max_age) / max_age``; a negative age (not yet eligible) counts as 0."""
    if max_age_s <= 0:
        raise ValueError(f"PriorityMaxAge must be positive, got {max_age_s}")
    return min(max(age_s, 0.0), max_age_s) / max_age_s


def job_size_factor(
    nodes: int, cpus: float, cluster_nodes: int, cluster_cpus: float, favor_small: bool
) -> float:
    """Mean of ``nodes / cluster_nodes`` and ``cpus / cluster_cpus`` (``1 -`` that when
    ``favor_small``)."""
    if cluster_nodes <= 0 or cluster_cpus <= 0:
        raise ValueError(f"cluster size must be positive: {cluster_nodes} nodes, {cluster_cpus}")
    share = (nodes / cluster_nodes + cpus / cluster_cpus) / 2.0
    return 1.0 - share if favor_small else share


def partition_factor(partition: str, job_factors: Mapping[str, int]) -> float:
    """``PriorityJobFactor`` of ``partition`` over the largest of ``job_factors`` (1 for a
    partition not listed, as Slurm's default)."""
    top = max(job_factors.values(), default=1)
    return job_factors.get(partition, 1) / top if top > 0 else 0.0


def decayed_usage(records: Iterable[tuple[float, float]], now: float, half_life_s: float) -> float:
    """Usage at ``now`` of ``(time, amount)`` records, each halved every ``half_life_s``
    seconds since its time (no decay when ``half_life_s`` is 0, as in Slurm)."""
    if half_life_s < 0:
        raise ValueError(f"PriorityDecayHalfLife must be >= 0, got {half_life_s}")
    if half_life_s == 0:
        return sum(amount for _, amount in records)
    return sum(amount * math.pow(0.5, (now - t) / half_life_s) for t, amount in records)


def fairshare_factor(usage: float, shares: float) -> float:
    """Classic fair share ``2 ** (-usage / shares)`` of normalised usage and shares; 0 for an
    association with no shares."""
    if shares <= 0:
        return 0.0
    return math.pow(2.0, -usage / shares)


def priority(weights_and_factors: Iterable[tuple[int, float]]) -> int:
    """Σ weight × factor, truncated to a whole number."""
    return int(sum(w * f for w, f in weights_and_factors))


def job_priority(
    conf: PriorityConf,
    age_s: float,
    nodes: int = 1,
    cpus: float = 1.0,
    cluster_nodes: int = 0,
    cluster_cpus: float = 0.0,
    partition: str = "",
) -> int:
    """Slurm's priority of a job ``age_s`` seconds after it became eligible, asking for
    ``nodes`` and ``cpus`` of a cluster of ``cluster_nodes`` and ``cluster_cpus`` in
    ``partition``, from the age, job-size and partition factors (the factors whose weight is
    0 are not computed, so the cluster size is needed only with a job-size weight)."""
    terms = [(conf.weight_age, age_factor(age_s, conf.max_age_s))]
    if conf.weight_job_size:
        size = job_size_factor(nodes, cpus, cluster_nodes, cluster_cpus, conf.favor_small)
        terms.append((conf.weight_job_size, size))
    if conf.weight_partition:
        terms.append(
            (conf.weight_partition, partition_factor(partition, conf.partition_job_factor))
        )
    return priority(terms)
