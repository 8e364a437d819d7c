"""What one training job is asked to do (no PyTorch needed to build or check it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainConfig:
    """One training job.

    The global batch is ``batch_size`` (per GPU) × ``num_gpus``, as in data-parallel elastic
    training; on CPU the GPU count changes only the batch. The job's size is fixed at its first
    start: ``epochs`` × samples per epoch, where an epoch is ``steps_per_epoch`` global batches
    when given, else ``epoch_samples`` samples (a resumed job keeps the size its checkpoint
    recorded, even at another GPU count). The learning rate follows the linear scaling rule
    (Goyal et al., "Accurate, Large Minibatch SGD", arXiv 1706.02677): ``lr`` × GPUs, at most
    ``max_lr``. ``checkpoint_every`` steps (0: only on SIGTERM and at the end);
    ``status_every_s`` bounds how often the status file is rewritten between checkpoints;
    ``threads`` fixes torch's intra-op threads; ``warmup_steps`` are left out of throughput.
    """

    model: str = "resnet-small"
    epochs: float = 3.0
    batch_size: int = 32
    num_gpus: int = 1
    steps_per_epoch: int | None = None
    epoch_samples: int = 1024
    checkpoint_every: int = 20
    seed: int = 0
    threads: int = 1
    lr: float = 0.05
    max_lr: float = 0.4
    status_every_s: float = 0.5
    warmup_steps: int = 3

    def __post_init__(self) -> None:
        positive = {
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "num_gpus": self.num_gpus,
            "epoch_samples": self.epoch_samples,
            "threads": self.threads,
            "lr": self.lr,
            "max_lr": self.max_lr,
        }
        if self.steps_per_epoch is not None:
            positive["steps_per_epoch"] = self.steps_per_epoch
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        for name, value in (
            ("checkpoint_every", self.checkpoint_every),
            ("warmup_steps", self.warmup_steps),
            ("status_every_s", self.status_every_s),
            ("seed", self.seed),
        ):
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")

    @property
    def global_batch(self) -> int:
        """Samples per optimizer step: per-GPU batch × GPUs."""
        return self.batch_size * self.num_gpus

    @property
    def learning_rate(self) -> float:
        """``lr`` × GPUs, capped at ``max_lr``."""
        return min(self.lr * self.num_gpus, self.max_lr)

    def job_size(self) -> tuple[int, int]:
        """``(samples per epoch, total samples)`` of a job started from scratch."""
        per_epoch = (
            self.steps_per_epoch * self.global_batch
            if self.steps_per_epoch is not None
            else self.epoch_samples
        )
        return per_epoch, max(1, round(self.epochs * per_epoch))
