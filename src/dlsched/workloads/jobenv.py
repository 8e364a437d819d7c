"""The environment the live service gives a job process, read once at start.

The local back end sets ``DLSCHED_JOB_ID``, ``DLSCHED_WORKDIR`` (also the working directory),
``DLSCHED_CHECKPOINT_DIR``, ``DLSCHED_STATUS_FILE``, ``DLSCHED_NUM_GPUS``, ``DLSCHED_BATCH_SIZE``
(may be absent), ``DLSCHED_NODE`` and ``CUDA_VISIBLE_DEVICES``. A job started by hand has none
of them: :meth:`JobEnv.from_environ` then falls back to a fresh directory under the system temp
directory, so the same script runs inside and outside the service.
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


class JobEnvError(ValueError):
    """A ``DLSCHED_*`` variable holds a value the job cannot use; the message names it."""


@dataclass(frozen=True)
class JobEnv:
    """Where a job works and what it was given. ``batch_size`` is the per-GPU batch the service
    asked for (None: the job's own choice); ``visible_devices`` is ``CUDA_VISIBLE_DEVICES`` as
    given ("" when unset)."""

    job_id: str
    workdir: Path
    checkpoint_dir: Path
    status_file: Path
    num_gpus: int | None
    batch_size: int | None
    node: str
    visible_devices: str

    @property
    def gpu_log(self) -> Path:
        """The job's ``gpu_log.txt`` (in its working directory)."""
        return self.workdir / "gpu_log.txt"

    @classmethod
    def from_environ(
        cls, environ: Mapping[str, str] | None = None, workdir: Path | None = None
    ) -> JobEnv:
        """Read the contract variables from ``environ`` (default ``os.environ``).

        ``workdir`` (e.g. a ``--workdir`` option) replaces ``DLSCHED_WORKDIR``; with neither, a
        new directory under the temp directory is created. The checkpoint directory and status
        file default to ``checkpoint/`` and ``status.json`` inside the working directory. The
        GPU count defaults to the number of ``CUDA_VISIBLE_DEVICES`` entries, else None.
        Raises :class:`JobEnvError` naming the variable if a number is not a positive integer.
        """
        env = os.environ if environ is None else environ
        job_id = env.get("DLSCHED_JOB_ID", "") or f"local-{os.getpid()}"
        if workdir is None:
            given = env.get("DLSCHED_WORKDIR", "")
            workdir = Path(given) if given else Path(tempfile.mkdtemp(prefix=f"dlsched-{job_id}-"))
        checkpoint = env.get("DLSCHED_CHECKPOINT_DIR", "")
        status = env.get("DLSCHED_STATUS_FILE", "")
        visible = env.get("CUDA_VISIBLE_DEVICES", "").strip()
        num_gpus = _positive_int(env, "DLSCHED_NUM_GPUS")
        if num_gpus is None and visible:
            num_gpus = len([d for d in visible.split(",") if d.strip()])
        return cls(
            job_id=job_id,
            workdir=workdir,
            checkpoint_dir=Path(checkpoint) if checkpoint else workdir / "checkpoint",
            status_file=Path(status) if status else workdir / "status.json",
            num_gpus=num_gpus,
            batch_size=_positive_int(env, "DLSCHED_BATCH_SIZE"),
            node=env.get("DLSCHED_NODE", "") or socket.gethostname(),
            visible_devices=visible,
        )

    def create_dirs(self) -> None:
        """Create the working and checkpoint directories and the status file's directory."""
        for d in (self.workdir, self.checkpoint_dir, self.status_file.parent):
            d.mkdir(parents=True, exist_ok=True)


def _positive_int(env: Mapping[str, str], name: str) -> int | None:
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise JobEnvError(f"{name}={text!r}: expected a positive integer") from None
    if value < 1:
        raise JobEnvError(f"{name}={text!r}: expected a positive integer")
    return value
