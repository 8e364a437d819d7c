"""dlsched's multifactor factors against a real Slurm with slurmdbd accounting (MariaDB).

With ``AccountingStorageType=accounting_storage/slurmdbd`` Slurm 22.05 computes the fair-share
factor. The jobs run as the test's user in accounts ``alpha`` and ``beta`` (and ``root``): fair
share is kept per association (user and account), so accounts give separate usage records
without creating Unix users.

At zero usage, ``sprio``'s factors for pending jobs of the two accounts must be dlsched's classic
``2 ** (-usage / shares)`` of the effective usage and normalised shares that ``sshare -l``
reports, and its priorities those dlsched computes from the same ``slurm.conf``.

Slurm stores the age factor only in the decay pass of ``slurmctld`` (every
``PriorityCalcPeriod``, one minute here), so the age test waits for one pass and checks that the
age sprio reports is dlsched's age factor of a whole number of seconds within the window the
pass fell in.

With recorded usage (a cluster of its own, with ``AccountingStorageEnforce=associations,limits``):
jobs of ``alpha``, ``beta`` and ``root`` hold CPUs while jobs of ``alpha`` and ``beta`` wait,
through two decay passes. dlsched computes the usage itself (``slurm_raw_usage``) from the
jobs' start and end times and allocated CPUs and the times of the passes, which Slurm writes to
``priority_last_decay_ran`` in its state directory: Slurm charges usage at each pass and, only
with limits enforced, when a job ends (without, the seconds a job ran after the last pass are
never charged, so a short job leaves no usage at all), and decays it by ``1 - 0.693 /
half-life`` per second. From that usage, normalised and effective, dlsched's fair-share factor
and priority must give, after each pass, sshare's ``RawUsage`` (to the whole unit it prints) and
``EffectvUsage`` of the accounts, sprio's fair-share and age factors and priorities exactly, and
sprio's order. After the second pass every account has non-zero usage and alpha's reverses the
order of the first.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from dlsched.policy.slurm_conf import read_priority_conf
from dlsched.policy.slurm_factors import (
    ChargedRun,
    age_factor,
    effective_usage,
    fairshare_factor,
    job_priority,
    normalized_usage,
    priority,
    slurm_raw_usage,
)
from dlsched.testing.slurm_accounting import ACCOUNTING_INSTALL_HINT, missing_accounting_tools
from dlsched.testing.slurm_cluster import SlurmCluster, missing_tools

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(missing_tools()), reason="needs Slurm: apt-get install -y slurm-wlm munge"
    ),
    pytest.mark.skipif(
        bool(missing_accounting_tools()), reason=f"needs slurmdbd: {ACCOUNTING_INSTALL_HINT}"
    ),
]

PRIORITY_CONF = (
    "PriorityType=priority/multifactor",
    "PriorityFlags=NO_FAIR_TREE",
    "PriorityWeightAge=1000",
    "PriorityWeightFairshare=10000",
    "PriorityMaxAge=00:05:00",
    "PriorityDecayHalfLife=00:05:00",
    "PriorityCalcPeriod=1",
)
ACCOUNTS = {"alpha": 1, "beta": 3}
PENDING = ("alpha", "beta", "alpha", "beta")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with SlurmCluster(
        directory=tmp_path_factory.mktemp("slurm-fs"), extra_conf=PRIORITY_CONF, accounts=ACCOUNTS
    ) as c:
        yield c


def submit(cluster: SlurmCluster, *args: str) -> str:
    out = cluster.run("sbatch", "--parsable", "--output=/dev/null", *args).stdout.strip()
    return out.split(";")[0]


def sprio(cluster: SlurmCluster) -> dict[str, tuple[int, float, float]]:
    """Job id -> (priority, age factor, fair-share factor) as sprio prints them."""
    rows = {}
    for line in cluster.run("sprio", "-h", "-o", "%i %Y %a %f").stdout.splitlines():
        job_id, prio, age, fairshare = line.split()
        rows[job_id] = (int(prio), float(age), float(fairshare))
    return rows


def sshare(cluster: SlurmCluster, user: str) -> dict[str, tuple[float, float]]:
    """Account -> (normalised shares, effective usage) of ``user``'s associations."""
    fields = "Account,User,NormShares,EffectvUsage"
    out = cluster.run("sshare", "-l", "-a", "-P", "-n", "-o", fields).stdout
    rows = {}
    for line in out.splitlines():
        account, who, shares, usage = line.split("|")
        if who == user:
            rows[account.strip()] = (float(shares), float(usage))
    return rows


def test_accounts_get_their_share_of_the_root(cluster: SlurmCluster) -> None:
    user = cluster.run("id", "-un").stdout.strip()
    shares = sshare(cluster, user)
    # The user's own association under the root account holds one share beside the accounts.
    total = 1 + sum(ACCOUNTS.values())
    for account, raw in ACCOUNTS.items():
        assert shares[account][0] == pytest.approx(raw / total, abs=1e-6)
        assert shares[account][1] == 0.0


