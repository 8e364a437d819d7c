"""``python -m dlsched.workloads.train``: a small ResNet trained on generated 32×32 images,
following the live service's job contract.

- Reads ``DLSCHED_*`` (see :mod:`dlsched.workloads.jobenv`); without them it works in a new
  directory under the temp directory (or ``--workdir``).
- The per-GPU batch is ``DLSCHED_BATCH_SIZE`` if set (the scheduler's choice), else
  ``--batch-size``; the GPU count is ``DLSCHED_NUM_GPUS`` (else the number of
  ``CUDA_VISIBLE_DEVICES`` entries, else ``--gpus``). Global batch = per-GPU batch × GPUs.
- Writes its status file atomically (:mod:`dlsched.workloads.status`), appends start and stop
  lines to ``gpu_log.txt`` in its working directory.
- Checkpoints every ``--checkpoint-every`` steps and on SIGTERM; resumes from the checkpoint
  directory when a checkpoint is there.

Exit codes: 0 finished; 75 stopped by SIGTERM after checkpointing (resumable); 2 bad arguments,
environment or checkpoint; 3 PyTorch missing; anything else a failure.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from dlsched.extras import MissingExtra, require
from dlsched.workloads.config import TrainConfig
from dlsched.workloads.gpu_log import log_start, log_stop
from dlsched.workloads.jobenv import JobEnv, JobEnvError

EXIT_USAGE = 2
EXIT_NO_TORCH = 3


class _StopRequest:
    """Set by SIGTERM; the training loop polls it after every step."""

    def __init__(self) -> None:
        self.requested = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True

    def __call__(self) -> bool:
        return self.requested


def _parser() -> argparse.ArgumentParser:
    d = TrainConfig()
    p = argparse.ArgumentParser(
        prog="python -m dlsched.workloads.train",
        description="Train a small ResNet on generated 32x32 images under the dlsched job "
        "contract (status file, checkpoints, exit 75 on SIGTERM).",
    )
    p.add_argument("--model", default=d.model, help=f"model name (default {d.model})")
    p.add_argument(
        "--epochs", type=float, default=d.epochs, help="epochs to train (default %(default)s)"
    )
    p.add_argument(
        "--batch-size", type=int, default=d.batch_size, help="per-GPU batch (default %(default)s)"
    )
    p.add_argument(
        "--gpus", type=int, default=None, help="GPU count when the environment gives none"
    )
    p.add_argument("--steps-per-epoch", type=int, default=None, help="global batches per epoch")
    p.add_argument(
        "--epoch-samples",
        type=int,
        default=d.epoch_samples,
        help="samples per epoch when --steps-per-epoch is not given (default %(default)s)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=d.checkpoint_every,
        help="steps between checkpoints, 0 for none (default %(default)s)",
    )
    p.add_argument("--seed", type=int, default=d.seed, help="data and initialization seed")
    p.add_argument("--threads", type=int, default=d.threads, help="torch threads (default 1)")
    p.add_argument("--lr", type=float, default=d.lr, help="learning rate per GPU")
    p.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="working directory (instead of DLSCHED_WORKDIR; default: a new temp directory)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one training job; returns the exit code (see the module docstring)."""
    stop = _StopRequest()
    # Installed before anything slow (importing torch) so an early SIGTERM is not lost.
    signal.signal(signal.SIGTERM, stop.handle)
    args = _parser().parse_args(argv)
    try:
        env = JobEnv.from_environ(workdir=args.workdir)
        config = TrainConfig(
            model=args.model,
            epochs=args.epochs,
            batch_size=env.batch_size or args.batch_size,
            num_gpus=env.num_gpus or args.gpus or 1,
            steps_per_epoch=args.steps_per_epoch,
            epoch_samples=args.epoch_samples,
            checkpoint_every=args.checkpoint_every,
            seed=args.seed,
            threads=args.threads,
            lr=args.lr,
        )
    except (JobEnvError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    env.create_dirs()
    log_start(env.gpu_log, env.node, env.visible_devices)
    try:
        return _run(config, env, stop)
    finally:
        log_stop(env.gpu_log)


def _run(config: TrainConfig, env: JobEnv, stop: _StopRequest) -> int:
    try:
        require("python -m dlsched.workloads.train", "train")
        from dlsched.workloads.loop import train
    except MissingExtra as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_NO_TORCH
    from dlsched.workloads.checkpoint import CheckpointError
    from dlsched.workloads.models import UnknownModelError

    print(
        f"job {env.job_id}: {config.model}, {config.num_gpus} GPU(s) x batch {config.batch_size}"
        f" on {env.node} (CUDA_VISIBLE_DEVICES={env.visible_devices or '-'}); "
        f"workdir {env.workdir}",
        flush=True,
    )
    try:
        code = train(config, env, stop)
    except (CheckpointError, UnknownModelError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"job {env.job_id}: {'finished' if code == 0 else 'stopped after checkpoint'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
