"""The smd policy's decisions: the same whether or not it has decided before, on these or
other machines (it keeps each job's time alone between decisions)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dlsched.ps.job import PsJob
from dlsched.ps.machines import uniform_machines
from dlsched.ps.placement import capacity, usage
from dlsched.ps.policy_base import JobState
from dlsched.ps.policy_smd import SmdPolicy
from dlsched.ps.smd import SmdConfig
from dlsched.ps.zoo import network


def states(seed: int, count: int) -> list[JobState]:
    rng = random.Random(seed)
    names = ("resnet50", "vgg16", "bert_base", "transformer_base")
    return [
        JobState(
            PsJob(f"j{i}", network(rng.choice(names)), 32, rng.uniform(1e5, 1e7)),
            rng.uniform(1e5, 1e7),
            0.0,
            None,
        )
        for i in range(count)
    ]


def test_decisions_do_not_depend_on_earlier_ones() -> None:
    small = uniform_machines(2, gpus=2, bandwidth_gbps=1.0, gpu_tflops=40.0)
    large = uniform_machines(3, gpus=4, cpus=16.0, bandwidth_gbps=25.0, gpu_tflops=4.0)
    # Seed 5, 10 jobs: the admission order differs between the two clusters (checked: keeping
    # the first cluster's times alone changes the decision).
    jobs = states(5, 10)
    used = SmdPolicy()
    used.decide(0.0, jobs, small)
    again = used.decide(0.0, jobs, large)
    fresh = SmdPolicy().decide(0.0, jobs, large)
    assert again == fresh
    total = sum((usage(s.job, again[s.job.job_id]) for s in jobs if s.job.job_id in again), 0.0)
    assert np.all(total <= capacity(large) + 1e-9)


def test_config_rejects_negative_budgets() -> None:
    with pytest.raises(ValueError, match="load_budget"):
        SmdConfig(load_budget=-1)
    with pytest.raises(ValueError, match="node_limit"):
        SmdConfig(node_limit=0)
