"""The training loop under the job contract: resume, train, report, checkpoint. Needs PyTorch.

:func:`train` runs until the job's samples are done (returns 0) or ``should_stop()`` turns true
(the SIGTERM handler of :mod:`dlsched.workloads.train`): then it checkpoints and returns 75. It
checks ``should_stop`` after every step, so the time to stop is one step plus one checkpoint.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch
from torch import nn

from dlsched.workloads.checkpoint import Progress, load_checkpoint, save_checkpoint
from dlsched.workloads.config import TrainConfig
from dlsched.workloads.data import SyntheticImages
from dlsched.workloads.jobenv import JobEnv
from dlsched.workloads.models import build_model
from dlsched.workloads.status import TrainStatus, write_status
from dlsched.workloads.throughput import ThroughputMeter

EXIT_FINISHED = 0
EXIT_PREEMPTED = 75


class _Reporter:
    """Writes the status file; remembers what does not change between writes."""

    def __init__(self, env: JobEnv, config: TrainConfig, progress: Progress) -> None:
        self.env = env
        self.config = config
        self.progress = progress
        self.checkpoint_step = progress.step if progress.samples else 0
        self.meter = ThroughputMeter(config.warmup_steps)
        self.losses: list[float] = []
        self.last_loss: float | None = None
        self.last_write = -math.inf

    def write(self, state: str) -> None:
        if self.losses:
            self.last_loss = sum(self.losses) / len(self.losses)
            self.losses.clear()
        p = self.progress
        write_status(
            self.env.status_file,
            TrainStatus(
                step=p.step,
                epoch=p.samples / p.epoch_samples,
                samples=p.samples,
                progress=min(1.0, p.samples / p.total_samples),
                samples_per_s=self.meter.samples_per_s,
                checkpoint_step=self.checkpoint_step,
                num_gpus=self.config.num_gpus,
                batch_size=self.config.batch_size,
                time=time.time(),
                job_id=self.env.job_id,
                model=self.config.model,
                global_batch_size=self.config.global_batch,
                total_samples=p.total_samples,
                loss=self.last_loss,
                state=state,
            ),
        )
        self.last_write = time.monotonic()


def train(config: TrainConfig, env: JobEnv, should_stop: Callable[[], bool]) -> int:
    """Train the job described by ``config`` in ``env``; returns the exit code (0 finished,
    75 stopped after a checkpoint). Raises
    :class:`~dlsched.workloads.models.UnknownModelError` for an unknown model and
    :class:`~dlsched.workloads.checkpoint.CheckpointError` for an unusable checkpoint."""
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    model = build_model(config.model)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=config.learning_rate, momentum=0.9, weight_decay=5e-4
    )
    restored = load_checkpoint(env.checkpoint_dir, model, optimizer, config.model, config.seed)
    if restored is None:
        epoch_samples, total = config.job_size()
        restored = Progress(step=0, samples=0, epoch_samples=epoch_samples, total_samples=total)
    else:
        print(
            f"resumed from checkpoint at step {restored.step} "
            f"({restored.samples}/{restored.total_samples} samples)",
            flush=True,
        )
    for group in optimizer.param_groups:
        # The GPU count may differ from the checkpoint's run (elastic resize).
        group["lr"] = config.learning_rate
    data = SyntheticImages(config.seed)
    loss_fn = nn.CrossEntropyLoss()
    report = _Reporter(env, config, restored)
    report.write("running")
    model.train()

    def checkpoint() -> None:
        save_checkpoint(
            env.checkpoint_dir, model, optimizer, report.progress, config.model, config.seed
        )
        report.checkpoint_step = report.progress.step

    while report.progress.samples < report.progress.total_samples and not should_stop():
        p = report.progress
        size = min(config.global_batch, p.total_samples - p.samples)
        images, labels = data.batch(p.samples, size)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()
        report.progress = Progress(p.step + 1, p.samples + size, p.epoch_samples, p.total_samples)
        report.losses.append(float(loss.item()))
        report.meter.step_done(size)
        if config.checkpoint_every and report.progress.step % config.checkpoint_every == 0:
            checkpoint()
            report.write("running")
        elif time.monotonic() - report.last_write >= config.status_every_s:
            report.write("running")
    if report.checkpoint_step != report.progress.step or report.progress.samples == 0:
        checkpoint()
    if report.progress.samples < report.progress.total_samples:
        report.write("preempted")
        return EXIT_PREEMPTED
    report.write("finished")
    return EXIT_FINISHED
