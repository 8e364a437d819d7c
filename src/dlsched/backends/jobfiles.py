"""The files a back end keeps per job on storage the driver reads: one working directory per
job (the same for every attempt; the job's status and checkpoint live there) and one exit-code
file per request, written by the job's wrapper so the code survives a driver restart."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dlsched.backends.base import (
    AttemptCheck,
    AttemptFate,
    Backend,
    PriorAttempt,
    deadline_passed,
)
from dlsched.safe_load import load_json, read_text

LOG_NAME = "log.txt"
STATUS_NAME = "status.json"
STATUS_MAX_BYTES = 2**20
"""Largest status file a job may write that the back end reads."""
CHECKPOINT_NAME = "checkpoint"
INSTANCE_VAR = "DLSCHED_INSTANCE"
REQUEST_VAR = "DLSCHED_REQUEST_ID"


class JobFilesError(ValueError):
    """The jobs' directory cannot be made; the message names it (one line)."""


def private_dir(path: Path) -> None:
    """Make directory ``path`` and its missing parents, each readable by its owner only
    (``Path.mkdir`` would give the parents the default mode)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)


def write_private(path: Path, text: str) -> None:
    """Replace file ``path`` by one holding ``text``, atomically, readable by its owner only
    (mode 0600 whatever the umask; the directory must exist)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except BaseException:
        os.unlink(tmp)
        raise
    os.replace(tmp, path)


def open_log(path: Path) -> int:
    """A file descriptor appending to a job's log ``path`` (created with mode 0600: job
    output may hold secrets)."""
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


class FileBackedBackend(Backend):
    """A back end whose jobs keep their files under ``root`` (``jobs/<job id>`` and
    ``exits/<request id>``, directories of mode 0700); subclasses call :meth:`_make_dirs`
    once."""

    root: Path

    def _make_dirs(self) -> None:
        try:
            private_dir(self.root / "jobs")
            private_dir(self.root / "exits")
        except OSError as exc:
            raise JobFilesError(
                f"{self.root}: cannot create the jobs' directories: {exc.strerror}"
            ) from None

    def workdir(self, job_id: str) -> Path:
        """The job's working directory (the same for every attempt)."""
        return self.root / "jobs" / job_id

    def exit_file(self, request_id: str) -> Path:
        return self.root / "exits" / request_id

    @property
    def location(self) -> str | None:
        return str(self.root)

    def _read_exit(self, request_id: str) -> tuple[bool, int | None]:
        """Whether the request's exit file exists, and the code in it (None if unreadable)."""
        return _read_exit_file(self.exit_file(request_id))

    @staticmethod
    def _read_prior_exit(attempt: PriorAttempt) -> tuple[bool, int | None]:
        """:meth:`_read_exit` for an attempt of another driver of the same kind, in its
        ``owner_home`` ((False, None) when that is unknown)."""
        if attempt.owner_home is None:
            return False, None
        return _read_exit_file(Path(attempt.owner_home) / "exits" / attempt.request.request_id)

    def _fate_of_stopped(self, attempt: PriorAttempt, now: float) -> AttemptCheck:
        """What became of ``attempt`` once its back end runs nothing of it: EXITED with its
        exit file's code, GONE once its launch deadline has passed, else UNKNOWN."""
        found, code = self._read_prior_exit(attempt)
        if found:
            return AttemptCheck(AttemptFate.EXITED, code)
        if deadline_passed(attempt, now):
            return AttemptCheck(AttemptFate.GONE)
        return AttemptCheck(AttemptFate.UNKNOWN)

    def _status(self, job_id: str) -> dict[str, Any] | None:
        """The job's last status report, or None when absent or not a JSON object."""
        try:
            path = self.workdir(job_id) / STATUS_NAME
            # A job writes this file: read it bounded (size, nesting, numbers).
            data = load_json(read_text(path, STATUS_MAX_BYTES), str(path), non_finite=True)
        except (FileNotFoundError, ValueError, OSError):
            return None
        return data if isinstance(data, dict) else None


def _read_exit_file(path: Path) -> tuple[bool, int | None]:
    """Whether exit file ``path`` exists, and the code in it (None if unreadable)."""
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return False, None
    try:
        return True, int(text)
    except ValueError:
        return True, None
