"""The job contract's files and environment, without PyTorch: status file, GPU log, DLSCHED_*."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from dlsched.workloads.config import TrainConfig
from dlsched.workloads.gpu_log import GpuLogError, log_start, log_stop, read_gpu_log
from dlsched.workloads.jobenv import JobEnv, JobEnvError
from dlsched.workloads.status import StatusError, TrainStatus, read_status, write_status
from dlsched.workloads.throughput import ThroughputMeter

CONTRACT_FIELDS = (
    "step",
    "epoch",
    "samples",
    "progress",
    "samples_per_s",
    "checkpoint_step",
    "num_gpus",
    "batch_size",
    "time",
)

STATUS = TrainStatus(
    step=12,
    epoch=0.75,
    samples=384,
    progress=0.25,
    samples_per_s=310.5,
    checkpoint_step=10,
    num_gpus=2,
    batch_size=16,
    time=1_700_000_000.5,
    job_id="j4",
    model="resnet-small",
    global_batch_size=32,
    total_samples=1536,
    loss=1.25,
    state="running",
)


def test_status_round_trips_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    write_status(path, STATUS)
    write_status(path, replace(STATUS, step=13))
    assert read_status(path) == replace(STATUS, step=13)
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_a_status_from_another_job_needs_only_the_contract_fields(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    contract = {k: v for k, v in json.loads(STATUS.to_json()).items() if k in CONTRACT_FIELDS}
    path.write_text(json.dumps(contract))
    status = read_status(path)
    assert (status.model, status.state, status.loss) == ("", "running", None)
    assert status.global_batch_size == 32


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"step": None}, "field 'step' must be an integer"),
        ({"step": 1.5}, "field 'step' must be an integer"),
        ({"num_gpus": True}, "field 'num_gpus' must be an integer"),
        ({"progress": 1.5}, "field 'progress' must be in [0, 1]"),
        ({"samples_per_s": "fast"}, "field 'samples_per_s' must be a number"),
        ({"state": "sleeping"}, "field 'state' must be one of"),
    ],
)
def test_a_bad_status_field_is_named(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    path = tmp_path / "status.json"
    path.write_text(json.dumps({**json.loads(STATUS.to_json()), **change}))
    with pytest.raises(StatusError) as e:
        read_status(path)
    assert str(path) in str(e.value) and message in str(e.value)


def test_a_missing_field_or_non_json_status_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    raw = json.loads(STATUS.to_json())
    del raw["checkpoint_step"]
    path.write_text(json.dumps(raw))
    with pytest.raises(StatusError, match="field 'checkpoint_step' is missing"):
        read_status(path)
    path.write_text("{not json")
    with pytest.raises(StatusError, match="cannot read a JSON status"):
        read_status(path)


def test_gpu_log_intervals_including_a_run_killed_without_a_stop(tmp_path: Path) -> None:
    path = tmp_path / "gpu_log.txt"
    log_start(path, "n1", "0,1", now=10.0)
    log_stop(path, now=20.0)
    log_start(path, "n2", "3", now=30.0)
    log_start(path, "n2", "", now=40.0)
    log_stop(path, now=41.0)
    runs = read_gpu_log(path)
    assert [(r.node, r.gpus, r.start, r.stop) for r in runs] == [
        ("n1", ("0", "1"), 10.0, 20.0),
        ("n2", ("3",), 30.0, None),
        ("n2", (), 40.0, 41.0),
    ]
    assert path.read_text().splitlines()[0] == "10.000000 start node=n1 gpus=0,1"


def test_a_malformed_gpu_log_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "gpu_log.txt"
    path.write_text("1.0 start node=a gpus=0\n2.0 stopped\n")
    with pytest.raises(GpuLogError, match=r"gpu_log.txt:2: expected"):
        read_gpu_log(path)
    path.write_text("2.0 stop\n")
    with pytest.raises(GpuLogError, match=r"gpu_log.txt:1: 'stop' with no run started"):
        read_gpu_log(path)


def test_job_env_reads_the_contract_variables(tmp_path: Path) -> None:
    env = JobEnv.from_environ(
        {
            "DLSCHED_JOB_ID": "j9",
            "DLSCHED_WORKDIR": str(tmp_path / "w"),
            "DLSCHED_CHECKPOINT_DIR": str(tmp_path / "c"),
            "DLSCHED_STATUS_FILE": str(tmp_path / "s" / "status.json"),
            "DLSCHED_NUM_GPUS": "4",
            "DLSCHED_BATCH_SIZE": "64",
            "DLSCHED_NODE": "node-001",
            "CUDA_VISIBLE_DEVICES": "4,5,6,7",
        }
    )
    assert (env.job_id, env.num_gpus, env.batch_size, env.node) == ("j9", 4, 64, "node-001")
    assert (env.workdir, env.checkpoint_dir) == (tmp_path / "w", tmp_path / "c")
    assert env.gpu_log == tmp_path / "w" / "gpu_log.txt"
    env.create_dirs()
    assert (tmp_path / "c").is_dir() and (tmp_path / "s").is_dir()


def test_job_env_defaults_without_any_variable(tmp_path: Path) -> None:
    env = JobEnv.from_environ({"TMPDIR": str(tmp_path)}, workdir=tmp_path / "w")
    assert env.job_id == f"local-{os.getpid()}"
    assert env.checkpoint_dir == tmp_path / "w" / "checkpoint"
    assert env.status_file == tmp_path / "w" / "status.json"
    assert (env.num_gpus, env.batch_size, env.visible_devices) == (None, None, "")
    assert JobEnv.from_environ({"CUDA_VISIBLE_DEVICES": "2,3"}, tmp_path).num_gpus == 2


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "two"])
def test_a_bad_number_in_the_environment_is_named(tmp_path: Path, value: str) -> None:
    with pytest.raises(JobEnvError, match=f"DLSCHED_BATCH_SIZE='{value}'"):
        JobEnv.from_environ({"DLSCHED_BATCH_SIZE": value}, workdir=tmp_path)


def test_throughput_leaves_out_the_warm_up_steps() -> None:
    now = [0.0]
    meter = ThroughputMeter(warmup_steps=2, clock=lambda: now[0])
    for t in (5.0, 6.0):  # slow warm-up steps
        now[0] = t
        meter.step_done(32)
        assert meter.samples_per_s == 0.0
    for t in (6.5, 7.0, 7.5):
        now[0] = t
        meter.step_done(32)
    now[0] = 100.0  # idle time after the last step does not count
    assert meter.samples_per_s == pytest.approx(3 * 32 / 1.5)


def test_train_config_sizes_the_job_and_scales_the_learning_rate() -> None:
    c = TrainConfig(epochs=2, batch_size=16, num_gpus=4, steps_per_epoch=10)
    assert c.global_batch == 64
    assert c.job_size() == (640, 1280)
    assert TrainConfig(epochs=1.5, epoch_samples=1000).job_size() == (1000, 1500)
    assert TrainConfig(num_gpus=2).learning_rate == pytest.approx(0.1)
    assert TrainConfig(num_gpus=64).learning_rate == TrainConfig().max_lr
    with pytest.raises(ValueError, match="batch_size must be > 0"):
        TrainConfig(batch_size=0)
    with pytest.raises(ValueError, match="checkpoint_every must be >= 0"):
        TrainConfig(checkpoint_every=-1)
