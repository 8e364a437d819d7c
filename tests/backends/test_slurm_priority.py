"""dlsched's multifactor priority against a real Slurm (``priority/multifactor``) on loopback.

Pending jobs of different sizes and partitions wait behind a job holding every CPU; ``sprio``
must give the job-size and partition factors, the priorities and the order that dlsched
computes from the same ``slurm.conf`` for the same jobs. Age and fair share are not compared:
Slurm 22.05 ignores ``PriorityWeightAge`` and fair share without slurmdbd accounting ("can only
be used with SlurmDBD"), which is not installed here; unit tests cover those factors.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from dlsched.policy.slurm_conf import read_priority_conf
from dlsched.policy.slurm_factors import job_priority, job_size_factor, partition_factor
from dlsched.testing.slurm_cluster import PARTITION, SlurmCluster, missing_tools

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(missing_tools()), reason="needs Slurm: apt-get install -y slurm-wlm munge"
    ),
]

PRIORITY_CONF = (
    "PriorityType=priority/multifactor",
    "PriorityWeightJobSize=2000",
    "PriorityWeightPartition=3000",
    "PriorityMaxAge=00:10:00",
    "PriorityFavorSmall={favor_small}",
    "PartitionName=lo Nodes=ALL MaxTime=INFINITE State=UP PriorityJobFactor=1",
    "PartitionName=hi Nodes=ALL MaxTime=INFINITE State=UP PriorityJobFactor=4",
)
# (nodes, CPUs, partition): sizes and partitions chosen so neither factor alone gives the order.
JOBS = ((1, 1, "lo"), (2, 4, "hi"), (3, 6, "lo"), (1, 16, "hi"), (1, 2, "lo"), (3, 3, "hi"))


@pytest.fixture(scope="module", params=["NO", "YES"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SlurmCluster]:
    conf = [line.format(favor_small=request.param) for line in PRIORITY_CONF]
    with SlurmCluster(directory=tmp_path_factory.mktemp("slurm-prio"), extra_conf=conf) as c:
        yield c


def submit(cluster: SlurmCluster, *args: str) -> str:
    out = cluster.run("sbatch", "--parsable", "--output=/dev/null", *args).stdout.strip()
    return out.split(";")[0]


def sprio(cluster: SlurmCluster) -> dict[str, tuple[int, float, float]]:
    """Job id -> (priority, job-size factor, partition factor) as sprio prints them."""
    out = cluster.run("sprio", "-h", "-o", "%i %Y %j %p").stdout
    rows = {}
    for line in out.splitlines():
        job_id, prio, size, part = line.split()
        rows[job_id] = (int(prio), float(size), float(part))
    return rows


def test_sprio_matches_dlsched_multifactor(cluster: SlurmCluster) -> None:
    blocker = submit(cluster, "-N3", "--exclusive", "-p", PARTITION, "--wrap", "sleep 600")
    deadline = time.monotonic() + 30
    while cluster.run("squeue", "-h", "-j", blocker, "-o", "%T").stdout.strip() != "RUNNING":
        assert time.monotonic() < deadline, "the blocking job did not start"
        time.sleep(0.2)
    ids = [
        submit(cluster, f"-N{nodes}", f"-n{cpus}", "-p", partition, "--wrap", "true")
        for nodes, cpus, partition in JOBS
    ]
    rows = sprio(cluster)
    assert sorted(rows) == sorted(ids)

    conf = read_priority_conf(cluster.conf)
    assert (conf.weight_job_size, conf.weight_partition) == (2000, 3000)
    cluster_nodes = len(cluster.nodes)
    cluster_cpus = float(sum(n.cpus for n in cluster.nodes))
    ours = {}
    for job, (nodes, cpus, partition) in zip(ids, JOBS, strict=True):
        prio, size, part = rows[job]
        expected_size = job_size_factor(nodes, cpus, cluster_nodes, cluster_cpus, conf.favor_small)
        assert size == pytest.approx(expected_size, abs=1e-6)
        assert part == pytest.approx(partition_factor(partition, conf.partition_job_factor))
        # Age 0: Slurm ignores the age weight without slurmdbd (module docstring).
        ours[job] = job_priority(conf, 0.0, nodes, cpus, cluster_nodes, cluster_cpus, partition)
        assert ours[job] == prio, (job, ours[job], prio)
    by_sprio = sorted(ids, key=lambda j: (-rows[j][0], int(j)))
    assert sorted(ids, key=lambda j: (-ours[j], int(j))) == by_sprio
    assert len({rows[j][0] for j in ids}) == len(ids)  # a strict order, not ties by job id
    cluster.cancel_all()
