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
    ChargedRun,
    age_factor,
    decayed_usage,
    effective_usage,
    fairshare_factor,
    job_priority,
    job_size_factor,
    normalized_usage,
    partition_factor,
    priority,
    slurm_decay_factor,
    slurm_raw_usage,
)
from dlsched.policy.slurm_multifactor import SlurmMultifactor
from dlsched.sim.config import SimConfig
from dlsched.sim.job import SimJob
from dlsched.sim.simulator import simulate
from dlsched.testing.slurm_cluster import SlurmCluster
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


def test_dampening_and_enforced_limits_are_read() -> None:
    conf = parse_priority_conf("FairShareDampeningFactor=3\n", "x")
    assert conf.fairshare_dampening == 3 and not conf.enforce_limits
    for value, limits in [
        ("associations,limits", True),
        ("safe", True),
        ("ALL", True),
        ("associations,qos", False),
    ]:
        conf = parse_priority_conf(f"AccountingStorageEnforce={value}\n", "x")
        assert conf.enforce_limits is limits, value
    for value in ("0", "lots"):
        with pytest.raises(SlurmConfError, match="x:1: FairShareDampeningFactor: expected"):
            parse_priority_conf(f"FairShareDampeningFactor={value}\n", "x")


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


def test_fairshare_dampening_divides_the_exponent() -> None:
    assert fairshare_factor(0.5, 0.25, dampening=2) == 0.5
    with pytest.raises(ValueError, match="FairShareDampeningFactor"):
        fairshare_factor(0.5, 0.25, dampening=0)


def test_slurm_decay_factor_rounds_ln2() -> None:
    assert slurm_decay_factor(300.0) == 1 - 0.693 / 300
    assert slurm_decay_factor(300.0) ** 300 == pytest.approx(0.49967, abs=1e-5)
    assert slurm_decay_factor(0.0) == 1.0
    with pytest.raises(ValueError, match="PriorityDecayHalfLife"):
        slurm_decay_factor(-1.0)


def test_raw_usage_is_charged_at_passes_decayed_over_each_charge() -> None:
    d = slurm_decay_factor(300.0)
    run = [ChargedRun("a", 5.0, None, 10.0)]
    assert slurm_raw_usage(run, [0.0, 60.0, 120.0], 130.0, 0.0) == {"a": 10 * 55 + 10 * 60}
    after_two = (10 * 55 * d**55) * d**60 + 10 * 60 * d**60
    assert slurm_raw_usage(run, [0.0, 60.0, 120.0], 130.0, 300.0)["a"] == pytest.approx(after_two)
    # Passes after `now` are not applied yet.
    assert slurm_raw_usage(run, [0.0, 60.0, 120.0], 119.0, 0.0) == {"a": 550.0}
    # The first pass only starts the clock: a run before it is charged from it on.
    early = [ChargedRun("a", 0.0, None, 1.0)]
    assert slurm_raw_usage(early, [100.0, 160.0], 200.0, 0.0) == {"a": 60.0}


def test_ended_runs_are_charged_at_their_end_only_when_asked() -> None:
    d = slurm_decay_factor(300.0)
    runs = [ChargedRun("a", 10.0, 30.0, 2.0), ChargedRun("b", 50.0, 90.0, 1.0)]
    passes = [0.0, 60.0, 120.0]
    charged = slurm_raw_usage(runs, passes, 100.0, 300.0, charge_ended=True)
    assert charged["a"] == pytest.approx(2 * 20 * d**20 * d**60)
    # b: 10 s charged by the pass at 60, the 30 s after it at its end (90 <= now).
    assert charged["b"] == pytest.approx(10 * d**10 + 30 * d**30)
    uncharged = slurm_raw_usage(runs, passes, 100.0, 300.0)
    assert uncharged == {"a": 0.0, "b": pytest.approx(10 * d**10)}
    # A run ending exactly at a pass counts as ended before it: charged at its end, then decayed.
    at_pass = [ChargedRun("c", 40.0, 60.0, 1.0)]
    assert slurm_raw_usage(at_pass, passes, 60.0, 300.0, charge_ended=True) == {
        "c": pytest.approx(20 * d**20 * d**60)
    }


