"""``SlurmBackend.probe`` against a real Slurm: another driver's attempt is alive while Slurm runs
it, exited (with its own code) once it ends, and gone only once it can no longer start."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dlsched.backends.base import AttemptFate, LaunchRequest, PriorAttempt
from dlsched.backends.slurm import SlurmBackend
from dlsched.testing.slurm_cluster import SlurmCluster, missing_tools
from tests.service.jobscript import job_command, write_job

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(missing_tools()), reason="needs Slurm: apt-get install -y slurm-wlm munge"
    ),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    with SlurmCluster(directory=tmp_path_factory.mktemp("slurm")) as c:
        yield c


def test_another_drivers_attempt_is_alive_then_exited(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    old = SlurmBackend(tmp_path / "old", "probe-old", env=cluster.env)
    taker = SlurmBackend(tmp_path / "taker", "probe-taker", env=cluster.env)
    try:
        req = LaunchRequest("jp.1", "jp", job_command(write_job(tmp_path), 30), {"sn1": (0,)})
        old.launch(req)
        prior = PriorAttempt(req, "probe-old", old.location, None, None, time.time() + 60)
        deadline = time.monotonic() + 30
        while taker.probe(prior).fate is not AttemptFate.ALIVE:
            assert time.monotonic() < deadline, "the running attempt was never seen alive"
            time.sleep(0.2)
        deadline = time.monotonic() + 60
        while (check := taker.probe(prior)).fate is AttemptFate.ALIVE:
            assert time.monotonic() < deadline, "the attempt never ended"
            time.sleep(0.3)
        assert (check.fate, check.exit_code) == (AttemptFate.EXITED, 0)
        never = LaunchRequest("jp.2", "jp", ("true",), {"sn1": (0,)})
        unknown = PriorAttempt(never, "probe-old", old.location, None, None, time.time() + 60)
        assert taker.probe(unknown).fate is AttemptFate.UNKNOWN
        late = PriorAttempt(never, "probe-old", old.location, None, None, time.time() - 60)
        assert taker.probe(late).fate is AttemptFate.GONE
    finally:
        old.cancel_all()
        taker.cancel_all()
