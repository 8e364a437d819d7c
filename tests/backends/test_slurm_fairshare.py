"""dlsched's multifactor factors against a real Slurm with slurmdbd accounting (MariaDB).

With ``AccountingStorageType=accounting_storage/slurmdbd`` Slurm 22.05 computes the fair-share
factor; ``sprio``'s factors for pending jobs of two accounts must be dlsched's classic
``2 ** (-usage / shares)`` of the effective usage and normalised shares that ``sshare -l``
reports, and its priorities those dlsched computes from the same ``slurm.conf``. The jobs run
as the test's user in two accounts: fair share is kept per association (user and account), so
two accounts give two usage records without creating Unix users.

Slurm stores the age factor only in the decay pass of ``slurmctld`` (every
``PriorityCalcPeriod``, one minute here), so the age test waits for one pass and checks that the
age sprio reports is dlsched's age factor of a whole number of seconds within the window the
pass fell in. Not compared: the fair-share factor after usage is recorded. Jobs of ``alpha`` that
ran and ended before a pass left its usage at 0 on this machine's Slurm 22.05.8 within 150 s
(sshare and sprio), so every fair-share factor compared here is that of zero usage.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from dlsched.policy.slurm_conf import read_priority_conf
from dlsched.policy.slurm_factors import age_factor, fairshare_factor, priority
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