# Recorded from Slurm 22.05.8 on this harness: passes at 0, 60 and 120 s (PriorityCalcPeriod=1,
# PriorityDecayHalfLife=5:00), alpha on 32 CPUs from 3 s on, beta on 8 CPUs from 3 to 23 s and
# root on 4 CPUs from 3 s (until 93 s with limits enforced). sshare -l RawUsage after each pass:
RECORDED_RAW = {
    False: ({"alpha": 1598, "beta": 0, "root": 199}, {"alpha": 3062, "beta": 0, "root": 382}),
    True: ({"alpha": 1598, "beta": 132, "root": 199}, {"alpha": 3062, "beta": 115, "root": 280}),
}


@pytest.mark.parametrize("enforce_limits", [False, True])
def test_raw_usage_matches_what_slurm_recorded(enforce_limits: bool) -> None:
    runs = [
        ChargedRun("alpha", 3.0, None, 32.0),
        ChargedRun("beta", 3.0, 23.0, 8.0),
        ChargedRun("root", 3.0, 93.0 if enforce_limits else None, 4.0),
    ]
    for n, recorded in enumerate(RECORDED_RAW[enforce_limits], start=2):
        passes = [0.0, 60.0, 120.0][:n]
        usage = slurm_raw_usage(runs, passes, passes[-1] + 1, 300.0, charge_ended=enforce_limits)
        assert {name: int(value) for name, value in usage.items()} == recorded


def test_recorded_usage_gives_sprios_fair_share_and_priority() -> None:
    # Limits enforced, the usage held when the second pass began; sprio printed fair shares
    # 0.0673566 (alpha, shares 1/5) and 0.9279332 (beta, 3/5) and, for jobs that had waited
    # 117 s, priorities 1063 and 9649 (PriorityWeightAge=1000, PriorityWeightFairshare=10000,
    # PriorityMaxAge=5:00).
    runs = [
        ChargedRun("alpha", 3.0, None, 32.0),
        ChargedRun("beta", 3.0, 23.0, 8.0),
        ChargedRun("root", 3.0, 93.0, 4.0),
    ]
    held = slurm_raw_usage(runs, [0.0, 60.0], 120.0, 300.0, charge_ended=True)
    norm = normalized_usage(held)
    assert norm["alpha"] == pytest.approx(0.778408, abs=1e-6)
    assert norm["beta"] == pytest.approx(0.064744, abs=1e-6)
    fs_alpha = fairshare_factor(effective_usage(norm["alpha"]), 0.2)
    fs_beta = fairshare_factor(effective_usage(norm["beta"]), 0.6)
    assert (fs_alpha, fs_beta) == (pytest.approx(0.0673566, abs=1e-7), pytest.approx(0.9279332))
    conf = parse_priority_conf(
        "PriorityWeightAge=1000\nPriorityWeightFairshare=10000\nPriorityMaxAge=5:00\n", "x"
    )
    assert job_priority(conf, 117.0, fairshare=fs_alpha) == 1063
    assert job_priority(conf, 111.0, fairshare=fs_beta) == 9649
    assert job_priority(parse_priority_conf("PriorityWeightAge=10\n", "x"), 0, fairshare=1) == 0


def test_normalized_and_effective_usage() -> None:
    assert normalized_usage({"a": 3.0, "b": 1.0}) == {"a": 0.75, "b": 0.25}
    assert normalized_usage({"a": 0.0}) == {"a": 0.0}
    assert effective_usage(0.2) == 0.2
    assert effective_usage(0.2, 0.5, shares=1, level_shares=4) == pytest.approx(0.275)
    assert effective_usage(0.2, 0.5, shares=1, level_shares=1) == 0.5
    assert effective_usage(0.2, 0.5, shares=0, level_shares=0) == 0.5


def test_decay_pass_time_is_read_from_slurms_state_file(tmp_path: Path) -> None:
    cluster = SlurmCluster(directory=tmp_path)
    assert cluster.last_decay_pass() is None
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "priority_last_decay_ran").write_bytes(
        (1795829909).to_bytes(8, "big") + (1795829849).to_bytes(8, "big")
    )
    assert cluster.last_decay_pass() == 1795829909
    (tmp_path / "state" / "priority_last_decay_ran").write_bytes(b"\0\0")
    assert cluster.last_decay_pass() is None


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
