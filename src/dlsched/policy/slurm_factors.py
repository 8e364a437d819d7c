"""The factors of Slurm's multifactor job priority, each in [0, 1], as SchedMD documents them
(``priority_multifactor`` and ``slurm.conf`` man pages, Slurm 22.05):

- age: ``min(age, PriorityMaxAge) / PriorityMaxAge``, age counted from when the job became
  eligible;
- job size: the mean of the job's share of the cluster's nodes and of its CPUs (checked
  against ``sprio`` of Slurm 22.05), inverted (``1 - f``) with ``PriorityFavorSmall=YES``;
- partition: the partition's ``PriorityJobFactor`` over the largest one of the cluster;
- fair share (classic, ``PriorityFlags=NO_FAIR_TREE``): ``2 ** (-usage / shares / dampening)``
  of the association's effective usage and normalised shares (``FairShareDampeningFactor``,
  default 1), where usage decays by half every ``PriorityDecayHalfLife``.

The priority is the sum of weight × factor, truncated to a whole number as Slurm does.

:func:`decayed_usage` decays usage continuously. :func:`slurm_raw_usage` is the usage Slurm's
decay thread actually records (checked against ``sshare`` and ``sprio`` of Slurm 22.05): charged
only at its passes (every ``PriorityCalcPeriod``) and, with ``AccountingStorageEnforce=limits``,
when a job ends, each charge decayed over the seconds it covers, with ln 2 rounded to 0.693.
:func:`normalized_usage` and :func:`effective_usage` turn it into the effective usage the
classic fair share takes; a pass computes the fair shares of its priorities from the usage held
when it begins, before its own decay and charges.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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


SLURM_LN2 = 0.693
"""ln 2 as Slurm's decay thread rounds it."""


def slurm_decay_factor(half_life_s: float) -> float:
    """The factor Slurm multiplies usage by per second: ``1 - 0.693 / half_life_s`` (1, no
    decay, when ``half_life_s`` is 0). Usage so loses slightly more than half per half-life
    (``0.49967`` for a half-life of 300 s)."""
    if half_life_s < 0:
        raise ValueError(f"PriorityDecayHalfLife must be >= 0, got {half_life_s}")
    return 1.0 - SLURM_LN2 / half_life_s if half_life_s > 0 else 1.0


@dataclass(frozen=True, slots=True)
class ChargedRun:
    """A job's allocation as Slurm charges it to ``association``: ``billing`` units (the
    allocated CPUs when ``TRESBillingWeights`` is not set) from ``start`` until ``end``
    (None while it runs); times in seconds (Slurm's are whole seconds)."""

    association: str
    start: float
    end: float | None
    billing: float


def slurm_raw_usage(
    runs: Iterable[ChargedRun],
    passes: Iterable[float],
    now: float,
    half_life_s: float,
    *,
    charge_ended: bool = False,
) -> dict[str, float]:
    """The raw usage of each association of ``runs`` that Slurm's classic decay thread holds at
    ``now`` (0 for one never charged), given the start times of its decay ``passes`` (those
    after ``now`` are ignored).

    As ``priority/multifactor`` of Slurm 22.05 does: the first pass (when slurmctld starts)
    charges nothing. Every later pass first multiplies all usage by ``d ** (pass - previous
    pass)``, ``d`` being :func:`slurm_decay_factor`, then charges each run going at the pass
    ``billing × Δ × d ** Δ``, ``Δ`` the seconds it ran since the previous pass. With
    ``charge_ended`` (Slurm does it only when ``AccountingStorageEnforce`` includes ``limits``)
    a run that ended is charged the same way at its end, for the seconds since the pass before
    its end, and the next pass decays that charge whole; without it those last seconds are
    never charged. A run ending exactly at a pass counts as ended before it. The root
    association's usage is the sum over all associations, so runs must be keyed by disjoint
    associations (leaves of the tree)."""
    decay = slurm_decay_factor(half_life_s)
    jobs = list(runs)
    usage = dict.fromkeys((r.association for r in jobs), 0.0)
    last: float | None = None

    def charge(run: ChargedRun, until: float) -> None:
        seconds = until - (run.start if last is None else max(run.start, last))
        if seconds > 0:
            usage[run.association] += run.billing * seconds * math.pow(decay, seconds)

    def charge_ended_runs(until: float) -> None:
        if not charge_ended:
            return
        for run in jobs:
            if run.end is not None and run.end <= until and (last is None or run.end > last):
                charge(run, run.end)

    for when in sorted(p for p in passes if p <= now):
        charge_ended_runs(when)
        if last is not None:
            elapsed = math.pow(decay, when - last)
            for name in usage:
                usage[name] *= elapsed
            for run in jobs:
                if run.start < when and (run.end is None or run.end > when):
                    charge(run, when)
        last = when
    charge_ended_runs(now)
    return usage


def normalized_usage(raw: Mapping[str, float]) -> dict[str, float]:
    """Each association's share of the root's usage (the sum of ``raw``, disjoint
    associations as :func:`slurm_raw_usage` gives them), at most 1; all 0 when nothing was
    used, as Slurm's ``usage_norm``."""
    total = sum(raw.values())
    return {name: min(value / total, 1.0) if total > 0 else 0.0 for name, value in raw.items()}


def effective_usage(
    usage_norm: float,
    parent_effective: float | None = None,
    shares: int = 1,
    level_shares: int = 1,
) -> float:
    """Classic effective usage of an association: its normalised usage when its parent is the
    root (``parent_effective`` None), else ``U + (U_parent - U) × shares / level_shares`` with
    ``level_shares`` the raw shares of it and its siblings (the parent's effective usage when
    that is 0)."""
    if parent_effective is None:
        return usage_norm
    if level_shares <= 0:
        return parent_effective
    return usage_norm + (parent_effective - usage_norm) * shares / level_shares


def fairshare_factor(usage: float, shares: float, dampening: float = 1.0) -> float:
    """Classic fair share ``2 ** (-usage / shares / dampening)`` of effective usage and
    normalised shares (``dampening``: ``FairShareDampeningFactor``, >= 1); 0 for an
    association with no shares."""
    if dampening < 1:
        raise ValueError(f"FairShareDampeningFactor must be >= 1, got {dampening}")
    if shares <= 0:
        return 0.0
    return math.pow(2.0, -usage / shares / dampening)


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
    fairshare: float = 0.0,
) -> int:
    """Slurm's priority of a job ``age_s`` seconds after it became eligible, asking for
    ``nodes`` and ``cpus`` of a cluster of ``cluster_nodes`` and ``cluster_cpus`` in
    ``partition``, whose association has fair-share factor ``fairshare`` (e.g. from
    :func:`fairshare_factor`), from the age, fair-share, job-size and partition factors (the
    factors whose weight is 0 are not computed, so the cluster size is needed only with a
    job-size weight)."""
    terms = [(conf.weight_age, age_factor(age_s, conf.max_age_s))]
    if conf.weight_fairshare:
        terms.append((conf.weight_fairshare, fairshare))
    if conf.weight_job_size:
        size = job_size_factor(nodes, cpus, cluster_nodes, cluster_cpus, conf.favor_small)
        terms.append((conf.weight_job_size, size))
    if conf.weight_partition:
        terms.append(
            (conf.weight_partition, partition_factor(partition, conf.partition_job_factor))
        )
    return priority(terms)