def test_sprio_fairshare_and_priority_match_dlsched(cluster: SlurmCluster) -> None:
    blocker = submit(cluster, "-A", "root", "-N3", "--exclusive", "--wrap", "sleep 600")
    ids = [submit(cluster, "-A", account, "-N1", "-n1", "--wrap", "true") for account in PENDING]
    rows = sprio(cluster)
    assert set(ids) <= set(rows) <= {*ids, blocker}
    shares = sshare(cluster, cluster.run("id", "-un").stdout.strip())
    conf = read_priority_conf(cluster.conf)
    assert (conf.weight_age, conf.weight_fairshare) == (1000, 10000)
    for job, account in zip(ids, PENDING, strict=True):
        prio, age, fairshare = rows[job]
        norm_shares, usage = shares[account]
        expected_fs = fairshare_factor(usage, norm_shares)
        assert fairshare == pytest.approx(expected_fs, abs=1e-6), (job, account)
        assert age == pytest.approx(age_factor(0.0, conf.max_age_s))
        ours = priority(
            [
                (conf.weight_age, age_factor(0.0, conf.max_age_s)),
                (conf.weight_fairshare, expected_fs),
            ]
        )
        assert ours == prio, (job, ours, prio)
    cluster.cancel_all()


def eligible_time(cluster: SlurmCluster, job: str) -> float:
    out = cluster.run("squeue", "-h", "-j", job, "-O", "EligibleTime").stdout.strip()
    return datetime.fromisoformat(out).timestamp()


@pytest.mark.long
def test_sprio_age_after_a_decay_pass_matches_dlsched(cluster: SlurmCluster) -> None:
    blocker = submit(cluster, "-A", "root", "-N3", "--exclusive", "--wrap", "sleep 600")
    deadline = time.monotonic() + 60
    while cluster.run("squeue", "-h", "-j", blocker, "-o", "%T").stdout.strip() != "RUNNING":
        assert time.monotonic() < deadline, "the blocking job did not start"
        time.sleep(0.2)
    before = time.time()
    ids = []
    for account in PENDING:
        ids.append(submit(cluster, "-A", account, "-N1", "-n1", "--wrap", "true"))
        time.sleep(2)
    eligible = {job: eligible_time(cluster, job) for job in ids}

    # Slurm stores the age factor at each decay pass (every PriorityCalcPeriod, a minute):
    # wait for the first pass after the submissions; it happened in (before, seen].
    deadline = time.monotonic() + 150
    while True:
        rows = sprio(cluster)
        seen = time.time()
        if all(rows[j][1] > 0 for j in ids):
            break
        assert time.monotonic() < deadline, f"no decay pass within 150 s: {rows}"
        before = seen
        time.sleep(0.5)
    shares = sshare(cluster, cluster.run("id", "-un").stdout.strip())
    conf = read_priority_conf(cluster.conf)
    ours = {}
    for job, account in zip(ids, PENDING, strict=True):
        prio, age, fairshare = rows[job]
        norm_shares, usage = shares[account]
        expected_fs = fairshare_factor(usage, norm_shares)
        # sshare prints six decimals, so the exponent is known to about 1e-6 / shares.
        assert fairshare == pytest.approx(expected_fs, abs=2e-5), (job, account)
        age_s = round(age * conf.max_age_s)
        assert before - eligible[job] - 1 <= age_s <= seen - eligible[job] + 1, (job, age_s)
        assert age == pytest.approx(age_factor(age_s, conf.max_age_s), abs=1e-6)
        ours[job] = priority(
            [
                (conf.weight_age, age_factor(age_s, conf.max_age_s)),
                (conf.weight_fairshare, expected_fs),
            ]
        )
        # One point of slack: dlsched is fed sshare's rounded usage and shares.
        assert abs(ours[job] - prio) <= 1, (job, ours[job], prio)
    by_sprio = sorted(ids, key=lambda j: (-rows[j][0], int(j)))
    assert sorted(ids, key=lambda j: (-ours[j], int(j))) == by_sprio
    assert by_sprio == ids  # two seconds apart: older jobs first, and no ties
    cluster.cancel_all()


USAGE_CONF = (*PRIORITY_CONF, "AccountingStorageEnforce=associations,limits")
# (account, resources, seconds): alpha holds two whole nodes throughout; beta's job ends before
# the first pass after the starts and root's between the first and the second, so both are also
# charged at their end. The waiting jobs need all three nodes, so none of them starts.
USAGE_RUNS = (
    ("alpha", ("-N2", "--exclusive"), 600),
    ("beta", ("-N1", "-n8"), 20),
    ("root", ("-N1", "-n4"), 90),
)
PASS_TIMEOUT_S = 90.0  # one PriorityCalcPeriod (a minute) and a margin


def next_pass(cluster: SlurmCluster, after: int | None) -> int:
    """The start time of the first decay pass written after the one that started at ``after``."""
    deadline = time.monotonic() + PASS_TIMEOUT_S
    while True:
        started = cluster.last_decay_pass()
        if started is not None and (after is None or started > after):
            return started
        assert time.monotonic() < deadline, f"no decay pass after {after} in {PASS_TIMEOUT_S} s"
        time.sleep(0.25)


