"""Slurm multifactor priority: the slurm.conf excerpt, each factor against hand-computed values,
the policy's order, and the CLI refusing what it cannot honour."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli.main import app
from dlsched.cluster.spec import ClusterSpec, NodeSpec
from dlsched.cluster.state import Demand
from dlsched.policy.registry import create_policy
from dlsched.policy.slurm_conf import (
    SlurmConfError,
    parse_priority_conf,
    read_priority_conf,
    slurm_time_s,
)
from dlsched.policy.slurm_factors import (
    age_factor,
    decayed_usage,
    fairshare_factor,
    job_size_factor,
    partition_factor,
    priority,
)
from dlsched.policy.slurm_multifactor import SlurmMultifactor
from dlsched.sim.config import SimConfig
from dlsched.sim.job import SimJob
from dlsched.sim.simulator import simulate
from dlsched.trace.bundled import bundled_trace_path
from dlsched.trace.schema import Trace

CONF = """\
# priority excerpt
PriorityType=priority/multifactor
PriorityWeightAge=1000   PriorityWeightJobSize=2000
priorityweightpartition=3000
PriorityMaxAge=1-12
PriorityDecayHalfLife=00:30:00
PriorityFavorSmall=YES
PriorityCalcPeriod=1
SlurmctldPort=6817
PartitionName=lo Nodes=ALL PriorityJobFactor=1
PartitionName=hi Nodes=ALL PriorityJobFactor=4
PartitionName=dflt Nodes=ALL
"""


def job(row: int, submit: float, gpus: int, cpus: float = 0.0) -> SimJob:
    return SimJob(row, f"j{row}", submit, Demand(gpus, cpus=cpus), 100.0, 100.0, 0)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 5400.0),
        ("2:30", 150.0),
        ("01:02:03", 3723.0),
        ("7-0", 604800.0),
        ("1-12", 129600.0),
        ("1-2:03", 93780.0),
        ("1-02:03:04", 93784.0),
    ],
)
def test_slurm_time_formats(text: str, seconds: float) -> None:
    assert slurm_time_s(text) == seconds


def test_conf_excerpt_is_read() -> None:
    conf = parse_priority_conf(CONF, "x.conf")
    assert (conf.weight_age, conf.weight_job_size, conf.weight_partition) == (1000, 2000, 3000)
    assert (conf.weight_fairshare, conf.weight_qos) == (0, 0)
    assert conf.max_age_s == 129600.0 and conf.decay_half_life_s == 1800.0
    assert conf.favor_small
    assert conf.partition_job_factor == {"lo": 1, "hi": 4, "dflt": 1}


def test_defaults_are_slurms() -> None:
    conf = parse_priority_conf("", "empty")
    assert conf.max_age_s == conf.decay_half_life_s == 7 * 86400.0
    assert conf.weight_age == conf.weight_job_size == 0 and not conf.favor_small


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("PriorityWeightAge=-3", "x.conf:2: PriorityWeightAge: expected a whole number >= 0"),
        ("PriorityWeightQOS=lots", "x.conf:2: PriorityWeightQOS: expected a whole number"),
        ("PriorityMaxAge=3d", "x.conf:2: PriorityMaxAge: expected a Slurm time"),
        ("PriorityFavorSmall=maybe", "x.conf:2: PriorityFavorSmall: expected YES or NO"),
        ("PriorityType=priority/basic", "x.conf:2: PriorityType: expected priority/multifactor"),
        ("PriorityFlags=SMALL_RELATIVE_TO_TIME", "x.conf:2: PriorityFlags: not modelled"),
        ("PriorityWeightTRES=CPU=1", "x.conf:2: PriorityWeightTRES: not modelled"),
        ("PriorityWeightAge", "x.conf:2: expected KEY=VALUE, got 'PriorityWeightAge'"),
        ("PartitionName=a PriorityJobFactor=x", "x.conf:2: PriorityJobFactor: expected a whole"),
    ],
)
def test_conf_errors_name_file_line_and_key(line: str, message: str) -> None:
    with pytest.raises(SlurmConfError, match="^" + message.replace("(", r"\(")):
        parse_priority_conf("# ok\n" + line + "\n", "x.conf")


def test_classic_fair_share_flag_is_accepted_and_others_refused() -> None:
    conf = parse_priority_conf("PriorityFlags=NO_FAIR_TREE\nPriorityWeightFairshare=5\n", "x")
    assert conf.weight_fairshare == 5
    with pytest.raises(SlurmConfError, match="x:1: PriorityFlags: not modelled"):
        parse_priority_conf("PriorityFlags=NO_FAIR_TREE,ACCRUE_ALWAYS\n", "x")


def test_unreadable_conf_is_named(tmp_path: Path) -> None:
    with pytest.raises(SlurmConfError, match=r"missing\.conf: cannot read"):
        read_priority_conf(tmp_path / "missing.conf")


def test_age_factor_grows_linearly_then_caps() -> None:
    assert age_factor(0.0, 600.0) == 0.0
    assert age_factor(150.0, 600.0) == 0.25
    assert age_factor(600.0, 600.0) == 1.0
    assert age_factor(5000.0, 600.0) == 1.0
    assert age_factor(-10.0, 600.0) == 0.0
    with pytest.raises(ValueError, match="PriorityMaxAge"):
        age_factor(1.0, 0.0)


def test_job_size_factor_is_the_mean_of_node_and_cpu_shares() -> None:
    # 3 nodes of 16 CPUs; the values sprio of Slurm 22.05 printed for these requests.
    assert job_size_factor(3, 3, 3, 48, favor_small=False) == 0.53125
    assert job_size_factor(1, 2, 3, 48, favor_small=False) == 0.1875
    assert job_size_factor(2, 4, 3, 48, favor_small=False) == 0.375
    assert job_size_factor(2, 4, 3, 48, favor_small=True) == 0.625
    assert job_size_factor(3, 48, 3, 48, favor_small=True) == 0.0


def test_partition_factor_is_relative_to_the_largest() -> None:
    factors = {"lo": 1, "hi": 4}
    assert partition_factor("hi", factors) == 1.0
    assert partition_factor("lo", factors) == 0.25
    assert partition_factor("unlisted", factors) == 0.25


def test_usage_decays_by_half_each_half_life() -> None:
    records = [(0.0, 100.0), (3600.0, 40.0)]
    assert decayed_usage(records, 3600.0, 3600.0) == 50.0 + 40.0
    assert decayed_usage(records, 7200.0, 3600.0) == 25.0 + 20.0
    assert decayed_usage(records, 7200.0, 0.0) == 140.0


def test_classic_fairshare_factor() -> None:
    assert fairshare_factor(0.0, 0.25) == 1.0
    assert fairshare_factor(0.25, 0.25) == 0.5
    assert fairshare_factor(0.5, 0.25) == 0.25
    assert fairshare_factor(0.1, 0.0) == 0.0


def test_priority_is_the_truncated_weighted_sum() -> None:
    assert priority([(2000, 0.53125), (3000, 1.0)]) == 4062
    assert priority([(1000, 0.9999)]) == 999


def write_conf(tmp_path: Path, text: str) -> str:
    path = tmp_path / "slurm.conf"
    path.write_text(text)
    return str(path)


def test_policy_orders_by_age_and_size(tmp_path: Path) -> None:
    conf = write_conf(
        tmp_path, "PriorityWeightAge=1000\nPriorityWeightJobSize=1000\nPriorityMaxAge=10\n"
    )
    policy = create_policy(
        "slurm-multifactor",
        {"conf": conf, "cluster_nodes": "4", "cluster_cpus": "64", "node_gpus": "8"},
    )
    assert isinstance(policy, SlurmMultifactor) and not policy.preemptive
    assert not policy.waiting_key_fixed
    small_old = job(0, 0.0, 1, cpus=4)  # 1 node, 4 CPUs: size (1/4 + 4/64) / 2 = 0.15625
    big_new = job(1, 300.0, 16, cpus=32)  # 2 nodes, 32 CPUs: size (2/4 + 32/64) / 2 = 0.5
    # At 400 s: 666 + 156 = 822 against 166 + 500 = 666; at 320 s: 533 + 156 against 33 + 500.
    assert policy.key(small_old, 400.0)[0] == -822
    assert policy.key(big_new, 400.0)[0] == -666
    assert policy.key(small_old, 320.0) < policy.key(big_new, 320.0)
    # Both capped at PriorityMaxAge: size alone decides.
    assert policy.key(big_new, 5000.0) < policy.key(small_old, 5000.0)


def test_favor_small_and_at_least_one_cpu_per_node(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, "PriorityWeightJobSize=1000\nPriorityFavorSmall=YES\n")
    policy = SlurmMultifactor(conf=conf, cluster_nodes=2, cluster_cpus=32, node_gpus=4)
    one = job(0, 0.0, 4)  # trace without CPUs: 1 node, counted as 1 CPU
    two = job(1, 5.0, 8)
    assert policy.key(one, 0.0)[0] == -int(1000 * (1.0 - (1 / 2 + 1 / 32) / 2))
    assert policy.key(two, 0.0)[0] == -int(1000 * (1.0 - (2 / 2 + 2 / 32) / 2))
    assert policy.key(one, 10.0) < policy.key(two, 10.0)


def test_without_conf_jobs_run_in_submit_order() -> None:
    policy = create_policy("slurm-multifactor")
    keys = [policy.key(job(i, float(10 - i), 1 + i), 20.0) for i in range(4)]
    assert sorted(range(4), key=lambda i: keys[i]) == [3, 2, 1, 0]


@pytest.mark.parametrize(
    ("text", "options", "message"),
    [
        ("PriorityWeightFairshare=10\n", {}, "PriorityWeightFairshare: not modelled"),
        ("PriorityWeightPartition=10\n", {}, "PriorityWeightPartition: not modelled"),
        ("PriorityWeightQOS=10\n", {}, "PriorityWeightQOS: not modelled"),
        ("PriorityWeightJobSize=10\n", {"cluster_nodes": "2"}, "needs the policy options"),
    ],
)
def test_policy_refuses_what_it_cannot_honour(
    tmp_path: Path, text: str, options: dict[str, str], message: str
) -> None:
    conf = write_conf(tmp_path, text)
    with pytest.raises(ValueError, match=message):
        create_policy("slurm-multifactor", {"conf": conf, **options})


def test_simulate_names_a_bad_conf_line_and_exits_2(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, "PriorityWeightAge=1000\nPriorityMaxAge=soon\n")
    args = ["simulate", "--trace", str(bundled_trace_path("vc_0e4a51")), "--cluster", "4x8"]
    args += ["--policy", "slurm-multifactor", "--policy-opt", f"conf={conf}"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert f"{conf}:2: PriorityMaxAge: expected a Slurm time" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_simulate_runs_with_a_conf(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, "PriorityWeightAge=1000\nPriorityMaxAge=30\n")
    args = ["simulate", "--trace", str(bundled_trace_path("vc_0e4a51")), "--cluster", "4x8"]
    args += ["--policy", "slurm-multifactor", "--policy-opt", f"conf={conf}"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "summary.json").exists()


def test_simulator_reorders_waiting_jobs_as_they_age(tmp_path: Path) -> None:
    conf = write_conf(
        tmp_path, "PriorityWeightAge=1000\nPriorityWeightJobSize=1000\nPriorityMaxAge=16:40\n"
    )
    cols: dict[str, list[object]] = {
        "job_id": ["hog", "small", "big"],
        "submit_time": [0.0, 10.0, 900.0],
        "num_gpus": [8, 4, 8],
        "duration": [1000.0, 50.0, 50.0],
        "vc": ["a", "a", "a"],
    }
    cluster = ClusterSpec(
        "two", (NodeSpec("n0", 4, partition="a"), NodeSpec("n1", 4, partition="a"))
    )
    options = {"conf": conf, "cluster_nodes": "2", "cluster_cpus": "8", "node_gpus": "4"}
    config = SimConfig(policy="slurm-multifactor", policy_options=options)
    jobs = simulate(Trace.from_columns(cols, "t"), cluster, config).jobs.to_pydict()
    start = dict(zip(jobs["job_id"], jobs["first_start_s"], strict=True))
    # At 1000 s: small 990 (age) + 312 (size) outranks big 100 + 625; when queued, small's
    # 0 + 312 was below big's 0 + 625, so keys fixed at queue time would start big first.
    assert start == {"hog": 0.0, "small": 1000.0, "big": 1050.0}
