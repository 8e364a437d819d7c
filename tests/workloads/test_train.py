"""The training script as the service runs it: real subprocesses, real PyTorch training."""

from __future__ import annotations

import importlib.util
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dlsched.workloads.gpu_log import read_gpu_log
from dlsched.workloads.status import TrainStatus, read_status
from tests.workloads.helpers import job_env, run, start, wait_for_status

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="needs the train extra (torch)"
)

CONTRACT_TYPES = {
    "step": int,
    "epoch": float,
    "samples": int,
    "progress": float,
    "samples_per_s": float,
    "checkpoint_step": int,
    "num_gpus": int,
    "batch_size": int,
    "time": float,
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """One job of 40 steps (2 GPUs × batch 8) run to completion by hand: no DLSCHED_*
    variables, so it works in a new directory under TMPDIR."""
    tmp = tmp_path_factory.mktemp("job")
    env = {k: v for k, v in job_env(tmp).items() if not k.startswith("DLSCHED_")}
    env.pop("CUDA_VISIBLE_DEVICES")
    env["TMPDIR"] = str(tmp)
    args = ["--model", "resnet-small", "--epochs", "1", "--steps-per-epoch", "40", "--gpus", "2"]
    args += ["--batch-size", "8", "--checkpoint-every", "15", "--seed", "7"]
    done = run(args, env, tmp / "cwd")
    assert done.returncode == 0, done.stderr
    (workdir,) = tmp.glob("dlsched-local-*")
    return workdir, env


def _held_out_loss(state: dict[str, Any] | None, seed: int) -> tuple[float, float]:
    import torch

    from dlsched.workloads.data import SyntheticImages
    from dlsched.workloads.models import build_model

    torch.manual_seed(seed)
    model = build_model("resnet-small")
    if state is not None:
        model.load_state_dict(state)
    # Batch statistics, not BatchNorm's running averages: after 40 steps those still lag
    # behind the fast-moving weights and would measure the averages, not what was learned.
    model.train()
    images, labels = SyntheticImages(seed).batch(10**9, 256)
    with torch.no_grad():
        logits = model(images)
    loss = float(torch.nn.functional.cross_entropy(logits, labels))
    accuracy = float((logits.argmax(1) == labels).float().mean())
    return loss, accuracy


@pytest.mark.slow
@needs_torch
def test_training_lowers_the_held_out_loss(finished: tuple[Path, dict[str, str]]) -> None:
    import torch

    workdir, _ = finished
    ckpt = torch.load(workdir / "checkpoint" / "checkpoint.pt", weights_only=True)
    assert ckpt["step"] == 40 and ckpt["samples"] == 40 * 16
    before, _ = _held_out_loss(None, seed=7)
    after, accuracy = _held_out_loss(ckpt["model"], seed=7)
    assert before > 2.0  # about ln 10 for an untrained 10-class model
    assert after < 0.6 * before
    assert accuracy > 0.5  # chance is 0.1


@pytest.mark.slow
@needs_torch
def test_status_file_follows_the_contract(finished: tuple[Path, dict[str, str]]) -> None:
    workdir, _ = finished
    raw = json.loads((workdir / "status.json").read_text())
    for name, kind in CONTRACT_TYPES.items():
        assert type(raw[name]) is kind, name
    status = read_status(workdir / "status.json")
    assert status.state == "finished"
    assert (status.step, status.samples, status.progress, status.epoch) == (40, 640, 1.0, 1.0)
    assert (status.num_gpus, status.batch_size, status.global_batch_size) == (2, 8, 16)
    assert status.checkpoint_step == 40
    assert status.samples_per_s > 0
    assert status.job_id.startswith("local-") and status.model == "resnet-small"
    assert not list(workdir.glob(".*.tmp")), "temporary files left behind"


@pytest.mark.slow
@needs_torch
def test_gpu_log_records_the_run(finished: tuple[Path, dict[str, str]]) -> None:
    workdir, _ = finished
    lines = (workdir / "gpu_log.txt").read_text().splitlines()
    assert len(lines) == 2
    assert lines[0].split(" ", 1)[1] == f"start node={socket.gethostname()} gpus="
    assert lines[1].split(" ", 1)[1] == "stop"
    (interval,) = read_gpu_log(workdir / "gpu_log.txt")
    assert interval.gpus == ()
    assert interval.stop is not None and interval.stop >= interval.start


@pytest.mark.slow
@needs_torch
def test_a_finished_job_restarted_does_no_more_work(
    finished: tuple[Path, dict[str, str]],
) -> None:
    from dlsched.workloads.config import TrainConfig
    from dlsched.workloads.jobenv import JobEnv
    from dlsched.workloads.loop import train

    workdir, env = finished
    config = TrainConfig(epochs=1, steps_per_epoch=40, batch_size=8, num_gpus=2, seed=7)
    before = (workdir / "checkpoint" / "checkpoint.pt").stat().st_mtime_ns
    assert train(config, JobEnv.from_environ(env, workdir), lambda: False) == 0
    assert read_status(workdir / "status.json").step == 40
    assert (workdir / "checkpoint" / "checkpoint.pt").stat().st_mtime_ns == before


@pytest.mark.slow
@needs_torch
def test_a_checkpoint_of_another_model_or_seed_is_refused(
    finished: tuple[Path, dict[str, str]],
) -> None:
    import torch

    from dlsched.workloads.checkpoint import CheckpointError, load_checkpoint
    from dlsched.workloads.models import build_model

    workdir, _ = finished
    for name, seed, field in (("resnet-small", 8, "seed"), ("resnet-tiny", 7, "model_name")):
        model = build_model(name)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        with pytest.raises(CheckpointError, match=f"checkpoint.pt: {field} is"):
            load_checkpoint(workdir / "checkpoint", model, optimizer, name, seed)


@pytest.mark.slow
@needs_torch
def test_kill_sigterm_and_restarts_never_lose_more_than_a_checkpoint_interval(
    tmp_path: Path,
) -> None:
    every, batch, total = 5, 8, 60 * 8
    args = ["--epochs", "2", "--steps-per-epoch", "30", "--batch-size", str(batch)]
    args += ["--checkpoint-every", str(every)]
    status_file = tmp_path / "status.json"
    interval = every * batch / total  # progress made between two checkpoints on 1 GPU

    # Run 1, killed without warning: the restart loses at most one checkpoint interval.
    env = job_env(tmp_path, DLSCHED_NUM_GPUS="1", CUDA_VISIBLE_DEVICES="1")
    proc = start(args, env, tmp_path)
    seen = wait_for_status(status_file, lambda s: s["step"] >= every + 2, proc)
    proc.kill()
    proc.communicate(timeout=120)
    reached = max(s["progress"] for s in [*seen, json.loads(status_file.read_text())])

    # Run 2 resumes from the periodic checkpoint, then is preempted with SIGTERM.
    began = time.time()
    proc = start(args, env, tmp_path)
    seen = wait_for_status(
        status_file, lambda s: s["time"] >= began and s["step"] >= 3 * every + 2, proc
    )
    resumed = next(s for s in seen if s["time"] >= began)  # run 2's first report
    assert resumed["state"] == "running"
    assert resumed["step"] % every == 0 and resumed["step"] >= every
    assert resumed["checkpoint_step"] == resumed["step"]
    # A kill between a checkpoint and the next report may leave the checkpoint ahead of what
    # was reported, by less than one interval; never behind by more than one.
    assert reached - interval <= resumed["progress"] < reached + interval
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 75, err
    stopped = read_status(status_file)
    assert stopped.state == "preempted"
    # Where and what the environment said: DLSCHED_JOB_ID, _NUM_GPUS, _CHECKPOINT_DIR.
    assert (stopped.job_id, stopped.num_gpus, stopped.global_batch_size) == ("job-1", 1, batch)
    assert (tmp_path / "ckpt" / "checkpoint.pt").exists()
    assert stopped.checkpoint_step == stopped.step  # checkpointed on SIGTERM
    assert stopped.progress >= max(s["progress"] for s in seen)

    # Run 3 resumes exactly there on 2 GPUs: the global batch doubles, the job keeps its size.
    # It runs in this process (the loop itself, without main's GPU log) to spare a third
    # PyTorch start-up.
    from dlsched.workloads.config import TrainConfig
    from dlsched.workloads.jobenv import JobEnv
    from dlsched.workloads.loop import train

    first: list[TrainStatus] = []

    def should_stop() -> bool:
        if not first:
            first.append(read_status(status_file))
        return False

    config = TrainConfig(
        epochs=2, steps_per_epoch=30, batch_size=batch, num_gpus=2, checkpoint_every=every
    )
    env = job_env(tmp_path, DLSCHED_NUM_GPUS="2", CUDA_VISIBLE_DEVICES="0,1")
    assert train(config, JobEnv.from_environ(env), should_stop) == 0
    (again,) = first
    assert (again.state, again.step) == ("running", stopped.step)
    assert again.progress == stopped.progress
    assert again.global_batch_size == 2 * batch
    assert again.total_samples == stopped.total_samples == total
    final = read_status(status_file)
    assert final.state == "finished" and final.samples == total
    assert final.step == stopped.step + -(-(total - stopped.samples) // (2 * batch))

    runs = read_gpu_log(tmp_path / "gpu_log.txt")
    assert [(r.node, r.gpus) for r in runs] == [("node-3", ("1",))] * 2
    assert [r.stop is not None for r in runs] == [False, True]  # run 1 was killed


def test_a_bad_environment_is_a_usage_error(tmp_path: Path) -> None:
    env = job_env(tmp_path, DLSCHED_NUM_GPUS="two")
    done = run(["--epochs", "1"], env, tmp_path)
    assert done.returncode == 2
    assert "DLSCHED_NUM_GPUS='two'" in done.stderr
    assert not (tmp_path / "gpu_log.txt").exists()


def test_without_torch_the_package_imports_and_the_script_says_why(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import dlsched.workloads, dlsched.workloads.measure\n"
        "from dlsched.workloads.train import main\n"
        "sys.exit(main(['--epochs', '1']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=job_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert "needs PyTorch (the 'train' extra): pip install 'dlsched[train]'" in done.stderr
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in done.stderr
    assert [r.stop is not None for r in read_gpu_log(tmp_path / "gpu_log.txt")] == [True]
