"""The training workload under the real service and local back end: the contract end to end.

A long training job runs alone on a one-GPU cluster under SRTF; a short job arrives, so the
service preempts the long job (SIGTERM), which checkpoints and exits 75; the short job runs;
the long job is started again and resumes from its checkpoint.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from dlsched.workloads.gpu_log import read_gpu_log
from dlsched.workloads.status import read_status
from tests.workloads.service_helpers import running_service

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("torch") is None or importlib.util.find_spec("fastapi") is None,
        reason="needs the train and service extras",
    ),
]

TRAIN = [sys.executable, "-m", "dlsched.workloads.train", "--batch-size", "16"]
# The short job only logs its GPUs as the workload does (a second PyTorch start-up would double
# the test's time).
SHORT_JOB = (
    'echo "$(date +%s.%N) start node=$DLSCHED_NODE gpus=$CUDA_VISIBLE_DEVICES" >> gpu_log.txt; '
    'sleep 1; echo "$(date +%s.%N) stop" >> gpu_log.txt'
)


def test_a_preempted_training_job_resumes_where_it_stopped(tmp_path: Path) -> None:
    total = 1536
    long_cmd = [*TRAIN, "--epochs", "1", "--epoch-samples", str(total), "--checkpoint-every", "8"]
    short_cmd = ["sh", "-c", SHORT_JOB]
    with running_service(tmp_path, backend="local", cluster="1x1", policy="srtf") as svc:
        long_id = svc.submit("long", 1, 1000.0, long_cmd)
        (before,) = svc.wait(lambda js: (js[0]["progress"] or 0) > 0.2, timeout=300)
        # Progress and throughput reach the API from the job's own status file.
        assert before["state"] == "RUNNING" and before["samples_per_s"] > 0
        short_id = svc.submit("short", 1, 1.0, short_cmd)
        jobs = svc.wait(lambda js: all(j["state"] == "COMPLETED" for j in js), timeout=600)
    records = {j["id"]: j for j in jobs}
    assert records[long_id]["restarts"] == 1 and records[short_id]["restarts"] == 0
    assert records[long_id]["progress"] == 1.0

    long_dir, short_dir = svc.jobs_root / long_id, svc.jobs_root / short_id
    resumed = re.findall(
        r"resumed from checkpoint at step (\d+)", (long_dir / "log.txt").read_text()
    )
    assert len(resumed) == 1
    # Preempted gracefully: the checkpoint holds at least everything reported before.
    assert int(resumed[0]) * 16 / total >= before["progress"]
    final = read_status(long_dir / "status.json")
    assert (final.state, final.samples, final.step) == ("finished", total, total // 16)

    # The one GPU was never held by both jobs: long, then short, then long again.
    long_runs = read_gpu_log(long_dir / "gpu_log.txt")
    (short_run,) = read_gpu_log(short_dir / "gpu_log.txt")
    assert [(r.node, r.gpus) for r in [*long_runs, short_run]] == [("node-000", ("0",))] * 3
    first, second = long_runs
    assert first.stop is not None and short_run.stop is not None and second.stop is not None
    assert first.stop <= short_run.start and short_run.stop <= second.start
