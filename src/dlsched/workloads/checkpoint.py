"""Training checkpoints: everything a resumed job needs to continue as if never stopped.

A checkpoint holds the model and optimizer state, the step and sample counters, the job's fixed
size (samples per epoch, total samples), the model name and seed (a checkpoint of another model
or seed is refused), and torch's global RNG state. It is one file, ``checkpoint.pt`` in the
checkpoint directory, replaced atomically, so a kill at any moment leaves the previous complete
checkpoint. Needs PyTorch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from dlsched.outdir import write_file_atomic

CHECKPOINT_FILE = "checkpoint.pt"
_FORMAT = 1


class CheckpointError(ValueError):
    """A checkpoint cannot be used for this job; the message names the file and the reason."""


@dataclass(frozen=True)
class Progress:
    """Counters saved with a checkpoint. ``samples`` counts training samples processed."""

    step: int
    samples: int
    epoch_samples: int
    total_samples: int


def save_checkpoint(
    directory: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    progress: Progress,
    model_name: str,
    seed: int,
) -> Path:
    """Write the checkpoint atomically into ``directory`` (created if missing); returns its
    path."""
    directory.mkdir(parents=True, exist_ok=True)
    state = {
        "format": _FORMAT,
        "model_name": model_name,
        "seed": seed,
        "step": progress.step,
        "samples": progress.samples,
        "epoch_samples": progress.epoch_samples,
        "total_samples": progress.total_samples,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "torch_rng": torch.get_rng_state(),
    }
    path = directory / CHECKPOINT_FILE

    def write(tmp: Path) -> None:
        torch.save(state, tmp)

    return write_file_atomic(path, b"", write)


def load_checkpoint(
    directory: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    model_name: str,
    seed: int,
) -> Progress | None:
    """Restore ``model``, ``optimizer`` and torch's RNG from the checkpoint in ``directory``
    and return its counters; None (nothing changed) when there is no checkpoint. Raises
    :class:`CheckpointError` if the file is unreadable or belongs to another model or seed."""
    path = directory / CHECKPOINT_FILE
    if not path.exists():
        return None
    try:
        state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise CheckpointError(f"{path}: cannot read the checkpoint: {e}") from None
    if not isinstance(state, dict) or state.get("format") != _FORMAT:
        raise CheckpointError(f"{path}: not a dlsched training checkpoint (format {_FORMAT})")
    for key, want in (("model_name", model_name), ("seed", seed)):
        if state.get(key) != want:
            raise CheckpointError(
                f"{path}: {key} is {state.get(key)!r} but this job has {want!r}; "
                "refusing to resume another job's checkpoint"
            )
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    return Progress(
        step=int(state["step"]),
        samples=int(state["samples"]),
        epoch_samples=int(state["epoch_samples"]),
        total_samples=int(state["total_samples"]),
    )
