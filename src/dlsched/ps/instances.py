"""Small random allocation instances on which the exact optimum can be found by brute force,
and the gap of SMD's allocation step to it (used by ``bench/smd_gap.py`` and the tests)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from dlsched.ps.brute import brute_force
from dlsched.ps.job import PsJob
from dlsched.ps.machines import Machine, uniform_machines
from dlsched.ps.placement import Option, candidate_options, capacity, usage
from dlsched.ps.policy_base import first_fit
from dlsched.ps.smd import SmdConfig, solve
from dlsched.ps.zoo import network

INSTANCE_MODELS = ("resnet50", "vgg16", "inception_v3", "bert_base", "transformer_base")


@dataclass(frozen=True)
class Instance:
    """Jobs with their remaining samples, machines, each job's candidate options, and a
    feasible starting choice (one worker and one PS each)."""

    jobs: tuple[PsJob, ...]
    remaining: tuple[float, ...]
    machines: tuple[Machine, ...]
    candidates: tuple[tuple[Option, ...], ...]
    base: tuple[Option, ...]


def random_instance(rng: random.Random, max_jobs: int = 6, max_machines: int = 4) -> Instance:
    """2..``max_jobs`` jobs (up to 3 workers and 2 PS each, random networks, weights and work)
    on 2..``max_machines`` machines of 2 or 4 GPUs, redrawn until every job's one worker and
    one PS fit together."""
    while True:
        machines = uniform_machines(
            rng.randint(2, max_machines),
            gpus=rng.choice((2, 4)),
            cpus=rng.choice((12.0, 16.0, 24.0)),
            bandwidth_gbps=rng.choice((10.0, 25.0)),
        )
        jobs = tuple(
            PsJob(
                f"j{i}",
                network(rng.choice(INSTANCE_MODELS)),
                32,
                rng.uniform(1e5, 1e7),
                weight=rng.choice((1.0, 1.0, 2.0)),
                max_workers=3,
                max_servers=2,
            )
            for i in range(rng.randint(2, max_jobs))
        )
        free = capacity(machines)
        base = []
        for job in jobs:
            option = first_fit(job, 1, 1, machines, free)
            if option is None:
                break
            base.append(option)
            free = free - usage(job, option)
        if len(base) < len(jobs):
            continue
        candidates = []
        for job, own in zip(jobs, base, strict=True):
            options = candidate_options(job, machines)
            candidates.append(options if own in options else (*options, own))
        return Instance(
            jobs, tuple(j.samples for j in jobs), machines, tuple(candidates), tuple(base)
        )


def gap(instance: Instance, config: SmdConfig | None = None) -> tuple[float, float, float]:
    """(SMD's objective, the exact optimum, SMD's relative gap to it)."""
    args = (instance.jobs, instance.remaining, instance.machines, instance.candidates)
    smd = solve(*args, instance.base, config).objective
    _, best = brute_force(*args)
    return smd, best, float(np.float64(smd) / best - 1.0)