def sshare_usage(cluster: SlurmCluster) -> dict[tuple[str, str], tuple[int, float]]:
    """(account, user; user "" for the account itself) -> (RawUsage, EffectvUsage)."""
    out = cluster.run(
        "sshare", "-l", "-a", "-P", "-n", "-o", "Account,User,RawUsage,EffectvUsage"
    ).stdout
    rows = {}
    for line in out.splitlines():
        account, user, raw, effective = line.split("|")
        rows[(account.strip(), user)] = (int(raw), float(effective))
    return rows


def charged_runs(cluster: SlurmCluster, jobs: list[str]) -> list[ChargedRun]:
    """The runs of ``jobs`` so far, from squeue (whole seconds, allocated CPUs)."""
    out = cluster.run(
        "squeue", "-h", "-t", "all", "-j", ",".join(jobs), "-o", "%a|%T|%S|%e|%C"
    ).stdout
    runs = []
    for line in out.splitlines():
        account, state, start, end, cpus = line.split("|")
        assert state in ("RUNNING", "COMPLETED"), line
        ended = datetime.fromisoformat(end).timestamp() if state == "COMPLETED" else None
        runs.append(
            ChargedRun(account, datetime.fromisoformat(start).timestamp(), ended, float(cpus))
        )
    return runs


@pytest.mark.long
def test_fairshare_with_recorded_usage_matches_dlsched(tmp_path: Path) -> None:
    with SlurmCluster(directory=tmp_path, extra_conf=USAGE_CONF, accounts=ACCOUNTS) as cluster:
        user = cluster.run("id", "-un").stdout.strip()
        conf = read_priority_conf(cluster.conf)
        assert conf.enforce_limits and conf.fairshare_dampening == 1
        passes = [next_pass(cluster, None)]
        # Started after that pass, so every second they run is after a pass dlsched knows.
        running = [
            submit(cluster, "-A", account, *resources, "--wrap", f"sleep {seconds}")
            for account, resources, seconds in USAGE_RUNS
        ]
        deadline = time.monotonic() + 60
        while "N/A" in cluster.run("squeue", "-h", "-t", "all", "-o", "%S").stdout:
            assert time.monotonic() < deadline, "the charged jobs did not start"
            time.sleep(0.2)
        pending = []
        for account in PENDING:
            pending.append(submit(cluster, "-A", account, "-N3", "-n3", "--wrap", "true"))
            time.sleep(2)
        eligible = {job: eligible_time(cluster, job) for job in pending}
        total_shares = 1 + sum(ACCOUNTS.values())
        orders = []
        for _ in range(2):
            passes.append(next_pass(cluster, passes[-1]))
            # Read before the next pass, a minute away.
            rows = sprio(cluster)
            usage = sshare_usage(cluster)
            runs = charged_runs(cluster, running)
            now = time.time()
            assert set(rows) == set(pending)
            assert all(
                abs(r.end - t) >= 2 for r in runs if r.end is not None for t in (*passes, now)
            ), "a job ended at a decay pass or while sshare ran; which came first is unknown"
            half_life, at_end = conf.decay_half_life_s, conf.enforce_limits
            raw = slurm_raw_usage(runs, passes, now, half_life, charge_ended=at_end)
            for account in ("alpha", "beta", "root"):
                assert usage[(account, user)][0] == pytest.approx(raw[account], abs=1), account
            assert usage[("root", "")][0] == pytest.approx(sum(raw.values()), abs=1)
            # The pass took its fair shares from the usage held when it began.
            held = slurm_raw_usage(runs, passes[:-1], passes[-1], half_life, charge_ended=at_end)
            norm = normalized_usage(held)
            ours = {}
            for job, account in zip(pending, PENDING, strict=True):
                assert usage[(account, "")][1] == pytest.approx(norm[account], abs=1e-6)
                # The user is the only member of the account: its effective usage is the
                # account's.
                account_usage = effective_usage(norm[account])
                user_usage = effective_usage(norm[account], account_usage, 1, 1)
                norm_shares = ACCOUNTS[account] / total_shares
                fs = fairshare_factor(user_usage, norm_shares, conf.fairshare_dampening)
                prio, age, fairshare = rows[job]
                assert fairshare == pytest.approx(fs, abs=1e-6), (job, account)
                age_s = passes[-1] - eligible[job]
                assert age == pytest.approx(age_factor(age_s, conf.max_age_s), abs=1e-6)
                ours[job] = job_priority(conf, age_s, fairshare=fs)
                assert ours[job] == prio, (job, ours[job], prio)
            by_sprio = sorted(pending, key=lambda j: (-rows[j][0], int(j)))
            assert sorted(pending, key=lambda j: (-ours[j], eligible[j], int(j))) == by_sprio
            orders.append(by_sprio)
        # After the second pass every account has usage, and alpha's reversed the order.
        assert all(raw[account] > 1 for account in raw)
        assert all(rows[job][2] < 1.0 for job in pending)
        assert orders[0] != orders[1]
        cluster.cancel_all()
